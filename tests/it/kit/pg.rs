//! The throwaway PostgreSQL cluster for integration tests: the very files
//! the library's own tests use, included rather than copied. A test takes
//! `let Some(db) = pg::fresh_database("name") else { return };` and skips
//! loudly (or fails, with SETTLE_REQUIRE_PG=1) when there is no server.

#[path = "../../../src/store/postgres/tests/testing.rs"]
mod testing;
#[path = "../../../src/store/postgres/tests/testing_bed.rs"]
mod testing_bed;

#[allow(unused_imports)]
pub use testing::*;
#[allow(unused_imports)]
pub use testing_bed::*;
