//! Tests of the PostgreSQL backend, each against a throwaway cluster
//! ([`testing`], [`testing_bed`] for a primary with a standby) or, for the
//! address, against no server at all.

mod address;
mod adopt;
pub(super) mod backend;
pub(crate) mod copy;
mod decide;
mod event_ops;
mod libpq;
mod queue;
mod read;
mod routing;
mod same_contract;
mod stop;
pub(crate) use settle_testkit::testing;
use settle_testkit::testing_bed;
mod tls;
