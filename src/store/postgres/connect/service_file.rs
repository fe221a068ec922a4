//! libpq's connection service file: `service=NAME` (or `PGSERVICE`) names
//! a `[NAME]` section of `key=value` lines, looked for in `PGSERVICEFILE`
//! (else `~/.pg_service.conf`), then in `PGSYSCONFDIR/pg_service.conf`. The
//! first file holding the section gives all of it; the address's own
//! keywords override what it says.

use std::path::{Path, PathBuf};

use super::conninfo::Params;

/// Where libpq's `SYSCONFDIR` points on Debian and Ubuntu, whose packages
/// this machine's PostgreSQL comes from.
const DEFAULT_SYSCONFDIR: &str = "/etc/postgresql-common";

/// The files searched for a service, in order.
pub(crate) fn files(env: &dyn Fn(&str) -> Option<String>) -> Vec<PathBuf> {
    let user = env("PGSERVICEFILE")
        .map(PathBuf::from)
        .or_else(|| env("HOME").map(|home| Path::new(&home).join(".pg_service.conf")));
    let system = Path::new(&env("PGSYSCONFDIR").unwrap_or_else(|| DEFAULT_SYSCONFDIR.into()))
        .join("pg_service.conf");
    user.into_iter().chain([system]).collect()
}

/// The keywords of service `name` from the first of `files` that defines
/// it; an error naming every file searched when none does, or naming the
/// file and line that is malformed.
pub(crate) fn lookup(name: &str, files: &[PathBuf]) -> Result<Params, String> {
    for path in files {
        let Ok(text) = std::fs::read_to_string(path) else {
            continue;
        };
        if let Some(params) = section(&text, name)
            .map_err(|(line, why)| format!("{}:{line}: {why}", path.display()))?
        {
            return Ok(params);
        }
    }
    let searched: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
    Err(format!(
        "definition of service \"{}\" not found (searched {})",
        crate::text::sanitize(name),
        searched.join(", ")
    ))
}

/// The section's keywords; None when the file has no such section.
fn section(text: &str, name: &str) -> Result<Option<Params>, (usize, String)> {
    let mut found: Option<Params> = None;
    let mut inside = false;
    for (n, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(header) = line.strip_prefix('[') {
            if found.is_some() {
                break;
            }
            inside = header.strip_suffix(']') == Some(name);
            if inside {
                found = Some(Params::new());
            }
            continue;
        }
        if !inside {
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            return Err((
                n + 1,
                format!(
                    "syntax error: \"{}\" is not key=value",
                    crate::text::sanitize(line)
                ),
            ));
        };
        let key = key.trim();
        if key == "service" {
            return Err((
                n + 1,
                "nested service specifications are not supported".into(),
            ));
        }
        if let Some(params) = found.as_mut() {
            params.push((key.to_string(), value.trim().to_string()));
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_file_that_defines_the_service_gives_it() {
        let dir = tempfile::tempdir().unwrap();
        let (user, system) = (
            dir.path().join("user.conf"),
            dir.path().join("pg_service.conf"),
        );
        std::fs::write(&user, "# mine\n[other]\nhost=x\n").unwrap();
        std::fs::write(
            &system,
            "[ledger]\nhost = /run/pg\n dbname=ledger\n[next]\nhost=y\n",
        )
        .unwrap();
        let files = [user.clone(), system.clone()];
        let got = lookup("ledger", &files).unwrap();
        assert_eq!(
            got,
            [
                ("host".to_string(), "/run/pg".to_string()),
                ("dbname".into(), "ledger".into())
            ]
        );
        let err = lookup("missing", &files).unwrap_err();
        assert!(err.contains("\"missing\" not found"), "{err}");
        assert!(
            err.contains(&user.display().to_string())
                && err.contains(&system.display().to_string()),
            "{err}"
        );
        std::fs::write(&user, "[ledger]\nnonsense\n").unwrap();
        let err = lookup("ledger", &files).unwrap_err();
        assert!(err.contains("user.conf:2"), "{err}");
    }

    #[test]
    fn the_environment_chooses_the_files() {
        let env = |k: &str| match k {
            "HOME" => Some("/home/op".to_string()),
            "PGSYSCONFDIR" => Some("/etc/pg".to_string()),
            _ => None,
        };
        assert_eq!(
            files(&env),
            [
                PathBuf::from("/home/op/.pg_service.conf"),
                PathBuf::from("/etc/pg/pg_service.conf")
            ]
        );
        let env = |k: &str| (k == "PGSERVICEFILE").then(|| "/srv/services".to_string());
        assert_eq!(files(&env)[0], PathBuf::from("/srv/services"));
    }
}
