//! The password file every libpq client reads: `PGPASSFILE` (or the
//! address's `passfile`), else `~/.pgpass`. Lines are
//! `hostname:port:database:username:password`; `*` matches anything in the
//! first four fields, `\:` and `\\` stand for `:` and `\`, `#` starts a
//! comment line, and the first matching line wins. A socket folder (or no
//! host) matches `localhost`. A file that group or others may read or write
//! is ignored with a warning, as libpq does, since it may have leaked.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// Who is connecting where: the four fields a line must match.
pub(crate) struct Wanted<'a> {
    pub host: &'a str,
    pub port: u16,
    pub dbname: &'a str,
    pub user: &'a str,
}

/// The file libpq would read: `passfile`, else `PGPASSFILE`, else
/// `$HOME/.pgpass`.
pub(crate) fn file(
    passfile: Option<&str>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Option<PathBuf> {
    passfile
        .map(str::to_string)
        .or_else(|| env("PGPASSFILE"))
        .map(PathBuf::from)
        .or_else(|| env("HOME").map(|home| Path::new(&home).join(".pgpass")))
}

/// The password the file holds for `wanted`, if it holds one and may be
/// trusted; `warn` hears why a file that exists was not used.
pub(crate) fn lookup(path: &Path, wanted: &Wanted, warn: &mut dyn FnMut(String)) -> Option<String> {
    let meta = std::fs::metadata(path).ok()?;
    let shown = path.display();
    if !meta.is_file() {
        warn(format!("password file \"{shown}\" is not a plain file"));
        return None;
    }
    if meta.permissions().mode() & 0o077 != 0 {
        warn(format!(
            "password file \"{shown}\" has group or world access; permissions should be u=rw (0600) or less"
        ));
        return None;
    }
    let text = std::fs::read_to_string(path).ok()?;
    find(&text, wanted)
}

fn find(text: &str, wanted: &Wanted) -> Option<String> {
    // libpq matches a socket folder, an empty host and its own default
    // socket as "localhost".
    let host = if wanted.host.is_empty() || wanted.host.starts_with('/') {
        "localhost"
    } else {
        wanted.host
    };
    let port = wanted.port.to_string();
    let fields = [host, port.as_str(), wanted.dbname, wanted.user];
    text.lines()
        .map(|line| line.trim_end_matches('\r'))
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .find_map(|line| {
            let parts = split(line);
            let [h, p, d, u, password, ..] = parts.as_slice() else {
                return None;
            };
            let matches = [h, p, d, u]
                .iter()
                .zip(fields)
                .all(|(field, want)| field.as_str() == "*" || field.as_str() == want);
            matches.then(|| password.clone())
        })
}

/// A line's fields, unescaped. libpq ends the password at the next
/// unescaped `:` too, so a password holding one must write `\:`.
fn split(line: &str) -> Vec<String> {
    let mut fields = vec![String::new()];
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => fields
                .last_mut()
                .into_iter()
                .for_each(|f| f.extend(chars.next())),
            ':' => fields.push(String::new()),
            c => fields.last_mut().into_iter().for_each(|f| f.push(c)),
        }
    }
    fields
}

#[cfg(test)]
mod tests {
    use super::*;

    fn want<'a>(host: &'a str, port: u16, dbname: &'a str, user: &'a str) -> Wanted<'a> {
        Wanted {
            host,
            port,
            dbname,
            user,
        }
    }

    #[test]
    fn the_first_matching_line_wins_with_wildcards_and_escapes() {
        let file = "# a comment\n\
                    db.example:5432:ledger:alice:first\n\
                    *:*:ledger:alice:second\n\
                    localhost:5433:*:bob:pa\\:ss\\\\word\n\
                    we\\:ird:*:*:*:colon:in:password\n";
        let got = |w: Wanted| find(file, &w);
        assert_eq!(
            got(want("db.example", 5432, "ledger", "alice")).as_deref(),
            Some("first")
        );
        assert_eq!(
            got(want("other", 6432, "ledger", "alice")).as_deref(),
            Some("second")
        );
        assert_eq!(
            got(want("/run/pg", 5433, "x", "bob")).as_deref(),
            Some("pa:ss\\word")
        );
        assert_eq!(
            got(want("", 5433, "x", "bob")).as_deref(),
            Some("pa:ss\\word")
        );
        assert_eq!(got(want("we:ird", 1, "x", "y")).as_deref(), Some("colon"));
        assert_eq!(got(want("db.example", 5432, "ledger", "carol")), None);
    }

    #[test]
    fn a_file_others_may_read_is_ignored_with_a_warning_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pgpass");
        std::fs::write(&path, "*:*:*:*:secret\n").unwrap();
        let w = want("h", 5432, "d", "u");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let mut warnings = Vec::new();
        assert_eq!(lookup(&path, &w, &mut |m| warnings.push(m)), None);
        assert_eq!(warnings.len(), 1);
        assert!(
            warnings[0].contains(&path.display().to_string()),
            "{warnings:?}"
        );
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(
            lookup(&path, &w, &mut |m| warnings.push(m)).as_deref(),
            Some("secret")
        );
        assert_eq!(warnings.len(), 1);
    }
}
