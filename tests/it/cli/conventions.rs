//! What operators expect of a command-line tool, through the real binary:
//! `--help` says what LEDGER may be, `settle man` prints a man page, and
//! named ledgers in config.toml stand for their addresses.

use crate::kit::*;

/// `--help` names both kinds of ledger, for the console and for every
/// command that takes one, and none still says "SQLite file" alone.
#[test]
fn help_names_both_kinds_of_ledger() {
    let top = stdout(&settle(&["--help"]));
    assert!(
        top.contains("a SQLite file or a PostgreSQL address"),
        "{top}"
    );
    for form in ["postgres://", "postgresql://", "key=value"] {
        assert!(top.contains(form), "{form} missing from:\n{top}");
    }
    for command in [
        "list", "show", "decide", "probe", "audit", "adopt", "worker",
    ] {
        let help = stdout(&settle(&[command, "--help"]));
        assert!(help.contains("PostgreSQL address"), "{command}:\n{help}");
        assert!(!help.contains("(SQLite file)"), "{command}:\n{help}");
    }
}

/// `settle man` prints a roff page with the sections an operator looks
/// for, and `man -l -` renders it (where man is installed).
#[test]
fn man_prints_a_page_man_renders() {
    let out = settle(&["man"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let page = stdout(&out);
    for section in [
        ".TH settle 1",
        ".SH SYNOPSIS",
        ".SH OPTIONS",
        ".SH \"EXIT STATUS\"",
        ".SH ENVIRONMENT",
        ".SH FILES",
        ".SH EXAMPLES",
    ] {
        assert!(page.contains(section), "{section} missing:\n{page}");
    }
    for variable in [
        "SETTLE_OPERATOR",
        "PGPASSWORD",
        "NO_COLOR",
        "XDG_CONFIG_HOME",
    ] {
        assert!(page.contains(variable), "{variable} missing");
    }
    let Ok(mut man) = std::process::Command::new("man")
        .args(["-l", "-"])
        .env("MANPAGER", "cat")
        .env("MANWIDTH", "80")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
    else {
        eprintln!("man is not installed: the page is not rendered");
        return;
    };
    use std::io::Write;
    man.stdin
        .take()
        .unwrap()
        .write_all(page.as_bytes())
        .unwrap();
    let rendered = man.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&rendered.stdout);
    assert!(
        rendered.status.success(),
        "{}",
        String::from_utf8_lossy(&rendered.stderr)
    );
    for heading in ["EXIT STATUS", "ENVIRONMENT", "FILES", "EXAMPLES"] {
        assert!(text.contains(heading), "{heading} not rendered:\n{text}");
    }
    assert!(text.contains("settle list ledger.db --queue"), "{text}");
}

use crate::kit::pty;

/// A config home naming the sample ledger `demo`, with its drill folder.
fn config_naming_demo(dir: &std::path::Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let ledger = demo_ledger(dir);
    let config = dir.join("config");
    std::fs::create_dir_all(config.join("settle")).unwrap();
    // A relative receivers path is beside config.toml.
    std::fs::copy(
        dir.join("demo").join("receivers.toml"),
        config.join("settle").join("receivers.toml"),
    )
    .unwrap();
    std::fs::write(
        config.join("settle").join("config.toml"),
        format!(
            "[ledgers.demo]\naddress = {:?}\ndrill_dir = {:?}\nreceivers = \"receivers.toml\"\n\n[ledgers.pay]\naddress = \"postgresql://ops:hunter2@db1/pay\"\nread_only = true\n",
            ledger.to_str().unwrap(),
            dir.join("demo").to_str().unwrap(),
        ),
    )
    .unwrap();
    (ledger, config)
}

fn settle_in(config: &std::path::Path, args: &[&str]) -> std::process::Output {
    bin()
        .env("XDG_CONFIG_HOME", config)
        .args(args)
        .output()
        .unwrap()
}

/// `settle list @demo --queue` lists what `settle list LEDGER --queue`
/// does, and every other LEDGER takes the name too.
#[test]
fn a_named_ledger_stands_for_its_address() {
    let dir = tempfile::tempdir().unwrap();
    let (ledger, config) = config_naming_demo(dir.path());
    let named = settle_in(&config, &["list", "@demo", "--queue"]);
    assert_eq!(code(&named), 0, "{}", stderr(&named));
    let direct = settle_in(&config, &["list", ledger.to_str().unwrap(), "--queue"]);
    assert_eq!(stdout(&named), stdout(&direct));
    assert!(stdout(&named).contains("unknown"), "{}", stdout(&named));
    let show = settle_in(&config, &["show", "@demo", "1"]);
    assert_eq!(code(&show), 0, "{}", stderr(&show));
    // Its receivers file stands for --receivers.
    let probe = settle_in(&config, &["probe", "@demo", "2", "--operator", "tester"]);
    assert_eq!(code(&probe), 0, "{}", stderr(&probe));
    assert!(stdout(&probe).contains("not_found"), "{}", stdout(&probe));
    // A ledger named read-only refuses a command that writes.
    let refused = settle_in(&config, &["decide", "@pay", "1", "--applied"]);
    assert_eq!(code(&refused), 2, "{}", stderr(&refused));
    assert!(
        stderr(&refused).contains("read-only"),
        "{}",
        stderr(&refused)
    );
}

/// `settle ledgers` prints each name and what it points at, never a
/// password.
#[test]
fn ledgers_lists_names_and_addresses_without_passwords() {
    let dir = tempfile::tempdir().unwrap();
    let (ledger, config) = config_naming_demo(dir.path());
    let out = settle_in(&config, &["ledgers"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    let demo = text
        .lines()
        .find(|l| l.starts_with("@demo"))
        .unwrap_or_default();
    assert!(demo.contains(ledger.to_str().unwrap()), "{text}");
    assert!(text.contains("@pay") && text.contains("db1"), "{text}");
    assert!(!text.contains("hunter2"), "{text}");
}

/// An unknown name names the config file and the names it knows; a
/// malformed file names the file, the line and the field.
#[test]
fn an_unknown_or_malformed_name_says_where_and_what() {
    let dir = tempfile::tempdir().unwrap();
    let (_, config) = config_naming_demo(dir.path());
    let out = settle_in(&config, &["list", "@nope"]);
    assert_eq!(code(&out), 1);
    let err = stderr(&out);
    assert!(
        err.contains("config.toml") && err.contains("@demo, @pay"),
        "{err}"
    );
    let file = config.join("settle").join("config.toml");
    std::fs::write(
        &file,
        "[ledgers.demo]\naddress = \"x.db\"\nrecievers = \"r.toml\"\n",
    )
    .unwrap();
    let err = stderr(&settle_in(&config, &["list", "@demo"]));
    assert!(
        err.contains(file.to_str().unwrap()) && err.contains("line 3") && err.contains("recievers"),
        "{err}"
    );
}

/// `settle @demo` opens the console on the named ledger, with its drill
/// folder loaded.
#[test]
fn the_console_opens_a_named_ledger() {
    let dir = tempfile::tempdir().unwrap();
    let (_, config) = config_naming_demo(dir.path());
    let mut screen = pty::Screen::start(
        &["@demo", "--operator", "e2e-operator"],
        120,
        32,
        &[("XDG_CONFIG_HOME", config.to_str().unwrap())],
    );
    screen.wait_for("Queue 11 operations", std::time::Duration::from_secs(10));
    // The ledger's drill_dir stands for --drill-dir.
    screen.send("3");
    screen.wait_for("changed_key", std::time::Duration::from_secs(10));
    screen.send("\u{3}");
    assert!(screen.wait_exit(std::time::Duration::from_secs(10)));
}

/// Bash completes `@` with the names of config.toml.
#[test]
fn bash_completes_the_names() {
    let dir = tempfile::tempdir().unwrap();
    let (_, config) = config_naming_demo(dir.path());
    let script = dir.path().join("settle.bash");
    std::fs::write(&script, stdout(&settle(&["completions", "bash"]))).unwrap();
    let bin_dir = std::path::Path::new(env!("CARGO_BIN_EXE_settle"))
        .parent()
        .unwrap();
    let Ok(out) = std::process::Command::new("bash")
        .arg("-c")
        .arg(format!(
            "source {}; COMP_WORDS=(settle list @d); COMP_CWORD=2; _settle_named; echo \"${{COMPREPLY[@]}}\"",
            script.display()
        ))
        .env("XDG_CONFIG_HOME", &config)
        .env("PATH", format!("{}:/usr/bin:/bin", bin_dir.display()))
        .output()
    else {
        eprintln!("bash is not installed: completion not tried");
        return;
    };
    assert_eq!(stdout(&out).trim(), "@demo", "{}", stderr(&out));
}

/// Zsh completes `@` with the names of config.toml, through the script
/// `settle completions zsh` prints (compadd stubbed to print what it is
/// offered: zsh's completion widgets need a terminal).
#[test]
fn zsh_completes_the_names() {
    let dir = tempfile::tempdir().unwrap();
    let (_, config) = config_naming_demo(dir.path());
    let script = dir.path().join("_settle");
    std::fs::write(&script, stdout(&settle(&["completions", "zsh"]))).unwrap();
    let bin_dir = std::path::Path::new(env!("CARGO_BIN_EXE_settle"))
        .parent()
        .unwrap();
    let Ok(out) = std::process::Command::new("zsh")
        .arg("-fc")
        .arg(format!(
            "autoload -U compinit; compinit -u; source {}; \
             compadd() {{ [[ $1 == -a ]] && print -l -- ${{(P)2}} }}; PREFIX=@d; _settle_named",
            script.display()
        ))
        .env("XDG_CONFIG_HOME", &config)
        .env("PATH", format!("{}:/usr/bin:/bin", bin_dir.display()))
        .output()
    else {
        eprintln!("zsh is not installed: completion not tried");
        return;
    };
    // Every name is offered; zsh keeps those matching the word typed.
    assert_eq!(stdout(&out).trim(), "@demo\n@pay", "{}", stderr(&out));
}
