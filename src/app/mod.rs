//! The console's model: plain data ([`App`]), what the operator or the shell
//! means ([`Action`]), and the pure [`update`] that changes the model and
//! says what the shell must do ([`Effect`]). Nothing here touches the
//! terminal, the clock or the ledger: `now`, pages and results arrive as
//! actions, so every behaviour is testable from a key script.

pub mod form;
pub mod layout;
#[cfg(test)]
pub(crate) mod testkit;
pub mod window;

use std::collections::BTreeSet;

use chrono::{DateTime, Utc};
use ratatui::layout::Rect;

use crate::domain::{
    Decision, DecisionDraft, DecisionId, DecisionKind, DecisionReceipt, OperationDetail,
    OperationId, OperationRow,
};
use crate::keymap::{KeyMode, Keymap};
use crate::query::Query;
use crate::store::StateCounts;
use form::DecisionForm;
use window::{Fetch, Merge, PAGE, Window};

/// The screens, in Tab order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum View {
    Queue,
    All,
    Drills,
    Audit,
}

impl View {
    pub const ALL: [View; 4] = [View::Queue, View::All, View::Drills, View::Audit];

    pub fn title(self) -> &'static str {
        match self {
            View::Queue => "Queue",
            View::All => "All",
            View::Drills => "Drills",
            View::Audit => "Audit",
        }
    }

    fn list(self) -> Option<ListId> {
        match self {
            View::Queue => Some(ListId::Queue),
            View::All => Some(ListId::All),
            _ => None,
        }
    }

    /// Views whose rows name an operation, so Enter can show its detail:
    /// the two lists, and the audit trail (a decision's operation).
    pub fn shows_detail(self) -> bool {
        matches!(self, View::Queue | View::All | View::Audit)
    }
}

/// The two operation lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListId {
    Queue,
    All,
}

/// What keys mean right now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Normal,
    Filter,
    Form,
    Help,
}

