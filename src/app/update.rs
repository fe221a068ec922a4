//! The two entry points that change the model: [`update`] for what the
//! operator meant and [`apply`] for what the shell reports. Each is one
//! `match` that hands the work to a handler (navigation, filtering,
//! decisions) and returns the effects the shell must perform.

use super::bulk_flow;
use super::decisions::{
    confirm_form, cycle_field, decisions_recorded, edit_form, open_form, toggle_mark,
    toggle_override, undo,
};
use super::drills::flow;
use super::drills::links::{compare_runs, drill_case_found, drill_loaded, open_operation};
use super::effect::{Effect, Ticket};
use super::export_flow::{confirm_export, edit_export_name, exported, start_export};
use super::filtering::{
    edit_filter, filters_scan_changed, page_failed, scan_answered, start_filter,
};
use super::model::{App, LedgerAccess, Mode};
use super::msg::{Msg, PageRows};
use super::navigation::{
    back, catching_up, cycle_view, follow_cursor, jump, ledger_changed, move_cursor, page_answered,
    refresh, resort, scroll_detail, show_view, toggle_detail,
};
use super::pane::ListId;
use super::pointer;
use super::probe_flow;
use super::window::{Fetch, Merge, PAGE};
use crate::console::input::intent::{Intent, View};
use crate::domain::Sort;
use crate::query::Query;
use crate::store::StateCounts;

/// Applies what the operator meant and returns what the shell must do.
pub fn update(app: &mut App, intent: Intent) -> Vec<Effect> {
    // A refusal or conflict stays on screen until the operator acts, then
    // gets out of the way.
    if app.status.as_ref().is_some_and(|s| s.error) {
        app.status = None;
    }
    let effects = obey(app, intent);
    keep_cursor_on_screen(app);
    effects
}

/// Applies what the shell reports and returns what it must do next.
pub fn apply(app: &mut App, msg: Msg) -> Vec<Effect> {
    let effects = learn(app, msg);
    keep_cursor_on_screen(app);
    effects
}

/// Anything may change the list pane's height (detail opened, resize, a
/// page replaced): keep the cursor on screen whatever happened.
fn keep_cursor_on_screen(app: &mut App) {
    let height = app.visible_rows();
    let pane = app.pane();
    app.cursor_mut(pane).scroll_to_cursor(height);
}

fn obey(app: &mut App, intent: Intent) -> Vec<Effect> {
    // The footer and help offer only what acts in the view; a key bound
    // anyway (a user keymap) does nothing rather than half of something.
    if app.mode == Mode::Normal && !intent.acts_in(app.view) {
        return Vec::new();
    }
    if intent != Intent::Probe {
        probe_flow::disarm(app);
    }
    if matches!(intent, Intent::Quit | Intent::Back)
        && let Some(effects) = flow::cancel(app)
    {
        return effects;
    }
    match intent {
        Intent::Quit => {
            app.quit = true;
            Vec::new()
        }
        Intent::Help => open_help(app),
        Intent::NextView => cycle_view(app, true),
        Intent::PrevView => cycle_view(app, false),
        Intent::ShowView(view) => show_view(app, view),
        Intent::MoveDown => move_cursor(app, 1),
        Intent::MoveUp => move_cursor(app, -1),
        Intent::Click { column, row } => pointer::click(app, column, row),
        Intent::Wheel { column, row, lines } => pointer::wheel(app, column, row, lines),
        Intent::PageDown => {
            let n = app.visible_rows() as isize;
            move_cursor(app, n)
        }
        Intent::PageUp => {
            let n = app.visible_rows() as isize;
            move_cursor(app, -n)
        }
        Intent::First => jump(app, Fetch::First),
        Intent::Last => jump(app, Fetch::Last),
        Intent::ToggleDetail => toggle_detail(app),
        Intent::DetailDown => scroll_detail(app, true),
        Intent::DetailUp => scroll_detail(app, false),
        Intent::StartFilter => start_filter(app),
        Intent::CycleSort if app.view == View::Drills => {
            app.drills.cycle_sort();
            Vec::new()
        }
        Intent::Export => start_export(app),
        Intent::CycleSort => resort(app, |s| Sort {
            column: s.column.next(),
            ..s
        }),
        Intent::ReverseSort => resort(app, |s| Sort {
            descending: !s.descending,
            ..s
        }),
        Intent::CompareRuns => compare_runs(app),
        Intent::OpenOperation => open_operation(app),
        Intent::Accept => {
            app.mode = Mode::Normal;
            Vec::new()
        }
        Intent::Input(c) => edit(app, Some(c)),
        Intent::DeleteChar => edit(app, None),
        Intent::ToggleMark => toggle_mark(app),
        Intent::SelectMatching => bulk_flow::select_matching(app),
        Intent::Probe => probe_flow::probe(app),
        Intent::Drill => flow::drill(app),
        Intent::Decide(kind) => open_form(app, kind, None),
        Intent::Undo => undo(app),
        Intent::Reload => {
            app.info("reloaded");
            refresh(app)
        }
        Intent::Back => back(app),
        Intent::Confirm => confirm(app),
        Intent::NextField => cycle_field(app, true),
        Intent::PrevField => cycle_field(app, false),
        Intent::ToggleOverride => toggle_override(app),
    }
}

