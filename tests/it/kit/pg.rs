//! The throwaway PostgreSQL cluster for integration tests: the library's
//! own tests' kit (`settle-testkit`), the same crate for both. A test takes
//! `let Some(db) = pg::fresh_database("name") else { return };` and skips
//! loudly (or fails, with SETTLE_REQUIRE_PG=1) when there is no server.

#[allow(unused_imports)]
pub use settle_testkit::testing::*;
#[allow(unused_imports)]
pub use settle_testkit::testing_bed::*;
#[allow(unused_imports)]
pub use settle_testkit::testing_crash::*;
pub use settle_testkit::testing_proxy::*;