impl Mode {
    pub fn key_mode(self) -> KeyMode {
        match self {
            Mode::Normal => KeyMode::List,
            Mode::Filter => KeyMode::Filter,
            Mode::Form => KeyMode::Form,
            Mode::Help => KeyMode::Help,
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
}

impl ListState {
    fn new(base: Query) -> Self {
        ListState {
            query: base.clone(),
            base,
            filter_text: String::new(),
            filter_error: None,
            window: Window::default(),
            marks: BTreeSet::new(),
            count: None,
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

/// A drill file given with `--drill`, and what reading it produced.
#[derive(Debug, Clone, PartialEq)]
pub struct DrillFile {
    pub path: String,
    /// Lines to show, already worded by the drill analysis; `Err` says why
    /// the file could not be read.
    pub summary: Result<Vec<String>, String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    pub text: String,
    pub error: bool,
}

/// How one decision the shell tried to record ended.
#[derive(Debug, Clone, PartialEq)]
pub enum DecisionOutcome {
    Recorded(DecisionReceipt),
    /// A rule refused it; nothing was written.
    Refused {
        rule: String,
        reason: String,
    },
    /// Someone else changed the operation first; nothing was written.
    Conflict {
        state: String,
        found: i64,
        last_writer: Option<String>,
    },
    Failed(String),
}

#[derive(Debug, Clone, PartialEq)]
pub struct DecisionResult {
    pub op: OperationId,
    pub outcome: DecisionOutcome,
}

/// What the operator meant (from the keymap) or what the shell learned.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    Quit,
    Help,
    NextView,
    PrevView,
    ShowView(View),
    MoveDown,
    MoveUp,
    /// Mouse wheel: rows to move (negative is up).
    Scroll(isize),
    PageDown,
    PageUp,
    First,
    Last,
    ToggleDetail,
    DetailDown,
    DetailUp,
    StartFilter,
    ToggleMark,
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
    Input(char),
    /// The shell's clock, each tick.
    Tick(DateTime<Utc>),
    Resize(u16, u16),
    PageLoaded {
        list: ListId,
        fetch: Fetch,
        merge: Merge,
        limit: usize,
        rows: Vec<OperationRow>,
    },
    AuditLoaded {
        fetch: Fetch,
        merge: Merge,
        limit: usize,
        rows: Vec<Decision>,
    },
    DetailLoaded(Box<OperationDetail>),
    FormDetailsLoaded(Vec<OperationDetail>),
    DecisionsRecorded(Vec<DecisionResult>),
    CountsLoaded {
        counts: StateCounts,
        lists: Vec<(ListId, i64)>,
    },
    /// Another process committed to the ledger.
    LedgerChanged,
    /// Asking the ledger whether it changed failed: the screen may be stale.
    LiveLost(String),
    /// The ledger answers again after [`Action::LiveLost`].
    LiveRestored,
    LoadFailed(String),
    /// Something worth telling that is not a failure (the ledger was
    /// adopted or migrated on open).
    Notice(String),
}

impl Action {
    /// Whether the operator pressed something (rather than the shell
    /// reporting a result or the clock ticking).
    pub fn is_from_operator(&self) -> bool {
        !matches!(
            self,
            Action::Tick(_)
                | Action::Resize(..)
                | Action::PageLoaded { .. }
                | Action::AuditLoaded { .. }
                | Action::DetailLoaded(_)
                | Action::FormDetailsLoaded(_)
                | Action::DecisionsRecorded(_)
                | Action::CountsLoaded { .. }
                | Action::LedgerChanged
                | Action::LiveLost(_)
                | Action::LiveRestored
                | Action::LoadFailed(_)
                | Action::Notice(_)
        )
    }
}

/// What the shell must do for the model.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    LoadPage {
        list: ListId,
        query: Query,
        fetch: Fetch,
        merge: Merge,
        limit: usize,
    },
    LoadAudit {
        fetch: Fetch,
        merge: Merge,
        limit: usize,
    },
    LoadDetail(OperationId),
    LoadFormDetails(Vec<OperationId>),
    RecordDecisions(Vec<DecisionDraft>),
    /// Off the screen path: the worker answers with `CountsLoaded`.
    Count(Vec<(ListId, Query)>),
}

#[derive(Debug, Clone, PartialEq)]
pub struct App {
    pub ledger_path: String,
    pub operator: String,
    pub read_only: bool,
    /// False under NO_COLOR: the theme uses only bold, dim and reverse.
    pub color: bool,
    pub keymap: Keymap,
    pub now: DateTime<Utc>,
    pub size: (u16, u16),
    pub view: View,
    pub mode: Mode,
    pub queue: ListState,
    pub all: ListState,
    pub audit: Window<Decision>,
    pub drills: Vec<DrillFile>,
    /// First line of the Drills view on screen.
    pub drill_scroll: u16,
    pub detail_open: bool,
    pub detail: Option<DetailPane>,
    pub form: Option<DecisionForm>,
    pub counts: Option<StateCounts>,
    /// When the ledger last changed under us (another process wrote).
    pub last_change: Option<DateTime<Utc>>,
    /// Why live polling failed, while it does; the header says "not live".
    pub live_error: Option<String>,
    pub status: Option<Status>,
    /// Decisions this operator recorded in this session, oldest first: what
    /// `u` undoes.
    pub session: Vec<DecisionReceipt>,
    /// The session decision an undo form in flight compensates.
    pub pending_undo: Option<DecisionId>,
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
            read_only,
            color: true,
            keymap,
            now,
            size: (80, 24),
            view: View::Queue,
            mode: Mode::Normal,
            queue: ListState::new(Query::queue()),
            all: ListState::new(Query::default()),
            audit: Window::default(),
            drills: Vec::new(),
            drill_scroll: 0,
            detail_open: false,
            detail: None,
            form: None,
            counts: None,
            last_change: None,
            live_error: None,
            status: None,
            session: Vec::new(),
            pending_undo: None,
            quit: false,
        }
    }

    pub fn list(&self, id: ListId) -> &ListState {
        match id {
            ListId::Queue => &self.queue,
            ListId::All => &self.all,
        }
    }

    fn list_mut(&mut self, id: ListId) -> &mut ListState {
        match id {
            ListId::Queue => &mut self.queue,
            ListId::All => &mut self.all,
        }
    }

    /// The operation list on screen, if the view is one.
    pub fn current_list(&self) -> Option<&ListState> {
        self.view.list().map(|id| self.list(id))
    }

    pub fn screen(&self) -> layout::Screen {
        let area = Rect::new(0, 0, self.size.0, self.size.1);
        layout::screen(area, self.detail_open && self.view.shows_detail())
    }

    /// Data rows visible in the list pane.
    pub fn visible_rows(&self) -> usize {
        layout::list_rows(self.screen().list)
    }

