//! What a key can mean ([`Intent`]), the screens a key can name ([`View`])
//! and the modes keys are read in ([`KeyMode`]), with every intent's name in
//! the keymap file, footer hint and help text in one exhaustive `match`.
//! Depends on nothing but domain words: the keymap reads it and the model
//! obeys it, so neither needs the other. Never holds what the shell reports
//! back; that is `app::Msg`.

use crate::domain::DecisionKind;

/// The screens, in Tab order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum View {
    Queue,
    All,
    Drills,
    Audit,
    /// The queue grouped by receiver, account, last error and age.
    Clusters,
}

impl View {
    pub const ALL: [View; 5] = [
        View::Queue,
        View::All,
        View::Drills,
        View::Audit,
        View::Clusters,
    ];

    pub fn title(self) -> &'static str {
        match self {
            View::Queue => "Queue",
            View::All => "All",
            View::Drills => "Drills",
            View::Audit => "Audit",
            View::Clusters => "Clusters",
        }
    }

    /// Views whose rows name an operation, so Enter can show its detail:
    /// the two lists, and the audit trail (a decision's operation).
    pub fn shows_detail(self) -> bool {
        matches!(self, View::Queue | View::All | View::Audit)
    }

    /// Views whose rows are operations a decision can be recorded on.
    pub fn lists_operations(self) -> bool {
        matches!(self, View::Queue | View::All)
    }
}

/// Which bindings apply. `Any` bindings apply in every mode after the
/// mode's own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyMode {
    Any,
    List,
    Filter,
    Form,
    Help,
    /// A one-line prompt: the export's file name.
    Prompt,
}

impl KeyMode {
    pub fn parse(word: &str) -> Option<KeyMode> {
        Some(match word {
            "any" => KeyMode::Any,
            "list" => KeyMode::List,
            "filter" => KeyMode::Filter,
            "form" => KeyMode::Form,
            "help" => KeyMode::Help,
            "prompt" => KeyMode::Prompt,
            _ => return None,
        })
    }

    /// Modes where printable keys type text unless bound.
    pub fn types_text(self) -> bool {
        matches!(self, KeyMode::Filter | KeyMode::Form | KeyMode::Prompt)
    }
}

/// What the operator meant by a key (or the mouse wheel).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Intent {
    Quit,
    Help,
    NextView,
    PrevView,
    ShowView(View),
    MoveDown,
    MoveUp,
    /// A left click on the screen's cell at `column`, `row` (0-based,
    /// from the top left): a row of the list or a tab picks it.
    Click {
        column: u16,
        row: u16,
    },
    /// The mouse wheel turned over the screen's cell at `column`, `row`:
    /// `lines` to scroll the pane under it by (negative is up).
    Wheel {
        column: u16,
        row: u16,
        lines: isize,
    },
    PageDown,
    PageUp,
    First,
    Last,
    ToggleDetail,
    DetailDown,
    DetailUp,
    StartFilter,
    /// The next order of the rows: the next column (the Drills view and
    /// the operation lists).
    CycleSort,
    /// Write the marked rows, or every row the view matches, to a file.
    Export,
    /// The same column the other way round (the operation lists).
    ReverseSort,
    /// The Drills view: each case side by side across the runs loaded.
    CompareRuns,
    /// The open drill case's operation in the ledger, in the All view.
    OpenOperation,
    ToggleMark,
    /// Select every row the list's filter matches, without loading them.
    SelectMatching,
    /// Ask the receivers whether the effects exist (the selected, marked
    /// or every matching row) and record each answer as a probe.
    Probe,
    /// Drill the op type of the operation under the cursor against its
    /// receiver, and record the verdict.
    Drill,
    Decide(DecisionKind),
    Undo,
    Reload,
    Back,
    Accept,
    Confirm,
    NextField,
    PrevField,
    DeleteChar,
    ToggleOverride,
    /// A printable key typed into the filter or a form field.
    Input(char),
}

/// How an intent is named in the keymap file, hinted in the footer and
/// described in help.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Words {
    pub name: &'static str,
    pub hint: &'static str,
    pub description: &'static str,
}

const fn words(name: &'static str, hint: &'static str, description: &'static str) -> Words {
    Words {
        name,
        hint,
        description,
    }
}

// The export's words, apart: `Intent::words` must stay one screen.
const EXPORT: Words = words(
    "export",
    "export",
    "export the marked rows, or all the view matches, to .csv or .jsonl",
);
// The probe's words, apart for the same reason.
const PROBE: Words = words(
    "probe",
    "probe",
    "ask the receiver if the effect exists; recorded as a probe",
);
// The drill's words, apart for the same reason.
const DRILL: Words = words(
    "drill",
    "drill",
    "drill the row's op type against its receiver; the verdict is recorded",
);
const WRITE_EXPORT: Words = words("confirm", "write", "write the file (never over one)");

