//! The Drills view's model: the drill files given with `--drill`, the rows
//! they make (one per case, one per file that could not be read), the
//! cursor over those rows, the open case, the filter and the sort. Pure:
//! reading the files is the shell's job (`effects::read_drill`); drawing
//! is `ui::drills` and `ui::drill_case`.

use std::collections::BTreeMap;

use super::compare::{CaseAcrossRuns, compare};
use super::files::verdict_rank;
pub use super::files::{CaseView, DrillRow, DrillSort, LoadedDrill};
use crate::app::effect::{Effect, Read};
use crate::app::pane::PaneCursor;
use crate::app::window::{Fetch, Merge};
use crate::domain::OperationId;
use crate::drill::CaseAnalysis;

/// The Drills view: the files, read once at start, and where the operator is.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct DrillsPane {
    pub files: Vec<LoadedDrill>,
    /// Index of the cursor in [`DrillsPane::rows`].
    pub cursor: usize,
    /// First row on screen.
    pub top: usize,
    /// The case under the cursor is shown in the detail pane.
    pub open: bool,
    pub detail_scroll: u16,
    /// Kept when it matches case, strategy, verdict or run (any case).
    pub filter_text: String,
    pub sort: DrillSort,
    /// The rows are the comparison across runs (`v`), one per case name.
    pub compare: bool,
    /// The ledger operation each looked-up case was imported as (`None`:
    /// not in the ledger), by file path and case index; a case not here
    /// is still being looked up.
    pub links: BTreeMap<(String, usize), Option<OperationId>>,
    /// A drill run `D` started, while it runs (`super::flow`).
    pub running: Option<super::running::Drilling>,
}

impl DrillsPane {
    /// The runs compared and every case across them (see
    /// [`compare`]), under the pane's filter.
    pub fn compared(&self) -> (Vec<usize>, Vec<CaseAcrossRuns>) {
        compare(&self.files, &self.filter_text)
    }

    /// The rows on screen, filtered and sorted. Derived each time: a drill
    /// holds tens of cases, and a derived list cannot go stale when the
    /// shell replaces `files`.
    pub fn rows(&self) -> Vec<DrillRow> {
        let needle = self.filter_text.to_lowercase();
        let mut rows: Vec<DrillRow> = Vec::new();
        for (f, loaded) in self.files.iter().enumerate() {
            match &loaded.analysis {
                Ok(pair) => rows.extend((0..pair.1.cases.len()).map(|c| DrillRow {
                    file: f,
                    case: Some(c),
                })),
                Err(_) => rows.push(DrillRow {
                    file: f,
                    case: None,
                }),
            }
        }
        rows.retain(|r| needle.is_empty() || self.haystack(*r).contains(&needle));
        match self.sort {
            DrillSort::File => {}
            DrillSort::Verdict => {
                rows.sort_by_key(|r| self.case_analysis(*r).map(|a| verdict_rank(a.verdict)))
            }
            DrillSort::Case => {
                rows.sort_by_key(|r| self.case_analysis(*r).map(|a| a.case.to_lowercase()))
            }
            DrillSort::Strategy => rows.sort_by_key(|r| {
                self.case_analysis(*r)
                    .map(|a| a.strategy.clone().unwrap_or_default().to_lowercase())
            }),
        }
        rows
    }

    /// The row under the cursor (none while comparing: a comparison row
    /// is a case of several runs).
    pub fn selected(&self) -> Option<DrillRow> {
        if self.compare {
            return None;
        }
        self.rows().get(self.cursor).copied()
    }

    /// How many rows the cursor moves over: cases, or compared cases.
    fn row_count(&self) -> usize {
        if self.compare {
            self.compared().1.len()
        } else {
            self.rows().len()
        }
    }

    /// Readable files: a comparison needs two.
    pub fn runs(&self) -> usize {
        self.files.iter().filter(|f| f.analysis.is_ok()).count()
    }

    /// `v`: the comparison across runs, or back to the cases. Says why
    /// not when fewer than two runs are loaded.
    pub fn toggle_compare(&mut self) -> Result<(), String> {
        if !self.compare && self.runs() < 2 {
            return Err(format!(
                "comparing needs two drill runs; {} loaded (--drill FILE, repeatable)",
                self.runs()
            ));
        }
        self.compare = !self.compare;
        self.open = false;
        self.cursor = 0;
        self.top = 0;
        self.detail_scroll = 0;
        Ok(())
    }