    /// Which operations a decision applies to: the marked rows, or the row
    /// under the cursor.
    pub fn decision_targets(&self) -> Vec<OperationId> {
        let Some(list) = self.current_list() else {
            return Vec::new();
        };
        if list.marks.is_empty() {
            list.window.selected().map(|r| r.id).into_iter().collect()
        } else {
            list.marks.iter().rev().copied().collect()
        }
    }

    fn info(&mut self, text: impl Into<String>) {
        self.status = Some(Status {
            text: text.into(),
            error: false,
        });
    }

    fn error(&mut self, text: impl Into<String>) {
        self.status = Some(Status {
            text: text.into(),
            error: true,
        });
    }
}

/// Applies `action` to the model and returns what the shell must do.
pub fn update(app: &mut App, action: Action) -> Vec<Effect> {
    // A refusal or conflict stays on screen until the operator acts, then
    // gets out of the way.
    if action.is_from_operator() && app.status.as_ref().is_some_and(|s| s.error) {
        app.status = None;
    }
    let effects = apply(app, action);
    // Any action may change the list pane's height (detail opened, resize,
    // a page replaced): keep the cursor on screen whatever happened.
    let height = app.visible_rows();
    if let Some(id) = app.view.list() {
        app.list_mut(id).window.scroll_to_cursor(height);
    } else {
        app.audit.scroll_to_cursor(height);
    }
    effects
}

fn apply(app: &mut App, action: Action) -> Vec<Effect> {
    match action {
        Action::Tick(now) => {
            app.now = now;
            Vec::new()
        }
        Action::Resize(w, h) => {
            app.size = (w, h);
            move_cursor(app, 0)
        }
        Action::Quit => {
            app.quit = true;
            Vec::new()
        }
        Action::Help => {
            app.mode = Mode::Help;
            Vec::new()
        }
        Action::NextView | Action::PrevView => {
            let at = View::ALL.iter().position(|v| *v == app.view).unwrap_or(0);
            let n = View::ALL.len();
            let next = if action == Action::NextView {
                (at + 1) % n
            } else {
                (at + n - 1) % n
            };
            show_view(app, View::ALL[next])
        }
        Action::ShowView(view) => show_view(app, view),
        Action::MoveDown => move_cursor(app, 1),
        Action::MoveUp => move_cursor(app, -1),
        Action::Scroll(n) => move_cursor(app, n),
        Action::PageDown => {
            let n = app.visible_rows() as isize;
            move_cursor(app, n)
        }
        Action::PageUp => {
            let n = app.visible_rows() as isize;
            move_cursor(app, -n)
        }
        Action::First => jump(app, Fetch::First),
        Action::Last => jump(app, Fetch::Last),
        Action::ToggleDetail => {
            if !app.view.shows_detail() {
                return Vec::new();
            }
            app.detail_open = !app.detail_open;
            if app.detail_open {
                follow_cursor(app, true)
            } else {
                Vec::new()
            }
        }
        Action::DetailDown | Action::DetailUp => {
            if let Some(d) = app.detail.as_mut().filter(|_| app.detail_open) {
                d.scroll = if action == Action::DetailDown {
                    d.scroll.saturating_add(3)
                } else {
                    d.scroll.saturating_sub(3)
                };
            }
            Vec::new()
        }
        Action::StartFilter => {
            if app.view.list().is_some() {
                app.mode = Mode::Filter;
            }
            Vec::new()
        }
        Action::Accept => {
            app.mode = Mode::Normal;
            Vec::new()
        }
        Action::Input(c) => type_char(app, Some(c)),
        Action::DeleteChar => type_char(app, None),
        Action::ToggleMark => {
            let Some(id) = app.view.list() else {
                return Vec::new();
            };
            let list = app.list_mut(id);
            if let Some(row) = list.window.selected().map(|r| r.id)
                && !list.marks.remove(&row)
            {
                list.marks.insert(row);
            }
            move_cursor(app, 1)
        }
        Action::Decide(kind) => open_form(app, kind, None),
        Action::Undo => undo(app),
        Action::Reload => {
            app.info("reloaded");
            refresh(app)
        }
        Action::Back => back(app),
        Action::Confirm => confirm(app),
        Action::NextField | Action::PrevField => {
            if let Some(form) = app.form.as_mut() {
                form.cycle_focus(action == Action::NextField);
            }
            Vec::new()
        }
        Action::ToggleOverride => {
            if let Some(form) = app.form.as_mut()
                && form.fields().contains(&form::Field::Override)
            {
                form.override_committed = !form.override_committed;
            }
            Vec::new()
        }
        Action::PageLoaded {
            list,
            fetch,
            merge,
            limit,
            rows,
        } => {
            let height = app.visible_rows();
            app.list_mut(list)
                .window
                .merge(fetch, merge, rows, limit, height);
            if app.view.list() == Some(list) {
                follow_cursor(app, false)
            } else {
                Vec::new()
            }
        }
        Action::AuditLoaded {
            fetch,
            merge,
            limit,
            rows,
        } => {
            let height = app.visible_rows();
            app.audit.merge(fetch, merge, rows, limit, height);
            if app.view == View::Audit {
                follow_cursor(app, false)
            } else {
                Vec::new()
            }
        }
        Action::DetailLoaded(detail) => {
            if let Some(pane) = app.detail.as_mut()
                && pane.id == detail.operation.id
            {
                pane.detail = Some(detail);
            }
            Vec::new()
        }
        Action::FormDetailsLoaded(details) => {
            if let Some(form) = app.form.as_mut() {
                form.details_loaded(details);
            }
            Vec::new()
        }
        Action::DecisionsRecorded(results) => decisions_recorded(app, results),
        Action::CountsLoaded { counts, lists } => {
            app.counts = Some(counts);
            for (id, n) in lists {
                app.list_mut(id).count = Some(n);
            }
            Vec::new()
        }
        Action::LedgerChanged => {
            app.last_change = Some(app.now);
            refresh(app)
        }
        Action::LiveLost(message) => {
            app.error(format!(
                "live updates stopped, the screen may be stale: {message}"
            ));
            app.live_error = Some(message);
            Vec::new()
        }
        Action::LiveRestored => {
            app.live_error = None;
            app.info("live updates resumed".to_string());
            refresh(app)
        }
        Action::LoadFailed(message) => {
            app.error(message);
            Vec::new()
        }
        Action::Notice(message) => {
            app.info(message);
            Vec::new()
        }
    }
}

