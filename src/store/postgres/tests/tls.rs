//! TLS as the address asks for it, against a throwaway server that speaks
//! it (`testing::tls_database`): `require` encrypts without checking the
//! certificate (libpq's meaning), `verify-full` checks it against
//! `sslrootcert` and refuses a server it cannot trust, `disable` stays in
//! clear. The password in the address never reaches an error.

use std::path::Path;

use super::testing::tls_database;
use crate::store::postgres::Address;
use crate::store::{Access, Ledger};

/// Whether the session behind `address` is encrypted, asked of the server.
fn encrypted(address: &str) -> Result<bool, crate::error::Error> {
    let a = Address::parse(Path::new(address))?;
    let mut client = a.connect(a.tls()?)?;
    Ok(client
        .query_one(
            "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
            &[],
        )
        .map(|r| r.get::<_, bool>(0))
        .unwrap_or(false))
}

#[test]
fn the_address_says_how_much_tls_and_the_connection_does_that() {
    let Some((db, cert)) = tls_database("tls modes") else {
        return;
    };
    let with = |extra: &str| format!("{db} password=hunter2 {extra}");
    assert!(encrypted(&with("sslmode=require")).unwrap(), "require");
    assert!(!encrypted(&with("sslmode=disable")).unwrap(), "disable");
    let trusted = with(&format!(
        "sslmode=verify-full sslrootcert={}",
        cert.display()
    ));
    assert!(encrypted(&trusted).unwrap(), "verify-full with the root");

    // A server whose certificate nobody vouched for is refused, and the
    // refusal names the ledger without its password.
    let refused = encrypted(&with("sslmode=verify-full"))
        .unwrap_err()
        .to_string();
    assert!(refused.contains("connecting"), "{refused}");
    assert!(!refused.contains("hunter2"), "{refused}");

    // The ledger itself over a verified connection.
    Ledger::create(Path::new(&trusted)).unwrap();
    let (ledger, _) = Ledger::open(Path::new(&trusted), Access::ReadOnly).unwrap();
    let shown = ledger.path().display().to_string();
    assert!(shown.starts_with("postgres@127.0.0.1:"), "{shown}");
    assert!(!shown.contains("hunter2"), "{shown}");
}

#[test]
fn verify_ca_checks_the_chain_and_verify_full_also_the_host_name() {
    let Some((db, cert)) = tls_database("tls host names") else {
        return;
    };
    // The certificate names 127.0.0.1 only: reached as localhost, its
    // chain is good and its name is not.
    let by_name = db.replace("host=127.0.0.1", "host=localhost");
    let root = format!("sslrootcert={}", cert.display());
    assert!(encrypted(&format!("{by_name} sslmode=verify-ca {root}")).unwrap());
    let refused = encrypted(&format!("{by_name} sslmode=verify-full {root}"))
        .unwrap_err()
        .to_string();
    assert!(refused.contains("connecting"), "{refused}");
    assert!(encrypted(&format!("{db} sslmode=verify-ca")).is_err());
}

#[test]
fn a_certificate_trusted_as_it_is_still_has_to_be_within_its_dates() {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, UnixTime};
    let Some((_, cert)) = tls_database("tls dates") else {
        return;
    };
    let cert = CertificateDer::from_pem_file(&cert).unwrap();
    let at = |secs| UnixTime::since_unix_epoch(std::time::Duration::from_secs(secs));
    let now = UnixTime::now().as_secs();
    assert!(crate::store::postgres::connect::tls::within_validity(&cert, at(now)).is_ok());
    // The test certificate is good for two days from its making.
    assert!(
        crate::store::postgres::connect::tls::within_validity(&cert, at(now + 3 * 86_400)).is_err()
    );
    assert!(
        crate::store::postgres::connect::tls::within_validity(&cert, at(now - 86_400)).is_err()
    );
}