    /// The ledger operation the open case was imported as: `None` while it
    /// is looked up, `Some(None)` when the ledger does not hold it.
    pub fn link(&self, row: DrillRow) -> Option<Option<OperationId>> {
        let path = self.files.get(row.file)?.path.clone();
        self.links.get(&(path, row.case?)).copied()
    }

    /// Asks the ledger for the open case's operation: each time the case
    /// opens until it is found (it may be imported meanwhile), never again
    /// once it is (an import never moves an operation).
    pub fn link_request(&self) -> Option<Effect> {
        let row = self.selected().filter(|_| self.open)?;
        (!matches!(self.link(row), Some(Some(_)))).then_some(())?;
        let key = self
            .files
            .get(row.file)?
            .import_keys()
            .get(row.case?)?
            .clone();
        Some(Effect::Read(Read::FindDrillCase(key)))
    }

    /// `RUN/CASE` of a loaded case an import would have written as
    /// `account/op_type/key`: the way back from an operation to its case.
    pub fn case_of_operation(&self, account: &str, op_type: &str, key: &str) -> Option<String> {
        self.files.iter().find_map(|loaded| {
            let pair = loaded.analysis.as_ref().ok()?;
            let k = loaded
                .import_keys()
                .iter()
                .find(|k| k.account == account && k.op_type == op_type && k.key == key)?;
            let case = pair.0.cases.get(k.case)?;
            Some(format!("{}/{}", loaded.run_name(), case.case))
        })
    }

    pub fn case_analysis(&self, row: DrillRow) -> Option<&CaseAnalysis> {
        let pair = self.files.get(row.file)?.analysis.as_ref().ok()?;
        pair.1.cases.get(row.case?)
    }

    /// Everything about the case a row names; `None` for a file row.
    pub fn case_view(&self, row: DrillRow) -> Option<CaseView<'_>> {
        let loaded = self.files.get(row.file)?;
        let pair = loaded.analysis.as_ref().ok()?;
        let index = row.case?;
        let analysis = pair.1.cases.get(index)?;
        Some(CaseView {
            loaded,
            case: pair.0.cases.get(index)?,
            analysis,
            findings: pair
                .1
                .findings
                .iter()
                .filter(|f| f.case.as_deref() == Some(analysis.case.as_str()))
                .collect(),
            file_notes: pair
                .1
                .findings
                .iter()
                .filter(|f| f.case.is_none())
                .map(|f| format!("{}: {}", f.severity.as_str(), f.text))
                .chain(pair.0.warnings.iter().map(|w| format!("read: {w}")))
                .collect(),
        })
    }

    /// The words the filter searches, lower-cased.
    fn haystack(&self, row: DrillRow) -> String {
        let Some(loaded) = self.files.get(row.file) else {
            return String::new();
        };
        let mut text = loaded.run_name().to_lowercase();
        match self.case_analysis(row) {
            Some(a) => {
                for word in [
                    a.case.as_str(),
                    a.strategy.as_deref().unwrap_or(""),
                    a.verdict.as_str(),
                ] {
                    text.push(' ');
                    text.push_str(&word.to_lowercase());
                }
            }
            None => text.push_str(" unreadable"),
        }
        text
    }

    /// Enter: opens the case under the cursor, or closes the open one.
    /// On a compared case: back to the cases, with that case of the last
    /// run that has it open.
    pub fn toggle_case(&mut self) {
        if self.compare {
            let (_, cases) = self.compared();
            let Some(row) = cases
                .get(self.cursor)
                .and_then(|c| c.rows.iter().rev().flatten().next().copied())
            else {
                return;
            };
            self.compare = false;
            if !self.rows().contains(&row) {
                self.filter_text.clear();
            }
            self.cursor = self.rows().iter().position(|r| *r == row).unwrap_or(0);
            self.open = true;
            self.detail_scroll = 0;
            return;
        }
        self.open = !self.open && self.selected().is_some();
        self.detail_scroll = 0;
    }

    pub fn scroll_detail(&mut self, down: bool) {
        if self.open {
            self.detail_scroll = if down {
                self.detail_scroll.saturating_add(3)
            } else {
                self.detail_scroll.saturating_sub(3)
            };
        }
    }

    /// `s`: the next order. The cursor goes to the top, where the order
    /// puts what matters most (the worst verdict).
    pub fn cycle_sort(&mut self) {
        self.sort = self.sort.next();
        self.cursor = 0;
        self.top = 0;
        self.detail_scroll = 0;
    }

    /// Types `c` into the filter, or deletes its last character when `None`.
    pub fn edit_filter(&mut self, c: Option<char>) {
        match c {
            Some(c) => self.filter_text.push(c),
            None => {
                self.filter_text.pop();
            }
        }
        self.cursor = 0;
        self.top = 0;
        self.detail_scroll = 0;
    }

    /// Esc in the view: closes the open case, then clears the filter,
    /// then leaves the comparison.
    /// Says whether it did anything.
    pub fn back(&mut self) -> bool {
        if self.open {
            self.open = false;
            return true;
        }
        if self.filter_text.is_empty() {
            // Then out of the comparison, back to the cases.
            return self.compare && self.toggle_compare().is_ok();
        }
        self.clear_filter();
        true
    }

    pub fn clear_filter(&mut self) {
        self.filter_text.clear();
        self.cursor = 0;
        self.top = 0;
        self.detail_scroll = 0;
    }
}