fn show_view(app: &mut App, view: View) -> Vec<Effect> {
    app.view = view;
    app.mode = Mode::Normal;
    refresh(app)
}

/// Rereads what is on screen in place: the current list (or the audit
/// trail), the detail, and the counts.
fn refresh(app: &mut App) -> Vec<Effect> {
    let mut effects = Vec::new();
    match app.view.list() {
        Some(id) => {
            let list = app.list(id);
            let (fetch, merge, limit) = list.window.refresh_request();
            effects.push(Effect::LoadPage {
                list: id,
                query: list.query.clone(),
                fetch,
                merge,
                limit,
            });
        }
        None if app.view == View::Audit => {
            let (fetch, merge, limit) = app.audit.refresh_request();
            effects.push(Effect::LoadAudit {
                fetch,
                merge,
                limit,
            });
        }
        None => {}
    }
    if app.detail_open
        && app.view.shows_detail()
        && let Some(pane) = &app.detail
    {
        effects.push(Effect::LoadDetail(pane.id));
    }
    effects.push(count_effect(app));
    effects
}

fn count_effect(app: &App) -> Effect {
    Effect::Count(vec![
        (ListId::Queue, app.queue.query.clone()),
        (ListId::All, app.all.query.clone()),
    ])
}

fn move_cursor(app: &mut App, delta: isize) -> Vec<Effect> {
    let height = app.visible_rows();
    match app.view.list() {
        Some(id) => {
            let list = app.list_mut(id);
            let wanted = list.window.move_by(delta, height);
            let query = list.query.clone();
            let mut effects: Vec<Effect> = wanted
                .map(|(fetch, merge)| Effect::LoadPage {
                    list: id,
                    query,
                    fetch,
                    merge,
                    limit: PAGE,
                })
                .into_iter()
                .collect();
            effects.extend(follow_cursor(app, false));
            effects
        }
        None if app.view == View::Audit => {
            let mut effects: Vec<Effect> = app
                .audit
                .move_by(delta, height)
                .map(|(fetch, merge)| Effect::LoadAudit {
                    fetch,
                    merge,
                    limit: PAGE,
                })
                .into_iter()
                .collect();
            effects.extend(follow_cursor(app, false));
            effects
        }
        None => {
            let lines: usize = app
                .drills
                .iter()
                .map(|d| d.summary.as_ref().map_or(2, Vec::len) + 1)
                .sum();
            let max = lines.saturating_sub(height) as isize;
            let at = (app.drill_scroll as isize + delta).clamp(0, max.max(0));
            app.drill_scroll = u16::try_from(at).unwrap_or(u16::MAX);
            Vec::new()
        }
    }
}

