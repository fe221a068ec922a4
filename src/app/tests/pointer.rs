//! Update tests for the mouse: a click lands on the row or tab drawn at
//! its cell, the wheel scrolls the pane under it, and a popup takes none.

use crate::app::testkit::{Harness, two_runs};
use crate::app::{Effect, Intent, Read, View};

/// The harness's screen is 100x30: tabs on row 1, the list's first data
/// row on row 4 (below its border and column titles).
const FIRST_ROW: u16 = 4;

fn click(h: &mut Harness, column: u16, row: u16) -> Vec<Effect> {
    h.act(Intent::Click { column, row })
}

fn wheel(h: &mut Harness, row: u16, lines: isize) -> Vec<Effect> {
    h.act(Intent::Wheel {
        column: 10,
        row,
        lines,
    })
}

fn keys_shown(h: &Harness) -> Vec<String> {
    let rows = &h.app.queue.window.rows;
    rows.iter().map(|r| r.idem_key.clone()).collect()
}

#[test]
fn a_click_on_a_row_selects_it_and_the_detail_follows() {
    let mut h = Harness::new();
    let keys = keys_shown(&h);
    assert!(keys.len() >= 4, "{keys:?}");
    click(&mut h, 20, FIRST_ROW + 2);
    assert_eq!(h.selected_key(), keys[2]);
    click(&mut h, 20, FIRST_ROW);
    assert_eq!(h.selected_key(), keys[0]);

    h.keys("enter");
    let effects = click(&mut h, 20, FIRST_ROW + 3);
    assert_eq!(h.selected_key(), keys[3]);
    let shown = h.app.queue.window.rows[3].id;
    assert!(
        effects.contains(&Effect::Read(Read::LoadDetail(shown))),
        "{effects:?}"
    );
    assert_eq!(h.app.detail.as_ref().map(|d| d.id), Some(shown));
}

#[test]
fn a_click_below_the_last_row_or_on_the_column_titles_selects_nothing() {
    let mut h = Harness::new();
    let rows = h.app.queue.window.rows.len() as u16;
    click(&mut h, 20, FIRST_ROW + 1);
    let before = h.selected_key();
    click(&mut h, 20, FIRST_ROW + rows);
    click(&mut h, 20, FIRST_ROW - 1);
    click(&mut h, 20, 0);
    assert_eq!(h.selected_key(), before);
    assert_eq!(h.app.view, View::Queue);
}

#[test]
fn a_click_on_a_tab_shows_its_view() {
    let mut h = Harness::new();
    // The tab bar reads " 1 Queue 5  2 All 7  3 Drills  4 Audit …".
    let labels = h.app.tab_labels();
    let left = |view: View| -> u16 {
        let before: usize = labels
            .iter()
            .take_while(|(v, _)| *v != view)
            .map(|(_, l)| l.chars().count())
            .sum();
        before as u16
    };
    click(&mut h, left(View::Audit) + 2, 1);
    assert_eq!(h.app.view, View::Audit);
    click(&mut h, left(View::All) + 1, 1);
    assert_eq!(h.app.view, View::All);
    assert!(h.app.all.window.loaded, "the view's rows were read");
    // Past the last tab (the counts per state): nothing changes.
    click(&mut h, 99, 1);
    assert_eq!(h.app.view, View::All);
}

#[test]
fn the_wheel_in_the_detail_scrolls_it_and_elsewhere_moves_the_list() {
    let mut h = Harness::new();
    h.keys("enter");
    let detail = h.app.screen().detail.unwrap();
    let cursor = h.app.queue.window.cursor;
    wheel(&mut h, detail.y + 3, 3);
    wheel(&mut h, detail.y + 3, 3);
    assert_eq!(h.app.detail.as_ref().map(|d| d.scroll), Some(6));
    wheel(&mut h, detail.y + 3, -3);
    assert_eq!(h.app.detail.as_ref().map(|d| d.scroll), Some(3));
    assert_eq!(h.app.queue.window.cursor, cursor, "the list stayed");

    wheel(&mut h, FIRST_ROW, 3);
    assert_eq!(h.app.queue.window.cursor, cursor + 3);
    let id = h.app.queue.window.rows[cursor + 3].id;
    assert_eq!(
        h.app.detail.as_ref().map(|d| (d.id, d.scroll)),
        Some((id, 0))
    );
    wheel(&mut h, FIRST_ROW, -3);
    assert_eq!(h.app.queue.window.cursor, cursor);
}

#[test]
fn the_drills_rows_take_clicks_too() {
    let dir = tempfile::tempdir().unwrap();
    let mut h = Harness::new();
    h.app.drills.files = two_runs(dir.path());
    h.keys("3");
    click(&mut h, 20, FIRST_ROW + 2);
    assert_eq!(h.app.drills.cursor, 2);
    h.keys("enter");
    let case = h.app.screen().detail.unwrap();
    wheel(&mut h, case.y + 2, 3);
    assert_eq!(h.app.drills.detail_scroll, 3);
}

#[test]
fn a_popup_takes_no_mouse() {
    let mut h = Harness::new();
    h.keys("a");
    let key = h.selected_key();
    click(&mut h, 20, FIRST_ROW + 2);
    wheel(&mut h, FIRST_ROW, 3);
    click(&mut h, 2, 1);
    assert_eq!(h.selected_key(), key);
    assert!(h.app.form().is_some(), "the form is still open");
    h.keys("esc ?");
    click(&mut h, 20, FIRST_ROW + 2);
    assert_eq!(h.selected_key(), key);
}