impl PaneCursor for DrillsPane {
    fn move_by(&mut self, delta: isize, height: usize) -> Option<(Fetch, Merge)> {
        let last = self.row_count().saturating_sub(1);
        let at = (self.cursor as isize).saturating_add(delta);
        let moved = usize::try_from(at.max(0)).unwrap_or(0).min(last);
        if moved != self.cursor {
            self.detail_scroll = 0;
        }
        self.cursor = moved;
        self.scroll_to_cursor(height);
        // Every row is held: there is never a page to load.
        None
    }

    fn scroll_to_cursor(&mut self, height: usize) {
        let height = height.max(1);
        self.cursor = self.cursor.min(self.row_count().saturating_sub(1));
        if self.cursor < self.top {
            self.top = self.cursor;
        } else if self.cursor >= self.top + height {
            self.top = self.cursor + 1 - height;
        }
    }

    fn refresh_request(&self) -> Option<(Fetch, Merge, usize)> {
        None
    }

    fn to_shown(&self, offset: usize) -> Option<isize> {
        crate::app::pane::to_shown(self.top, self.cursor, self.row_count(), offset)
    }
}

#[cfg(test)]
mod tests {
    use crate::app::testkit::Harness;
    use crate::app::{LoadedDrill, Mode, Msg};

    /// The sample drill (seven cases, naive_retry first) and a file that
    /// could not be read, in the Drills view.
    fn drills() -> Harness {
        let mut h = Harness::new();
        h.receive(Msg::Resize(100, 30));
        h.app.drills.files = vec![
            crate::console::effects::read_drill(std::path::Path::new(
                "sample-data/drill-results.json",
            )),
            LoadedDrill::new(
                "missing.json".into(),
                Err("missing.json: cannot read".into()),
            ),
        ];
        h.keys("3");
        h
    }

    fn selected_case(h: &Harness) -> Option<String> {
        let d = &h.app.drills;
        d.selected()
            .and_then(|r| d.case_analysis(r))
            .map(|a| a.case.clone())
    }

    #[test]
    fn every_case_is_a_row_and_an_unreadable_file_one_more() {
        let h = drills();
        let rows = h.app.drills.rows();
        assert_eq!(rows.len(), 8);
        assert_eq!(rows.last().and_then(|r| r.case), None);
        assert_eq!(selected_case(&h).as_deref(), Some("naive_retry"));
    }

    #[test]
    fn j_and_enter_open_the_second_case_and_esc_closes_it() {
        let mut h = drills();
        h.keys("j enter");
        assert!(h.app.drills.open);
        assert!(h.app.screen().detail.is_some());
        assert_eq!(selected_case(&h).as_deref(), Some("changed_key"));
        h.keys("esc");
        assert!(!h.app.drills.open);
        assert!(h.app.screen().detail.is_none());
        // The operation lists' detail was never touched.
        assert!(!h.app.detail_open);
    }