fn jump(app: &mut App, fetch: Fetch) -> Vec<Effect> {
    let merge = Merge::Replace { keep: None };
    match app.view.list() {
        Some(id) => vec![Effect::LoadPage {
            list: id,
            query: app.list(id).query.clone(),
            fetch,
            merge,
            limit: PAGE,
        }],
        None if app.view == View::Audit => vec![Effect::LoadAudit {
            fetch,
            merge,
            limit: PAGE,
        }],
        None => Vec::new(),
    }
}

/// Keeps the detail pane on the cursor's operation.
fn follow_cursor(app: &mut App, force: bool) -> Vec<Effect> {
    if !app.detail_open {
        return Vec::new();
    }
    let selected = match app.view {
        View::Audit => app.audit.selected().map(|d| d.op_id),
        _ => app
            .current_list()
            .and_then(|l| l.window.selected())
            .map(|r| r.id),
    };
    let Some(id) = selected else {
        app.detail = None;
        return Vec::new();
    };
    if !force && app.detail.as_ref().is_some_and(|d| d.id == id) {
        return Vec::new();
    }
    app.detail = Some(DetailPane {
        id,
        detail: None,
        scroll: 0,
    });
    vec![Effect::LoadDetail(id)]
}

fn type_char(app: &mut App, c: Option<char>) -> Vec<Effect> {
    match app.mode {
        Mode::Filter => {
            let Some(id) = app.view.list() else {
                return Vec::new();
            };
            let list = app.list_mut(id);
            match c {
                Some(c) => list.filter_text.push(c),
                None => {
                    list.filter_text.pop();
                }
            }
            requery(app, id)
        }
        Mode::Form => {
            if let Some(form) = app.form.as_mut() {
                let focus = form.focus;
                match (form.field_text(focus), c) {
                    (Some(text), Some(c)) => text.push(c),
                    (Some(text), None) => {
                        text.pop();
                    }
                    (None, Some(' ')) => form.override_committed = !form.override_committed,
                    (None, _) => {}
                }
                form.problem = None;
            }
            Vec::new()
        }
        _ => Vec::new(),
    }
}

/// Re-runs the list's query after the filter text changed. A filter that
/// does not parse keeps the list as it was and says why.
fn requery(app: &mut App, id: ListId) -> Vec<Effect> {
    let list = app.list_mut(id);
    match Query::parse(&list.filter_text) {
        Ok(parsed) => {
            list.filter_error = None;
            list.query = list.base.clone().and(parsed);
            list.marks.clear();
            list.count = None;
            vec![
                Effect::LoadPage {
                    list: id,
                    query: list.query.clone(),
                    fetch: Fetch::First,
                    merge: Merge::Replace { keep: None },
                    limit: PAGE,
                },
                count_effect(app),
            ]
        }
        Err(e) => {
            list.filter_error = Some(e.to_string());
            Vec::new()
        }
    }
}

fn back(app: &mut App) -> Vec<Effect> {
    match app.mode {
        Mode::Help => {
            app.mode = if app.form.is_some() {
                Mode::Form
            } else {
                Mode::Normal
            };
            Vec::new()
        }
        Mode::Form => {
            app.form = None;
            app.pending_undo = None;
            app.mode = Mode::Normal;
            app.info("cancelled: nothing recorded");
            Vec::new()
        }
        Mode::Filter => {
            app.mode = Mode::Normal;
            clear_filter(app)
        }
        Mode::Normal => {
            if app.detail_open {
                app.detail_open = false;
                return Vec::new();
            }
            let Some(id) = app.view.list() else {
                return Vec::new();
            };
            if !app.list(id).marks.is_empty() {
                app.list_mut(id).marks.clear();
                app.info("marks cleared");
                return Vec::new();
            }
            clear_filter(app)
        }
    }
}