/// The words of the key that shows `view`.
fn view_words(view: View) -> Words {
    match view {
        View::Queue => words(
            "view_queue",
            "queue",
            "triage queue: unknown, exhausted, conflict, stale reserved",
        ),
        View::All => words("view_all", "all", "all operations"),
        View::Drills => words("view_drills", "drills", "drill files and their verdicts"),
        View::Audit => words(
            "view_audit",
            "audit",
            "audit trail: decisions, newest first",
        ),
        View::Clusters => words(
            "view_clusters",
            "clusters",
            "the queue grouped by receiver, account, last error and age",
        ),
    }
}

impl Intent {
    /// Every intent a keymap line can name, in help order.
    pub const BINDABLE: [Intent; 41] = {
        use DecisionKind::*;
        [
            Intent::Quit,
            Intent::Help,
            Intent::NextView,
            Intent::PrevView,
            Intent::ShowView(View::Queue),
            Intent::ShowView(View::All),
            Intent::ShowView(View::Drills),
            Intent::ShowView(View::Audit),
            Intent::ShowView(View::Clusters),
            Intent::MoveDown,
            Intent::MoveUp,
            Intent::PageDown,
            Intent::PageUp,
            Intent::First,
            Intent::Last,
            Intent::ToggleDetail,
            Intent::DetailDown,
            Intent::DetailUp,
            Intent::StartFilter,
            Intent::CycleSort,
            Intent::Export,
            Intent::ReverseSort,
            Intent::CompareRuns,
            Intent::OpenOperation,
            Intent::ToggleMark,
            Intent::SelectMatching,
            Intent::Probe,
            Intent::Drill,
            Intent::Decide(Applied),
            Intent::Decide(NotApplied),
            Intent::Decide(RetrySameKey),
            Intent::Decide(CancelRetry),
            Intent::Undo,
            Intent::Reload,
            Intent::Back,
            Intent::Accept,
            Intent::Confirm,
            Intent::NextField,
            Intent::PrevField,
            Intent::DeleteChar,
            Intent::ToggleOverride,
        ]
    };

    /// Whether the intent does anything in `view`. The one place that says
    /// so: the footer and help advertise only these, and `update` obeys
    /// only these, so a hint cannot offer a key the view ignores.
    pub fn acts_in(self, view: View) -> bool {
        match self {
            Intent::ToggleMark
            | Intent::SelectMatching
            | Intent::Probe
            | Intent::Drill
            | Intent::Decide(_)
            | Intent::Undo => view.lists_operations(),
            // The audit trail and the clusters have no filter; the lists
            // and the drills do.
            Intent::StartFilter => !matches!(view, View::Audit | View::Clusters),
            Intent::CycleSort => view == View::Drills || view.lists_operations(),
            Intent::ReverseSort => view.lists_operations(),
            Intent::CompareRuns | Intent::OpenOperation => view == View::Drills,
            // Enter on a cluster filters the queue to it; there is no
            // detail to scroll.
            Intent::DetailDown | Intent::DetailUp => view != View::Clusters,
            // The views with rows of the ledger; the drills come from files.
            Intent::Export => matches!(view, View::Queue | View::All | View::Audit),
            _ => true,
        }
    }

    /// Intents that exist to record something: a decision (marks choose
    /// its rows), a probe or a drill's verdict. A read-only console offers none.
    pub fn decides(self) -> bool {
        matches!(
            self,
            Intent::ToggleMark
                | Intent::SelectMatching
                | Intent::Probe
                | Intent::Drill
                | Intent::Decide(_)
                | Intent::Undo
        )
    }

    /// The intent's words in `mode` on `view`: Enter opens a detail in
    /// every view but the Clusters, where it filters the queue to the
    /// group under the cursor, and the footer and help must say so.
    pub fn words_in(self, mode: KeyMode, view: View) -> Option<Words> {
        match (self, view) {
            (Intent::ToggleDetail, View::Clusters) => Some(words(
                "toggle_detail",
                "filter queue",
                "show the queue filtered to the group under the cursor",
            )),
            _ => self.words(mode),
        }
    }

    /// The bindable intent a keymap file calls `name`.
    pub fn named(name: &str) -> Option<Intent> {
        Intent::BINDABLE
            .into_iter()
            .find(|i| i.words(KeyMode::Any).is_some_and(|w| w.name == name))
    }

