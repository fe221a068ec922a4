//! The settings every entry point runs with, resolved once from the flags
//! and the environment (the way ripgrep turns raw flags into `HiArgs`): who
//! the operator is, whether the console may write, whether colour is
//! allowed, which keymap file to read, whether the console takes the
//! mouse. The CLI, the console and the demo all
//! read this one value, so they follow one policy. Nothing here opens a
//! ledger or draws.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// The resolved settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// Who decisions are recorded under, or why nobody is known (then
    /// `decide` refuses and the console opens read-only).
    pub operator: Result<String, String>,
    /// The console writes nothing: asked for, or no operator is known.
    pub read_only: bool,
    /// Why the console is read-only when it was not asked to be.
    pub read_only_reason: Option<String>,
    /// Colour is allowed (`NO_COLOR` unset or empty). Text output also
    /// needs a terminal; the console always has one.
    pub colour: bool,
    /// The keymap file to read, if any; `None` means the default keys.
    pub keymap: Option<PathBuf>,
    /// The console asks the terminal for clicks and the wheel (not with
    /// `--no-mouse`, for terminals or multiplexers where mouse reporting
    /// gets in the way).
    pub mouse: bool,
    /// The receivers file (`receivers.toml`) that probes and the worker
    /// read through [`crate::receivers::Receivers::load_configured`];
    /// `None`: no receiver is configured.
    pub receivers: Option<PathBuf>,
}

/// What the command line said; `None` where a flag was not given.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Flags {
    pub operator: Option<String>,
    pub read_only: bool,
    pub keymap: Option<PathBuf>,
    pub receivers: Option<PathBuf>,
    pub no_mouse: bool,
}

/// What the process's environment says, read once so resolution is pure.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Environment {
    /// `SETTLE_OPERATOR`.
    pub settle_operator: Option<String>,
    /// The account name of the process's uid, else `$USER`/`$LOGNAME`.
    pub account: Option<String>,
    /// `NO_COLOR` set to something non-empty (<https://no-color.org>).
    pub no_color: bool,
    /// `$XDG_CONFIG_HOME`, else `$HOME/.config`.
    pub config_home: Option<PathBuf>,
}

/// Operator name on decisions made in the demo when nobody is known: the
/// demo's ledger is a throwaway sample, so deciding there is the point.
pub const DEMO_OPERATOR: &str = "demo";

/// The receivers file's name under `$XDG_CONFIG_HOME/settle/`.
pub const RECEIVERS_FILE: &str = "receivers.toml";

const NO_OPERATOR: &str = "no operator name: pass --operator NAME or set SETTLE_OPERATOR \
     (the account of this process's uid has no name)";

impl Environment {
    /// Reads the variables and the account name of this process.
    pub fn of_process() -> Environment {
        let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
        Environment {
            settle_operator: var("SETTLE_OPERATOR").map(|v| v.to_string_lossy().into_owned()),
            account: uid_account().or_else(|| {
                ["USER", "LOGNAME"]
                    .iter()
                    .find_map(|v| var(v).map(|v| v.to_string_lossy().into_owned()))
            }),
            no_color: var("NO_COLOR").is_some(),
            config_home: var("XDG_CONFIG_HOME")
                .map(PathBuf::from)
                .or_else(|| var("HOME").map(|h| PathBuf::from(h).join(".config"))),
        }
    }
}

impl Config {
    /// Resolves `flags` against this process's environment.
    pub fn from_process(flags: Flags) -> Config {
        Config::resolve(flags, &Environment::of_process())
    }

    /// The policy, in one place. Operator: `--operator`, else
    /// `SETTLE_OPERATOR`, else the account name; an empty name counts as
    /// none. Keymap: `--keymap`, else `settle/keymap` under the config home
    /// when that file exists; receivers the same way, with
    /// `settle/receivers.toml` (a `--receivers` file that does not exist is
    /// kept, so reading it fails saying so instead of silently running
    /// nothing).
    pub fn resolve(flags: Flags, env: &Environment) -> Config {
        let named = |s: Option<&String>| {
            s.map(|s| s.trim().to_string())
                .filter(|name| !name.is_empty())
        };
        let operator = match (&flags.operator, named(flags.operator.as_ref())) {
            (_, Some(name)) => Ok(name),
            (Some(_), None) => Err("--operator is empty; give a name".to_string()),
            (None, None) => named(env.settle_operator.as_ref())
                .or_else(|| named(env.account.as_ref()))
                .ok_or_else(|| NO_OPERATOR.to_string()),
        };
        let read_only_reason = match &operator {
            Err(why) if !flags.read_only => Some(format!("read-only: {why}")),
            _ => None,
        };
        let in_config_home = |name: &str| {
            let default = env.config_home.as_ref()?.join("settle").join(name);
            default.is_file().then_some(default)
        };
        let keymap = flags.keymap.or_else(|| in_config_home("keymap"));
        let receivers = flags.receivers.or_else(|| in_config_home(RECEIVERS_FILE));
        Config {
            read_only: flags.read_only || operator.is_err(),
            operator,
            read_only_reason,
            colour: !env.no_color,
            keymap,
            mouse: !flags.no_mouse,
            receivers,
        }
    }

    /// The demo's policy: the resolved operator, else [`DEMO_OPERATOR`]; it
    /// writes unless asked not to.
    pub fn for_demo(self) -> Config {
        let asked = self.read_only && self.read_only_reason.is_none();
        Config {
            operator: Ok(self.operator.unwrap_or_else(|_| DEMO_OPERATOR.to_string())),
            read_only: asked,
            read_only_reason: None,
            ..self
        }
    }
}

