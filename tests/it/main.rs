//! The integration tests, one binary: the real `settle` binary and the
//! library driven from outside, sharing one test kit ([`kit`]). One crate
//! so the library is linked once, not once per file; grouped by what they
//! drive.
// Tests fail loudly on purpose: an unwrap is the assertion.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod kit;

mod audit_trail;
mod both_backends;
mod drill;
mod drill_run;
mod filter_parse;
mod hostile_text;
mod receiver;
mod store_decisions;
mod worker;

/// The command line, through the real binary, on SQLite ledgers.
mod cli {
    mod bulk_decide;
    mod contract_file;
    mod conventions;
    mod copy;
    mod decide;
    mod disk_full;
    mod drill;
    mod group_decide;
    mod hardening;
    mod malformed;
    mod open;
    mod probe;
    mod progress;
    mod several;
}

/// The console on a pseudo-terminal, through the real binary.
mod console {
    mod bulk;
    mod catch_up;
    mod drill_run;
    mod drills;
    mod e2e;
    mod ledger_file;
    mod mouse;
    mod probe;
    mod read_model_faults;
    mod scan;
    mod signals;
}

/// The CLI and console on a throwaway PostgreSQL cluster.
mod postgres {
    mod adopt_log;
    mod cli;
    mod console;
    mod crash;
    mod decide;
    mod failover;
    mod first_contact;
    mod group_console;
    mod network_drop;
    mod standby_console;
}

/// settle on a job queue's own database (Procrastinate, River).
mod queues {
    mod drill_ledger;
    mod graphile_real;
    mod job_queue_contract;
    mod job_queues;
    mod mapped;
    mod oban;
    mod procrastinate_real;
    mod river_real;
}
