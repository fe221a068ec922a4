//! The ledger's vocabulary as plain Rust types: operations, attempts, events,
//! decisions and the receivers' contracts. Pure data; nothing here touches the
//! database, the terminal or the clock (callers pass `now`).

pub mod clusters;
mod decision;
pub mod declared;
mod drilled;
pub mod evidence;
#[cfg(test)]
pub(crate) mod fixture;
mod ids;
pub mod key_expiry;
mod malformed;
mod new_operation;
mod operation;
mod probe;
pub mod retry_plan;
pub mod retry_run;
pub mod retry_status;
pub mod rules;
mod sort;
mod state;
mod text_search;
mod time;

pub use clusters::{Cluster, ClusterDimension, ClusterSection, Clusters, Timeline};
pub use decision::{Decision, DecisionDraft, DecisionKind, DecisionReceipt};
pub use declared::{Declarations, FileContract};
pub use drilled::{DrillVerdict, contract_source, run_file};
pub use ids::{DecisionId, OperationId, Seek};
pub use malformed::Malformed;
pub use new_operation::{NewAttempt, NewEvent, NewOperation, NewOperationBuilder};
pub use operation::{
    Attempt, Event, OpTypeContract, Operation, OperationDetail, OperationRow, Outcome,
    RetryProgress, RetryRequest,
};
pub use probe::{NewProbe, Probe, ProbeOutcome};
pub use sort::{Sort, SortColumn, SortKey, SortValue};
pub use state::{State, StateCounts, stale_reservation};
pub use text_search::{CatchUp, TRIGRAM, TextSearch};
pub use time::{TIME_FORMATS, age, format_time, human_duration, parse_time};
