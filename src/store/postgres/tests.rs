//! Tests of the PostgreSQL backend against a throwaway cluster
//! ([`super::testing`]): each test gets a database of its own and skips
//! loudly when the machine has no PostgreSQL server.

use super::testing::{connect, fresh_database};

#[test]
fn the_harness_hands_each_test_its_own_empty_database_on_a_socket_only_server() {
    let Some(a) = fresh_database("harness a") else {
        return;
    };
    let b = fresh_database("harness b").unwrap();
    assert_ne!(a, b);
    let mut ca = connect(&a);
    ca.batch_execute("CREATE TABLE only_in_a (x int)").unwrap();
    let n: i64 = connect(&b)
        .query_one(
            "SELECT count(*) FROM information_schema.tables WHERE table_name = 'only_in_a'",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(n, 0, "a database handed out must be empty");
    // No TCP: the server listens only on the socket in the temp dir.
    let listen: String = ca.query_one("SHOW listen_addresses", &[]).unwrap().get(0);
    assert_eq!(listen, "");
}
