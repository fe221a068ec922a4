//! The ledger's vocabulary as plain Rust types: operations, attempts, events,
//! decisions and the receivers' contracts. Pure data; nothing here touches the
//! database, the terminal or the clock (callers pass `now`).

pub(crate) mod clusters;
mod decision;
pub(crate) mod declared;
mod drilled;
pub(crate) mod evidence;
#[cfg(test)]
pub(crate) mod fixture;
pub(crate) mod group;
mod ids;
pub(crate) mod key_expiry;
mod malformed;
mod new_operation;
mod operation;
mod probe;
pub(crate) mod retry_plan;
pub(crate) mod retry_run;
pub(crate) mod retry_status;
pub(crate) mod rules;
mod sort;
mod state;
mod text_search;
mod time;

pub use clusters::{Cluster, ClusterDimension, ClusterSection, Clusters, Timeline};
pub use decision::{Decision, DecisionDraft, DecisionKind, DecisionReceipt};
pub use declared::{Declarations, FileContract};
pub use drilled::{DrillVerdict, contract_source, run_file};
pub use group::{IdLabels, MemberState, Numbering, Origin};
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
pub use time::{TIME_FORMATS, age, format_time, human_duration, parse_span, parse_time};
