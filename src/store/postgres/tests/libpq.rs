//! libpq's conventions against real servers: a password file and a service
//! file on a cluster that asks for a password, a connect timeout against a
//! socket that never answers, and a host list whose first host is down.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::testing;
use crate::error::Error;
use crate::store::postgres::connect::Address;
use crate::store::postgres::connect::SessionAttrs;

fn parse(spec: &str, env: &[(&str, String)]) -> crate::error::Result<Address> {
    let env: Vec<(String, String)> = env
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect();
    Address::parse_with(Path::new(spec), &|k| {
        env.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone())
    })
}

fn connects(address: &Address) -> Result<String, String> {
    let tls = address.tls().unwrap();
    let mut client = address.connect(tls).map_err(|e| e.to_string())?;
    let row = client.query_one("SELECT current_database()", &[]).unwrap();
    Ok(row.get(0))
}

fn private_file(dir: &Path, name: &str, text: &str, mode: u32) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
    path
}

#[test]
fn the_password_file_gives_the_password_unless_others_may_read_it() {
    let Some((socket, db)) = testing::password_database("pgpass") else {
        return;
    };
    let home = tempfile::tempdir().unwrap();
    let spec = format!("host={} user=postgres dbname={db}", socket.display());
    // Without a password the server refuses: the file is what makes it work.
    let none = parse(&spec, &[("HOME", home.path().display().to_string())]).unwrap();
    let refused = connects(&none).unwrap_err();
    assert!(refused.contains("password"), "{refused}");
    // A socket folder matches "localhost"; the escapes stand for ':' and '\'.
    let lines =
        "otherhost:*:*:*:wrong\nlocalhost:5432:*:postgres:s3cret\\:with\\\\colon\n*:*:*:*:wrong\n";
    let file = private_file(home.path(), "pgpass", lines, 0o600);
    let env = [("PGPASSFILE", file.display().to_string())];
    assert_eq!(connects(&parse(&spec, &env).unwrap()).unwrap(), db);
    // ~/.pgpass when PGPASSFILE is not set.
    private_file(home.path(), ".pgpass", lines, 0o600);
    let env = [("HOME", home.path().display().to_string())];
    assert_eq!(connects(&parse(&spec, &env).unwrap()).unwrap(), db);
    // Group-readable: ignored, as libpq ignores it.
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o640)).unwrap();
    let env = [("PGPASSFILE", file.display().to_string())];
    let ignored = connects(&parse(&spec, &env).unwrap()).unwrap_err();
    assert!(ignored.contains("password"), "{ignored}");
    // A password in the address wins over the file.
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let wrong = parse(&format!("{spec} password=nope"), &env).unwrap();
    assert!(connects(&wrong).is_err());
}

#[test]
fn a_service_names_the_server_and_the_address_overrides_it() {
    let Some((socket, db)) = testing::password_database("service") else {
        return;
    };
    let Some((_, other)) = testing::password_database("service_other") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let services = format!(
        "[elsewhere]\nhost=/nowhere\n\n[ledger]\n# the ledger's server\nhost={}\nuser = postgres\ndbname={db}\npassword={}\n",
        socket.display(),
        testing::PASSWORD
    );
    let file = private_file(dir.path(), "services.conf", &services, 0o600);
    let by_file = ("PGSERVICEFILE", file.display().to_string());
    assert_eq!(
        connects(&parse("service=ledger", std::slice::from_ref(&by_file)).unwrap()).unwrap(),
        db
    );
    let url = format!("postgresql:///{other}?service=ledger");
    assert_eq!(
        connects(&parse(&url, std::slice::from_ref(&by_file)).unwrap()).unwrap(),
        other
    );
    // PGSERVICE, from the system folder when the user's file lacks it.
    std::fs::rename(&file, dir.path().join("pg_service.conf")).unwrap();
    let env = [
        ("PGSERVICE", "ledger".to_string()),
        ("PGSYSCONFDIR", dir.path().display().to_string()),
        ("HOME", "/nonexistent".to_string()),
    ];
    let a = parse("application_name=by_service", &env).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(connects(&a).unwrap(), db);
    assert!(
        a.shown().contains(&socket.display().to_string()),
        "{}",
        a.shown()
    );
    let unknown = parse("service=nope", &env).unwrap_err();
    let said = unknown.to_string();
    assert!(matches!(unknown, Error::Usage(_)), "{said}");
    assert!(said.contains("\"nope\" not found"), "{said}");
    assert!(said.contains("/nonexistent/.pg_service.conf"), "{said}");
    assert!(
        said.contains(&dir.path().join("pg_service.conf").display().to_string()),
        "{said}"
    );
}

#[test]
fn a_server_that_never_answers_is_given_up_after_the_connect_timeout() {
    let dir = tempfile::tempdir().unwrap();
    // Listening, never accepting: the kernel queues the connection and the
    // startup message, and nothing ever answers.
    let _listener =
        std::os::unix::net::UnixListener::bind(dir.path().join(".s.PGSQL.5432")).unwrap();
    let spec = format!("host={} user=postgres dbname=x", dir.path().display());
    for (spec, env) in [
        (format!("{spec} connect_timeout=2"), vec![]),
        (spec.clone(), vec![("PGCONNECT_TIMEOUT", "2".to_string())]),
    ] {
        let address = parse(&spec, &env).unwrap();
        let started = Instant::now();
        let said = connects(&address).unwrap_err();
        let took = started.elapsed();
        assert!(said.contains("timeout"), "{said}");
        assert!(
            took >= Duration::from_secs(2) && took < Duration::from_secs(5),
            "{took:?}"
        );
    }
}

#[test]
fn a_host_list_skips_a_host_that_is_down_and_one_of_the_wrong_kind() {
    let Some(ledger) = testing::fresh_database("hosts") else {
        return;
    };
    let ledger = ledger.to_string_lossy().to_string();
    let socket = ledger
        .split_whitespace()
        .next()
        .unwrap()
        .trim_start_matches("host=")
        .to_string();
    let db = ledger.rsplit("dbname=").next().unwrap().to_string();
    let down = tempfile::tempdir().unwrap();
    let url = format!(
        "postgresql://postgres@/{db}?host={},{socket}&port=5432,5432&target_session_attrs=read-write",
        down.path().display()
    );
    let a = parse(&url, &[]).unwrap();
    assert_eq!(a.attrs(), SessionAttrs::ReadWrite);
    assert_eq!(connects(&a).unwrap(), db);
    assert_eq!(
        a.shown(),
        format!("postgres@{}:5432,{socket}:5432/{db}", down.path().display())
    );
    // prefer-standby takes the primary when no standby answers.
    let prefer = url.replace("read-write", "prefer-standby");
    assert_eq!(connects(&parse(&prefer, &[]).unwrap()).unwrap(), db);
    // standby: no host will do, and each one's reason is said.
    let standby = parse(&url.replace("read-write", "standby"), &[]).unwrap();
    let said = connects(&standby).unwrap_err();
    assert!(said.contains("not in hot standby mode"), "{said}");
    assert!(said.contains(&down.path().display().to_string()), "{said}");
}
