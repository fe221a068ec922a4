//! Reaching a PostgreSQL server as libpq does: the address and its two
//! spellings, the host list, the password and service files, TLS, which
//! host a read or a write goes to, and a connection that stopped answering.

pub(super) mod address;
mod conninfo;
pub(super) mod hosts;
mod pgpass;
pub(super) mod routing;
mod service_file;
pub(super) mod stalls;
pub(super) mod tls;
pub(super) mod writes;

pub(crate) use address::Address;
pub(crate) use hosts::{Reads, SessionAttrs};
pub(crate) use tls::Tls;
pub(crate) use writes::Writes;
