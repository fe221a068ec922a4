//! `settle copy` into and out of PostgreSQL: the whole ledger at once
//! ([`transfer`]), each table's rows checked and encoded ([`table_in`]), keys
//! and indexes built after the rows ([`defer`]), and a copy staged beside a
//! new ledger's tables then moved in ([`staged`], [`staged_move`]).

mod defer;
pub(super) mod staged;
mod staged_move;
mod table_in;
mod transfer;