    #[test]
    fn g_and_shift_g_go_to_the_first_and_last_rows_and_stop_there() {
        let mut h = drills();
        h.keys("G");
        assert_eq!(h.app.drills.cursor, 7);
        h.keys("j pgdn");
        assert_eq!(h.app.drills.cursor, 7);
        h.keys("g k");
        assert_eq!(h.app.drills.cursor, 0);
        h.keys("pgdn");
        assert_eq!(h.app.drills.cursor, 7, "30 rows high: one page holds all");
    }

    #[test]
    fn the_cursor_scrolls_the_rows_on_a_short_terminal() {
        let mut h = drills();
        h.receive(Msg::Resize(80, 8));
        let height = h.app.visible_rows();
        h.keys("G");
        assert_eq!(h.app.drills.top, 8 - height);
        h.keys("g");
        assert_eq!(h.app.drills.top, 0);
    }

    #[test]
    fn the_filter_keeps_matching_cases_and_esc_clears_it() {
        let mut h = drills();
        h.keys("/");
        assert_eq!(h.app.mode, Mode::Filter);
        h.type_text("duplicate");
        h.keys("enter");
        let d = &h.app.drills;
        let cases: Vec<String> = d
            .rows()
            .iter()
            .filter_map(|r| d.case_analysis(*r).map(|a| a.case.clone()))
            .collect();
        assert_eq!(cases, ["naive_retry", "changed_key"]);
        h.keys("esc");
        assert_eq!(h.app.drills.rows().len(), 8);
    }

    #[test]
    fn s_sorts_the_worst_verdict_first() {
        let mut h = drills();
        h.keys("G s");
        assert_eq!(h.app.drills.cursor, 0);
        let d = &h.app.drills;
        let verdicts: Vec<&str> = d
            .rows()
            .iter()
            .filter_map(|r| d.case_analysis(*r).map(|a| a.verdict.as_str()))
            .collect();
        assert_eq!(verdicts.first(), Some(&"duplicate effect"));
        assert_eq!(verdicts.last(), Some(&"safe"));
    }

    #[test]
    fn decision_keys_do_nothing_in_the_drills_view() {
        let mut h = drills();
        for key in ["a", "n", "r", "c", "u", "space"] {
            assert!(h.keys(key).is_empty(), "{key} asked for something");
            assert_eq!(h.app.form(), None, "{key} opened a form");
            assert_eq!(h.app.status, None, "{key} said something");
        }
    }
}

#[cfg(test)]
mod properties {
    use proptest::prelude::*;

    use crate::app::Msg;
    use crate::app::testkit::Harness;

    const TOKENS: [&str; 17] = [
        "j",
        "k",
        "g",
        "G",
        "pgdn",
        "pgup",
        "enter",
        "esc",
        "s",
        "/",
        "x",
        "r",
        "backspace",
        "J",
        "K",
        "v",
        "o",
    ];

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]
        /// Whatever is typed in the Drills view (filtering everything out
        /// included), the cursor stays on a row and on screen.
        #[test]
        fn the_drill_cursor_stays_on_a_row_and_on_screen(
            script in proptest::collection::vec(0..TOKENS.len(), 0..40),
            height in 6u16..50,
        ) {
            let mut h = Harness::new();
            h.receive(Msg::Resize(90, height));
            let sample = std::path::Path::new("sample-data/drill-results.json");
            // Twice: the comparison (`v`) needs two runs.
            h.app.drills.files = vec![crate::console::effects::read_drill(sample); 2];
            h.keys("3");
            for i in script {
                h.keys(TOKENS[i]);
                let d = &h.app.drills;
                let rows = if d.compare {
                    d.compared().1.len()
                } else {
                    d.rows().len()
                };
                prop_assert!(d.cursor < rows.max(1));
                prop_assert!(d.top <= d.cursor);
                prop_assert!(d.cursor < d.top + h.app.visible_rows());
                let backend = ratatui::backend::TestBackend::new(90, height);
                let mut terminal = ratatui::Terminal::new(backend).unwrap();
                terminal.draw(|f| crate::ui::render(&h.app, f)).unwrap();
            }
        }
    }
}
