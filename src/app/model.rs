//! The console's model as plain data: [`App`] and the state it is made of.
//! No database handle, channel or clock lives here; what changes it is
//! `update` (an intent) and `apply` (a message from the shell).

use std::collections::BTreeSet;

use chrono::{DateTime, Utc};
use ratatui::layout::Rect;

pub use super::access::LedgerAccess;
use super::clusters::{ClustersPane, TOP_GROUPS};
use super::drills::loaded::DrillsPane;
use super::effect::{Count, Effect, PageSource, Read, ScanRead, Ticket};
use super::form::DecisionForm;
use super::history::QueueHistory;
use super::layout;
use super::msg::PageRows;
use super::pane::{ListId, Pane, PaneCursor};
use super::reading::Reading;
use super::scan::ListScan;
use super::window::{Fetch, Merge, Window};
use crate::console::input::intent::{KeyMode, View};
use crate::console::input::keymap::Keymap;
use crate::domain::{Decision, DecisionReceipt, OperationDetail, OperationId, OperationRow};
use crate::query::Query;
use crate::store::{Progress, StateCounts};

/// What keys mean right now, with what that mode works on: the form is
/// open exactly while the mode is the form's (or help over it), and the
/// export's name exists only while it is typed.
#[derive(Debug, Clone, PartialEq)]
pub enum Mode {
    Normal,
    Filter,
    /// The decision form, open.
    Form(FormSlot),
    /// The help popup, over the form it was opened on: Esc goes back to it.
    Help {
        form: Option<FormSlot>,
    },
    /// Typing the export's file name.
    Export {
        name: String,
    },
}

/// The form the decision popup shows.
#[derive(Debug, Clone, PartialEq)]
pub enum FormSlot {
    /// Being filled in.
    Editing(Box<DecisionForm>),
    /// Confirmed: what is shown is [`App::recording`], the form as it was
    /// sent, which no key changes any more.
    Recording,
}

impl Mode {
    pub fn key_mode(&self) -> KeyMode {
        match self {
            Mode::Normal => KeyMode::List,
            Mode::Filter => KeyMode::Filter,
            Mode::Form(_) => KeyMode::Form,
            Mode::Help { .. } => KeyMode::Help,
            Mode::Export { .. } => KeyMode::Prompt,
        }
    }

    /// The popup's form, also under the help popup.
    pub fn form_slot(&self) -> Option<&FormSlot> {
        match self {
            Mode::Form(slot) | Mode::Help { form: Some(slot) } => Some(slot),
            _ => None,
        }
    }

    /// The form being filled in, if one is (not one being recorded).
    pub(super) fn form_mut(&mut self) -> Option<&mut DecisionForm> {
        match self {
            Mode::Form(FormSlot::Editing(form))
            | Mode::Help {
                form: Some(FormSlot::Editing(form)),
            } => Some(form),
            _ => None,
        }
    }

    /// Closes the form, wherever it is shown: the form's mode becomes the
    /// list's, help over it stays help over nothing.
    pub(super) fn close_form(&mut self) {
        match self {
            Mode::Form(_) => *self = Mode::Normal,
            Mode::Help { form } => *form = None,
            Mode::Normal | Mode::Filter | Mode::Export { .. } => {}
        }
    }
}

/// One operation list: its base query, the operator's filter, the rows held
/// and the marks.
#[derive(Debug, Clone, PartialEq)]
pub struct ListState {
    pub base: Query,
    pub filter_text: String,
    /// The filter text does not parse; the list keeps the last good query.
    pub filter_error: Option<String>,
    pub query: Query,
    pub window: Window<OperationRow>,
    pub marks: BTreeSet<OperationId>,
    /// Matching operations, from the worker; `None` until it answers.
    pub count: Option<i64>,
    /// The filter is read a slice of ids at a time, the ledger having no
    /// index for it: how far that got. Its count is the scan's.
    pub scan: Option<ListScan>,
}

impl ListState {
    /// The list's count as shown: its scan's while one reads the filter,
    /// else the counter's (`approx` before it when estimated).
    pub fn count_text(&self, approx: &str) -> Option<String> {
        match &self.scan {
            Some(scan) => Some(scan.count()),
            None => self.count.map(|n| format!("{approx}{n}")),
        }
    }

    fn new(base: Query) -> Self {
        ListState {
            query: base.clone(),
            base,
            filter_text: String::new(),
            filter_error: None,
            window: Window::default(),
            marks: BTreeSet::new(),
            count: None,
            scan: None,
        }
    }
}

/// The operation shown in the detail pane.
#[derive(Debug, Clone, PartialEq)]
pub struct DetailPane {
    pub id: OperationId,
    /// `None` while loading.
    pub detail: Option<Box<OperationDetail>>,
    pub scroll: u16,
}