/// `?`: help over the list, or over the form (Esc goes back to it).
fn open_help(app: &mut App) -> Vec<Effect> {
    let form = match std::mem::replace(&mut app.mode, Mode::Normal) {
        Mode::Form(form) => Some(form),
        Mode::Help { form } => form,
        Mode::Normal | Mode::Filter | Mode::Export { .. } => None,
    };
    app.mode = Mode::Help { form };
    Vec::new()
}

/// Enter: whatever the mode confirms.
fn confirm(app: &mut App) -> Vec<Effect> {
    match app.mode {
        Mode::Filter => {
            app.mode = Mode::Normal;
            Vec::new()
        }
        Mode::Form(_) => confirm_form(app),
        Mode::Export { .. } => confirm_export(app),
        Mode::Normal | Mode::Help { .. } => Vec::new(),
    }
}

/// A typed character (or a deletion, `None`) goes to whatever takes text.
fn edit(app: &mut App, c: Option<char>) -> Vec<Effect> {
    match app.mode {
        Mode::Filter => edit_filter(app, c),
        Mode::Form(_) => edit_form(app, c),
        Mode::Export { .. } => edit_export_name(app, c),
        Mode::Normal | Mode::Help { .. } => Vec::new(),
    }
}

fn learn(app: &mut App, msg: Msg) -> Vec<Effect> {
    match msg {
        Msg::Tick(now) => {
            app.now = now;
            Vec::new()
        }
        Msg::Resize(w, h) => {
            app.size = (w, h);
            move_cursor(app, 0)
        }
        Msg::PageLoaded {
            ticket,
            fetch,
            merge,
            limit,
            rows,
        } => page_loaded(app, ticket, fetch, merge, limit, rows),
        Msg::PageFailed { ticket, message } => {
            app.error(message);
            page_failed(app);
            page_answered(app, ticket)
        }
        Msg::DetailLoaded(detail) => {
            if let Some(pane) = app.detail.as_mut()
                && pane.id == detail.operation.id
            {
                pane.detail = Some(detail);
            }
            Vec::new()
        }
        Msg::FormDetailsLoaded(details) => {
            if let Some(form) = app.mode.form_mut() {
                form.details_loaded(details);
            }
            Vec::new()
        }
        Msg::DecisionsRecorded(results) => decisions_recorded(app, results),
        Msg::BulkPreviewed(preview) => bulk_flow::preview_loaded(app, *preview),
        Msg::BulkProgress(write) => bulk_flow::bulk_progress(app, write),
        Msg::CountsLoaded { counts, lists } => counts_loaded(app, counts, lists),
        Msg::ClustersLoaded(clusters) => {
            app.clusters.loaded(clusters);
            Vec::new()
        }
        Msg::ProbeTargetsListed(ids) => probe_flow::targets_listed(app, ids),
        Msg::Probe(news) => probe_flow::news(app, news),
        Msg::Drill(news) => flow::news(app, news),
        Msg::DrillCaseFound(key, id) => drill_case_found(app, key, id),
        Msg::DrillLoaded(loaded) => drill_loaded(app, *loaded),
        Msg::LedgerChanged => ledger_changed(app),
        Msg::FiltersScan(scans) => filters_scan_changed(app, scans),
        Msg::CatchingUp(progress) => catching_up(app, progress),
        Msg::Members(members) => members_changed(app, members),
        Msg::LiveLost(message) => live(app, Some(message)),
        Msg::LiveRestored => live(app, None),
        Msg::WritesBlocked(why) => writes_blocked(app, why),
        Msg::ReadFrom(said) => {
            read_from(app, &said);
            Vec::new()
        }
        Msg::FileReplaced(why) => file_in_place(app, Some(why)),
        Msg::FileRestored => file_in_place(app, None),
        Msg::Adopting(progress) => {
            app.access = LedgerAccess::Adopting(progress);
            Vec::new()
        }
        Msg::Adopted(outcome) => adopted(app, outcome),
        Msg::LoadFailed(message) => {
            app.error(message);
            Vec::new()
        }
        Msg::Exported { path, outcome } => exported(app, &path, outcome),
        Msg::Notice(message) => {
            app.info(message);
            Vec::new()
        }
    }
}

