//! settle's throwaway PostgreSQL clusters, for the library's own tests, the
//! integration tests and the benches alike: one crate they all depend on,
//! so no file is compiled into two crates. A test takes
//! `let Some(db) = testing::fresh_database("name") else { return };` and
//! skips loudly (or fails, with SETTLE_REQUIRE_PG=1) when the machine has
//! no PostgreSQL server; [`testing_bed`] starts a primary with a standby.

pub mod testing;
pub mod testing_bed;
pub mod testing_crash;
pub mod testing_proxy;