/// The account name of this process's uid, from `/etc/passwd`: `$USER` is
/// whatever the parent set (absent under cron and in containers, stale
/// under `su`), the uid is who the kernel says runs the process. The owner
/// of `/proc/self` is that uid; no libc call is needed. Accounts only known
/// to NSS (LDAP) are not found here; `$USER` is the fallback for them.
fn uid_account() -> Option<String> {
    let uid = std::fs::metadata("/proc/self").ok()?.uid();
    let passwd = std::fs::read_to_string(Path::new("/etc/passwd")).ok()?;
    account_of(uid, &passwd)
}

/// The name on the `passwd` line whose uid field is `uid`.
fn account_of(uid: u32, passwd: &str) -> Option<String> {
    passwd.lines().find_map(|line| {
        let mut fields = line.split(':');
        let name = fields.next()?;
        let id = fields.nth(1)?;
        (id.parse::<u32>().ok()? == uid && !name.is_empty()).then(|| name.to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(settle_operator: Option<&str>, account: Option<&str>) -> Environment {
        Environment {
            settle_operator: settle_operator.map(str::to_string),
            account: account.map(str::to_string),
            ..Environment::default()
        }
    }

    fn operator(flag: Option<&str>, env: &Environment) -> Config {
        let flags = Flags {
            operator: flag.map(str::to_string),
            ..Flags::default()
        };
        Config::resolve(flags, env)
    }

    #[test]
    fn the_flag_wins_then_the_variable_then_the_account() {
        let all = env(Some("from-env"), Some("acct"));
        assert_eq!(operator(Some("flag"), &all).operator, Ok("flag".into()));
        assert_eq!(operator(None, &all).operator, Ok("from-env".into()));
        let account = operator(None, &env(None, Some("acct")));
        assert_eq!(account.operator, Ok("acct".into()));
        assert!(!account.read_only);
    }

    #[test]
    fn with_nobody_known_the_console_is_read_only_and_says_why() {
        let c = operator(None, &env(None, None));
        assert!(c.operator.is_err());
        assert!(c.read_only);
        let why = c.read_only_reason.unwrap_or_default();
        assert!(why.contains("--operator"), "{why}");
        assert!(why.contains("SETTLE_OPERATOR"), "{why}");
    }

    #[test]
    fn an_empty_name_is_no_name() {
        assert!(
            operator(Some("  "), &env(None, Some("acct")))
                .operator
                .is_err()
        );
        assert_eq!(
            operator(None, &env(Some(" "), Some("acct"))).operator,
            Ok("acct".into())
        );
    }

    #[test]
    fn asked_read_only_needs_no_reason() {
        let flags = Flags {
            read_only: true,
            ..Flags::default()
        };
        let c = Config::resolve(flags, &env(None, None));
        assert!(c.read_only);
        assert_eq!(c.read_only_reason, None);
    }

    #[test]
    fn the_demo_records_as_demo_only_when_nobody_is_known() {
        let nobody = operator(None, &env(None, None)).for_demo();
        assert_eq!(nobody.operator, Ok(DEMO_OPERATOR.into()));
        assert!(!nobody.read_only);
        let alice = operator(None, &env(None, Some("alice"))).for_demo();
        assert_eq!(alice.operator, Ok("alice".into()));
    }

    #[test]
    fn the_keymap_file_is_used_only_when_it_exists() {
        let dir = tempfile::tempdir().unwrap();
        let with_home = Environment {
            config_home: Some(dir.path().to_path_buf()),
            ..Environment::default()
        };
        assert_eq!(Config::resolve(Flags::default(), &with_home).keymap, None);
        let file = dir.path().join("settle").join("keymap");
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, "").unwrap();
        assert_eq!(
            Config::resolve(Flags::default(), &with_home).keymap,
            Some(file)
        );
        let explicit = Flags {
            keymap: Some("/elsewhere".into()),
            ..Flags::default()
        };
        assert_eq!(
            Config::resolve(explicit, &with_home).keymap,
            Some(PathBuf::from("/elsewhere"))
        );
    }

    #[test]
    fn the_receivers_flag_wins_else_the_file_in_the_config_home() {
        let dir = tempfile::tempdir().unwrap();
        let with_home = Environment {
            config_home: Some(dir.path().to_path_buf()),
            ..Environment::default()
        };
        assert_eq!(
            Config::resolve(Flags::default(), &with_home).receivers,
            None
        );
        let file = dir.path().join("settle").join(RECEIVERS_FILE);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, "").unwrap();
        assert_eq!(
            Config::resolve(Flags::default(), &with_home).receivers,
            Some(file)
        );
        let missing = Flags {
            receivers: Some("/missing.toml".into()),
            ..Flags::default()
        };
        assert_eq!(
            Config::resolve(missing, &with_home).receivers,
            Some(PathBuf::from("/missing.toml")),
            "a named file is kept even when missing, so loading it says so"
        );
    }

    #[test]
    fn the_console_takes_the_mouse_unless_told_not_to() {
        assert!(Config::resolve(Flags::default(), &env(None, None)).mouse);
        let off = Flags {
            no_mouse: true,
            ..Flags::default()
        };
        assert!(!Config::resolve(off, &env(None, None)).for_demo().mouse);
    }

    #[test]
    fn the_account_is_found_by_uid_not_by_name() {
        let passwd = "root:x:0:0:root:/root:/bin/sh\n\
                      # comment\n\
                      alice:x:1000:1000::/home/alice:/bin/sh\n";
        assert_eq!(account_of(1000, passwd), Some("alice".into()));
        assert_eq!(account_of(0, passwd), Some("root".into()));
        assert_eq!(account_of(4242, passwd), None);
    }
}