/// The state counts, and each list's total unless it was counted for an
/// older filter.
fn counts_loaded(
    app: &mut App,
    counts: StateCounts,
    lists: Vec<(ListId, Query, i64)>,
) -> Vec<Effect> {
    app.counts = Some(counts);
    for (id, query, n) in lists {
        let list = app.list_mut(id);
        if list.query == query {
            list.count = Some(n);
        }
        // A filtered queue's count is not the queue's size.
        if id == ListId::Queue && query == Query::queue() {
            app.queue_history.record(app.now, n);
        }
    }
    Vec::new()
}

/// Live updates stopped (with why) or resumed: the header says "not live"
/// meanwhile, and the screen is reread when they resume.
fn live(app: &mut App, lost: Option<String>) -> Vec<Effect> {
    match lost {
        Some(message) => {
            app.background_error(format!(
                "live updates stopped, the screen may be stale: {message}"
            ));
            app.live_error = Some(message);
            Vec::new()
        }
        None => {
            app.live_error = None;
            app.info("live updates resumed".to_string());
            refresh(app)
        }
    }
}

/// Where the reread after a decision read it from, after what the status
/// line says of the decision (a page may show it from the primary while
/// the standby lags, and the operator should know why).
fn read_from(app: &mut App, said: &str) {
    match &app.status {
        Some(status) if status.error => {}
        Some(status) => {
            let text = format!("{}; {said}", status.text);
            app.info(text);
        }
        None => app.info(said),
    }
}

/// The writer found that no write goes through now (with why), or that
/// one does again: a writable console turns read-only meanwhile, and back;
/// a console opened read-only stays so.
fn writes_blocked(app: &mut App, why: Option<String>) -> Vec<Effect> {
    match (why, &app.access) {
        (Some(why), LedgerAccess::Unavailable(said)) if *said == why => {}
        (Some(why), LedgerAccess::ReadWrite | LedgerAccess::Unavailable(_)) => {
            app.background_error(format!(
                "read-only: {why}; decisions open again once the ledger takes writes"
            ));
            app.access = LedgerAccess::Unavailable(why);
        }
        (None, LedgerAccess::Unavailable(_)) => {
            app.access = LedgerAccess::ReadWrite;
            app.info("the ledger takes writes again: decisions are open");
        }
        _ => {}
    }
    Vec::new()
}

/// The path stopped naming the opened file (with why), or names it again:
/// decisions are refused meanwhile.
fn file_in_place(app: &mut App, problem: Option<String>) -> Vec<Effect> {
    match problem {
        Some(why) => {
            app.error(format!("{why}; decisions are refused: reopen the ledger"));
            app.file_problem = Some(why);
            Vec::new()
        }
        None => {
            app.file_problem = None;
            app.info("the ledger file is back in place");
            refresh(app)
        }
    }
}

/// The writer finished adopting the ledger: decisions open and the screen
/// is reread through the tables adoption added, or it stays read-only and
/// says why.
fn adopted(app: &mut App, outcome: Result<String, String>) -> Vec<Effect> {
    match outcome {
        Ok(done) => {
            app.access = LedgerAccess::ReadWrite;
            app.info(done);
            refresh(app)
        }
        Err(why) => {
            if app.adopting().is_some() {
                app.access = LedgerAccess::ReadOnly;
            }
            app.error(format!("{why}; shown read-only"));
            Vec::new()
        }
    }
}

/// A page arrived: merged unless out of date; the detail follows the
/// cursor, and a list reread from the cursor's row (a new sort order) asks
/// for the rows before it.
fn page_loaded(
    app: &mut App,
    ticket: Ticket,
    fetch: Fetch,
    merge: Merge,
    limit: usize,
    rows: PageRows,
) -> Vec<Effect> {
    if let PageRows::Scanned {
        list,
        rows,
        read,
        place,
    } = rows
    {
        let mut effects = scan_answered(app, ticket, merge, list, rows, (read, place));
        effects.extend(page_answered(app, ticket));
        return effects;
    }
    let pane = rows.pane();
    let mut effects = Vec::new();
    let replaced = matches!(merge, Merge::Replace { .. });
    if app.merge_page(ticket, fetch, merge, limit, rows) && app.pane() == pane {
        effects = follow_cursor(app, false);
        let height = app.visible_rows();
        if replaced && let Some((fetch, merge)) = app.cursor_mut(pane).move_by(0, height) {
            effects.extend(app.load_page(pane, fetch, merge, PAGE));
        }
    }
    effects.extend(page_answered(app, ticket));
    effects
}

/// How a group's ledgers stand now: the header's marks, and how ids are
/// said.
fn members_changed(app: &mut App, members: Vec<crate::domain::MemberState>) -> Vec<Effect> {
    app.labels = crate::domain::IdLabels::of(&members);
    app.members = members;
    Vec::new()
}