fn clear_filter(app: &mut App) -> Vec<Effect> {
    let Some(id) = app.view.list() else {
        return Vec::new();
    };
    let list = app.list_mut(id);
    if list.filter_text.is_empty() && list.filter_error.is_none() {
        return Vec::new();
    }
    list.filter_text.clear();
    requery(app, id)
}

fn open_form(
    app: &mut App,
    kind: DecisionKind,
    undoes: Option<(DecisionId, OperationId)>,
) -> Vec<Effect> {
    if app.read_only {
        app.error("read-only: decisions are disabled (opened with --read-only or the file is not writable)");
        return Vec::new();
    }
    let targets = match undoes {
        Some((_, op)) => vec![op],
        None => app.decision_targets(),
    };
    if targets.is_empty() {
        app.error("no operation selected");
        return Vec::new();
    }
    app.pending_undo = undoes.map(|(d, _)| d);
    app.form = Some(DecisionForm::new(
        kind,
        targets.clone(),
        undoes
            .map(|(d, _)| d)
            .filter(|_| kind == DecisionKind::Reopen),
    ));
    app.mode = Mode::Form;
    vec![Effect::LoadFormDetails(targets)]
}

/// `u`: a compensating decision for this operator's last decision of the
/// session, through the same form so its checks are shown.
fn undo(app: &mut App) -> Vec<Effect> {
    let Some(last) = app.session.last().cloned() else {
        app.error("nothing to undo: no decision recorded in this session");
        return Vec::new();
    };
    let kind = match last.kind {
        DecisionKind::Applied | DecisionKind::NotApplied => DecisionKind::Reopen,
        DecisionKind::RetrySameKey => DecisionKind::CancelRetry,
        _ => {
            app.error("nothing to undo");
            return Vec::new();
        }
    };
    open_form(app, kind, Some((last.decision_id, last.op_id)))
}

fn confirm(app: &mut App) -> Vec<Effect> {
    match app.mode {
        Mode::Filter => {
            app.mode = Mode::Normal;
            Vec::new()
        }
        Mode::Form => {
            let Some(form) = app.form.as_mut() else {
                app.mode = Mode::Normal;
                return Vec::new();
            };
            match form.confirm(&app.operator, app.now) {
                Ok(drafts) => {
                    let n = drafts.len();
                    app.form = None;
                    app.mode = Mode::Normal;
                    app.info(format!("recording {n} decision{}…", plural(n)));
                    vec![Effect::RecordDecisions(drafts)]
                }
                Err(problem) => {
                    form.problem = Some(problem);
                    Vec::new()
                }
            }
        }
        _ => Vec::new(),
    }
}

fn decisions_recorded(app: &mut App, results: Vec<DecisionResult>) -> Vec<Effect> {
    let undoing = app.pending_undo.take();
    let mut recorded = Vec::new();
    let mut problems = Vec::new();
    for r in results {
        match r.outcome {
            DecisionOutcome::Recorded(receipt) => {
                for list in [&mut app.queue, &mut app.all] {
                    list.marks.remove(&r.op);
                }
                recorded.push(format!(
                    "#{} {} ({} → {})",
                    r.op, receipt.kind, receipt.from_state, receipt.to_state
                ));
                match undoing {
                    Some(undone) => app.session.retain(|s| s.decision_id != undone),
                    None => app.session.push(receipt),
                }
            }
            DecisionOutcome::Refused { rule, reason } => {
                problems.push(format!("#{} refused: {rule}: {reason}", r.op));
            }
            DecisionOutcome::Conflict {
                state,
                found,
                last_writer,
            } => problems.push(format!(
                "#{} changed meanwhile{}: now {state} (version {found}); nothing written, reloaded",
                r.op,
                last_writer.map(|w| format!(" by {w}")).unwrap_or_default()
            )),
            DecisionOutcome::Failed(e) => problems.push(format!("#{}: {e}", r.op)),
        }
    }
    if problems.is_empty() {
        app.info(format!("recorded {}", recorded.join(", ")));
    } else {
        let mut text = problems.join(" | ");
        if !recorded.is_empty() {
            text = format!("recorded {}; {text}", recorded.len());
        }
        app.error(text);
    }
    let mut effects = refresh(app);
    if let Some(pane) = &app.detail
        && app.detail_open
        && !effects.contains(&Effect::LoadDetail(pane.id))
    {
        effects.push(Effect::LoadDetail(pane.id));
    }
    effects
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

#[cfg(test)]
mod tests;