    /// The intent's words in `mode` (Esc means something different in
    /// each); `None` for intents no keymap line can name: the mouse's
    /// clicks and wheel, a typed character, and decision kinds no key records.
    pub fn words(self, mode: KeyMode) -> Option<Words> {
        Some(match self {
            Intent::Quit => words("quit", "quit", "quit the console"),
            Intent::Help => words("help", "help", "this help"),
            Intent::NextView => words("next_view", "next view", "next view"),
            Intent::PrevView => words("prev_view", "prev view", "previous view"),
            Intent::ShowView(view) => view_words(view),
            Intent::MoveDown => words("move_down", "down", "next row"),
            Intent::MoveUp => words("move_up", "up", "previous row"),
            Intent::PageDown => words("page_down", "page down", "a screen down"),
            Intent::PageUp => words("page_up", "page up", "a screen up"),
            Intent::First => words("first", "newest", "newest row"),
            Intent::Last => words("last", "oldest", "oldest row"),
            Intent::ToggleDetail => words("toggle_detail", "detail", "open or close the detail"),
            Intent::DetailDown => words("detail_down", "scroll detail", "scroll the detail down"),
            Intent::DetailUp => words("detail_up", "scroll detail", "scroll the detail up"),
            Intent::StartFilter => words("filter", "filter", "filter the list (live as you type)"),
            Intent::CycleSort => words("cycle_sort", "sort", "sort the rows by the next column"),
            Intent::ReverseSort => words(
                "reverse_sort",
                "reverse",
                "reverse the operations' order (same column)",
            ),
            Intent::Export => EXPORT,
            Intent::CompareRuns => words("compare_runs", "compare", "drill runs side by side"),
            Intent::OpenOperation => words("open_operation", "to ledger", "the case's operation"),
            Intent::ToggleMark => words(
                "toggle_mark",
                "mark",
                "mark or unmark the row; decisions apply to marked rows",
            ),
            Intent::SelectMatching => words(
                "select_matching",
                "all matching",
                "select every row the filter matches; a decision then applies to all",
            ),
            Intent::Probe => PROBE,
            Intent::Drill => DRILL,
            Intent::Decide(kind) => return decide_words(kind),
            Intent::Undo => words("undo", "undo", "undo my last decision of this session"),
            Intent::Reload => words("reload", "reload", "reread the ledger"),
            Intent::Back => back_words(mode),
            Intent::Accept => words(
                "accept",
                "keep filter",
                "keep the filter and return to the list",
            ),
            Intent::Confirm if mode == KeyMode::Prompt => WRITE_EXPORT,
            Intent::Confirm => words(
                "confirm",
                "record",
                "record the decision if every check passes",
            ),
            Intent::NextField => words("next_field", "next field", "next field"),
            Intent::PrevField => words("prev_field", "prev field", "previous field"),
            Intent::DeleteChar => words("delete_char", "delete", "delete the last character"),
            Intent::ToggleOverride => words(
                "toggle_override",
                "override",
                "override a committed effect (needs a note)",
            ),
            Intent::Click { .. } | Intent::Wheel { .. } | Intent::Input(_) => return None,
        })
    }
}

/// What a decision key is called; `None` for a kind no key records
/// (reopening is `u`'s, through undo).
fn decide_words(kind: DecisionKind) -> Option<Words> {
    use DecisionKind::*;
    Some(match kind {
        Applied => words(
            "decide_applied",
            "applied",
            "record applied: the effect exists",
        ),
        NotApplied => words(
            "decide_not_applied",
            "not applied",
            "record not applied: evidence that no effect occurred",
        ),
        RetrySameKey => words(
            "decide_retry",
            "retry",
            "ask a worker to retry with the same key",
        ),
        CancelRetry => words(
            "decide_cancel_retry",
            "cancel retry",
            "cancel a retry still queued",
        ),
        Reopen => return None,
    })
}

/// Esc means something different in each mode.
fn back_words(mode: KeyMode) -> Words {
    match mode {
        KeyMode::Form => words("back", "cancel", "cancel: nothing is recorded"),
        KeyMode::Filter => words("back", "clear filter", "clear the filter"),
        KeyMode::Help => words("back", "close", "close help"),
        KeyMode::Prompt => words("back", "cancel", "cancel: nothing is written"),
        KeyMode::Any | KeyMode::List => words(
            "back",
            "back",
            "close the detail, clear marks, then the filter",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_bindable_intent_has_words_and_a_unique_name() {
        let mut names: Vec<&str> = Intent::BINDABLE
            .iter()
            .map(|i| i.words(KeyMode::List).map_or("", |w| w.name))
            .collect();
        assert!(!names.contains(&""), "an intent without words: {names:?}");
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Intent::BINDABLE.len());
        for name in names {
            assert_eq!(
                Intent::named(name)
                    .and_then(|i| i.words(KeyMode::List))
                    .map(|w| w.name),
                Some(name)
            );
        }
    }

    #[test]
    fn esc_says_what_it_does_in_each_mode() {
        let hint = |mode| Intent::Back.words(mode).map(|w| w.hint);
        assert_eq!(hint(KeyMode::Form), Some("cancel"));
        assert_eq!(hint(KeyMode::Filter), Some("clear filter"));
        assert_eq!(hint(KeyMode::Help), Some("close"));
    }
}