/// The reread that other processes' commits ask for, coalesced: a burst of
/// commits costs one reread of the visible window at a time, however many
/// arrive while it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Refresh {
    /// The ticket of the page that reread is waiting for.
    pub in_flight: Option<Ticket>,
    /// More commits arrived meanwhile: one more reread when it answers.
    pub pending: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    pub text: String,
    pub error: bool,
    /// Said of a fault found in the background (see
    /// [`App::background_error`]), not of what the operator asked.
    pub background: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct App {
    pub ledger_path: String,
    pub operator: String,
    pub access: LedgerAccess,
    /// Why the ledger is read-only unasked (a file not writable, no
    /// primary reachable), for the header.
    pub read_only_reason: Option<String>,
    /// False under NO_COLOR: the theme uses only bold, dim and reverse.
    pub color: bool,
    /// The console takes clicks and the wheel (not with `--no-mouse`).
    pub mouse: bool,
    pub keymap: Keymap,
    pub now: DateTime<Utc>,
    pub size: (u16, u16),
    pub view: View,
    pub mode: Mode,
    pub queue: ListState,
    pub all: ListState,
    pub audit: Window<Decision>,
    pub drills: DrillsPane,
    pub clusters: ClustersPane,
    pub detail_open: bool,
    pub detail: Option<DetailPane>,
    pub counts: Option<StateCounts>,
    /// The unfiltered queue's size at each count of the last hour.
    pub queue_history: QueueHistory,
    /// When another process last wrote the ledger.
    pub last_change: Option<DateTime<Utc>>,
    /// Why live polling failed, while it does; the header says "not live".
    pub live_error: Option<String>,
    /// How each ledger of a group stands (empty for one ledger): the
    /// header names the ones behind, read-only or not read.
    pub members: Vec<crate::domain::MemberState>,
    /// How ids are said to the operator (`#pay:14` in a group).
    pub labels: crate::domain::IdLabels,
    /// Why the path no longer names the ledger that was opened, while it
    /// does: the header says so and decisions are refused.
    pub file_problem: Option<String>,
    /// Rereads asked for by other processes' commits.
    pub refresh: Refresh,
    /// Which filters have an index, and whether the read model catches up.
    pub reading: Reading,
    /// The ticket the next page request gets.
    pub next_ticket: Ticket,
    pub status: Option<Status>,
    /// Decisions this operator recorded in this session, oldest first: what
    /// `u` undoes.
    pub session: Vec<DecisionReceipt>,
    /// The form whose drafts the shell is recording, kept so a busy ledger
    /// can give it back to the operator as it was. While it is there, the
    /// popup shows it ([`FormSlot::Recording`]) and no other form opens.
    pub recording: Option<DecisionForm>,
    /// `*`: every row a list's query matches, to decide on all at once.
    pub selection: Option<super::bulk::Selection>,
    /// `p` on many rows: listing them, waiting for the confirming `p`, or
    /// running their lookups.
    pub probing: Option<super::probe::Probing>,
    pub quit: bool,
}

impl App {
    pub fn new(
        ledger_path: String,
        operator: String,
        read_only: bool,
        keymap: Keymap,
        now: DateTime<Utc>,
    ) -> App {
        App {
            ledger_path,
            operator,
            access: if read_only {
                LedgerAccess::ReadOnly
            } else {
                LedgerAccess::ReadWrite
            },
            read_only_reason: None,
            members: Vec::new(),
            labels: crate::domain::IdLabels::default(),
            color: true,
            mouse: true,
            keymap,
            now,
            size: (80, 24),
            view: View::Queue,
            mode: Mode::Normal,
            queue: ListState::new(Query::queue()),
            all: ListState::new(Query::default()),
            audit: Window::default(),
            drills: DrillsPane::default(),
            clusters: ClustersPane::default(),
            detail_open: false,
            queue_history: QueueHistory::default(),
            detail: None,
            counts: None,
            last_change: None,
            live_error: None,
            file_problem: None,
            refresh: Refresh::default(),
            reading: Reading::default(),
            next_ticket: 1,
            status: None,
            session: Vec::new(),
            recording: None,
            selection: None,
            probing: None,
            quit: false,
        }
    }

    pub fn list(&self, id: ListId) -> &ListState {
        match id {
            ListId::Queue => &self.queue,
            ListId::All => &self.all,
        }
    }

    pub(super) fn list_mut(&mut self, id: ListId) -> &mut ListState {
        match id {
            ListId::Queue => &mut self.queue,
            ListId::All => &mut self.all,
        }
    }

    /// The decision form on screen, also under the help popup: the one
    /// being filled in, or the one being recorded.
    pub fn form(&self) -> Option<&DecisionForm> {
        match self.mode.form_slot()? {
            FormSlot::Editing(form) => Some(form),
            FormSlot::Recording => self.recording.as_ref(),
        }
    }

    /// Enter passed every check: the form being filled in becomes the one
    /// being recorded, still shown (Esc hides it) but no longer edited.
    pub(super) fn start_recording(&mut self) {
        if let Mode::Form(slot) = &mut self.mode
            && let FormSlot::Editing(form) = std::mem::replace(slot, FormSlot::Recording)
        {
            self.recording = Some(*form);
        }
    }

    /// No decision or probe can be written now (adopting included).
    pub fn read_only(&self) -> bool {
        self.access != LedgerAccess::ReadWrite
    }

    /// The adoption's step running, while the writer adopts the ledger.
    pub fn adopting(&self) -> Option<&Progress> {
        self.access.adopting()
    }

    /// The export's file name as typed; empty unless the prompt is open.
    pub fn export_name(&self) -> &str {
        match &self.mode {
            Mode::Export { name } => name,
            _ => "",
        }
    }

    /// The pane on screen.
    pub fn pane(&self) -> Pane {
        Pane::of(self.view)
    }

    /// The operation list on screen, if the view is one.
    pub fn current_list(&self) -> Option<&ListState> {
        self.pane().list().map(|id| self.list(id))
    }

    pub fn screen(&self) -> layout::Screen {
        let area = Rect::new(0, 0, self.size.0, self.size.1);
        layout::screen(area, self.detail_shown())
    }

    /// Whether the pane on screen has its detail open: an operation's, or
    /// the Drills view's open case.
    pub fn detail_shown(&self) -> bool {
        match self.pane() {
            Pane::Drills => self.drills.open,
            Pane::Clusters => false,
            Pane::Operations(_) | Pane::Audit => self.detail_open,
        }
    }

    /// Data rows visible in the list pane.
    pub fn visible_rows(&self) -> usize {
        layout::list_rows(self.screen().list)
    }

    pub(super) fn info(&mut self, text: impl Into<String>) {
        self.status = Some(Status {
            text: text.into(),
            error: false,
            background: false,
        });
    }

    pub(super) fn error(&mut self, text: impl Into<String>) {
        self.status = Some(Status {
            text: text.into(),
            error: true,
            background: false,
        });
    }

    /// A fault found in the background that the header goes on showing
    /// (live updates lost, writes blocked): said on the status line unless
    /// an error of what the operator asked is there. One network fault
    /// fails the operator's read and the watcher's poll within the same
    /// second, and the read's words (which server, what to do) are the ones
    /// to keep; the header says the rest.
    pub(super) fn background_error(&mut self, text: impl Into<String>) {
        if self
            .status
            .as_ref()
            .is_some_and(|s| s.error && !s.background)
        {
            return;
        }
        self.status = Some(Status {
            text: text.into(),
            error: true,
            background: true,
        });
    }
}

/// How the pane on screen is scrolled and paged, whichever it is.
impl App {
    pub(super) fn cursor(&self, pane: Pane) -> &dyn PaneCursor {
        match pane {
            Pane::Operations(id) => &self.list(id).window,
            Pane::Audit => &self.audit,
            Pane::Drills => &self.drills,
            Pane::Clusters => &self.clusters,
        }
    }

    pub(super) fn cursor_mut(&mut self, pane: Pane) -> &mut dyn PaneCursor {
        match pane {
            Pane::Operations(id) => &mut self.list_mut(id).window,
            Pane::Audit => &mut self.audit,
            Pane::Drills => &mut self.drills,
            Pane::Clusters => &mut self.clusters,
        }
    }

    /// The effect that loads a page of `pane`, with a new ticket; `None`
    /// for a pane not read from the ledger. A request that replaces the
    /// rows makes every older request of the pane out of date.
    pub(super) fn load_page(
        &mut self,
        pane: Pane,
        fetch: Fetch,
        merge: Merge,
        limit: usize,
    ) -> Option<Effect> {
        let source = match pane {
            // Older rows of a scanned filter: the scan goes on from where
            // it stopped.
            Pane::Operations(list) if merge == Merge::Append && self.list(list).scan.is_some() => {
                let scan = self.list(list).scan.filter(|s| !s.asked)?;
                PageSource::Scan {
                    list,
                    query: self.list(list).query.clone(),
                    read: ScanRead::Step(Some(scan.place.filter(|p| !p.done())?)),
                }
            }
            Pane::Operations(list) => PageSource::Operations {
                list,
                query: self.list(list).query.clone(),
                sort: self.list(list).window.sort,
            },
            Pane::Audit => PageSource::Audit,
            Pane::Drills | Pane::Clusters => return None,
        };
        Some(self.page_request(pane, source, fetch, merge, limit))
    }

    /// The effect that reads `source` into `pane`, with a new ticket.
    pub(super) fn page_request(
        &mut self,
        pane: Pane,
        source: PageSource,
        fetch: Fetch,
        merge: Merge,
        limit: usize,
    ) -> Effect {
        let ticket = self.next_ticket;
        self.next_ticket += 1;
        if matches!(merge, Merge::Replace { .. }) {
            // The reader drops every older page for it, slices included.
            for scan in [&mut self.queue.scan, &mut self.all.scan]
                .into_iter()
                .flatten()
            {
                scan.asked = false;
            }
            if let Some(generation) = self.generation_mut(pane) {
                *generation = ticket;
            }
        }
        if let PageSource::Scan {
            list,
            read: ScanRead::Step(_),
            ..
        } = &source
            && let Some(scan) = self.list_mut(*list).scan.as_mut()
        {
            scan.asked = true;
        }
        Effect::Read(Read::LoadPage {
            ticket,
            source: Box::new(source),
            fetch,
            merge,
            limit,
        })
    }

    fn generation_mut(&mut self, pane: Pane) -> Option<&mut Ticket> {
        match pane {
            Pane::Operations(id) => Some(&mut self.list_mut(id).window.generation),
            Pane::Audit => Some(&mut self.audit.generation),
            Pane::Drills | Pane::Clusters => None,
        }
    }

    /// Puts a loaded page into its pane, unless a newer request replaced
    /// the pane's rows since it was asked for. Says whether it was taken.
    pub(super) fn merge_page(
        &mut self,
        ticket: Ticket,
        fetch: Fetch,
        merge: Merge,
        limit: usize,
        rows: PageRows,
    ) -> bool {
        if self
            .generation_mut(rows.pane())
            .is_some_and(|generation| ticket < *generation)
        {
            return false;
        }
        let height = self.visible_rows();
        match rows {
            PageRows::Operations { list, rows } => {
                self.list_mut(list)
                    .window
                    .merge(fetch, merge, rows, limit, height);
            }
            PageRows::Audit(rows) => self.audit.merge(fetch, merge, rows, limit, height),
            // A scan's rows go where its place says (`filtering::scan_answered`).
            PageRows::Scanned { .. } => return false,
        }
        true
    }

    /// `≈` when `list`'s count is the database's estimate: an unfiltered
    /// list is counted by the state counts' total (see `effects::count`),
    /// which PostgreSQL estimates on a large ledger; empty otherwise.
    pub fn approx(&self, list: &ListState) -> &'static str {
        let estimated = self.counts.as_ref().is_some_and(|c| c.estimated);
        if estimated && list.query.is_empty() {
            "≈"
        } else {
            ""
        }
    }

    /// Each view's tab as the tab bar draws it, in order: its key, its
    /// name and, for a list, its count. The mouse finds a tab by the same
    /// words ([`layout::tab_at`]).
    pub fn tab_labels(&self) -> Vec<(View, String)> {
        View::ALL
            .iter()
            .enumerate()
            .map(|(i, view)| {
                let count = Pane::of(*view)
                    .list()
                    .map(|id| self.list(id))
                    .and_then(|l| l.count_text(self.approx(l)));
                let label = match count {
                    Some(n) => format!(" {} {} {n} ", i + 1, view.title()),
                    None => format!(" {} {} ", i + 1, view.title()),
                };
                (*view, label)
            })
            .collect()
    }

    /// The counts the header shows, for the lists' current queries.
    /// A list whose filter is scanned is counted by its scan, never by a
    /// count that would read the whole ledger again.
    pub(super) fn count_request(&self) -> Effect {
        Effect::Count(Count::Lists(
            [ListId::Queue, ListId::All]
                .into_iter()
                .filter(|id| self.list(*id).scan.is_none())
                .map(|id| (id, self.list(id).query.clone()))
                .collect(),
        ))
    }

    /// The grouping the Clusters view shows, over the queue's own query
    /// (its base: the operator's filter narrows the Queue, not the view
    /// that chooses it).
    pub(super) fn clusters_request(&self) -> Effect {
        Effect::Count(Count::Clusters {
            query: self.queue.base.clone(),
            top: TOP_GROUPS,
        })
    }

    /// The operation under the cursor of the pane on screen: a list's row,
    /// or the operation an audit row decided.
    pub fn selected_operation(&self) -> Option<OperationId> {
        match self.pane() {
            Pane::Operations(id) => self.list(id).window.selected().map(|r| r.id),
            Pane::Audit => self.audit.selected().map(|d| d.op_id),
            Pane::Drills | Pane::Clusters => None,
        }
    }
}
