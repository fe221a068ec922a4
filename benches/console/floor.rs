//! The floor for the screen figures: a bare program that opens the ledger
//! with rusqlite, reads the first 100 queue rows (walking the rowid order)
//! and draws them in a ratatui Table, then waits for `q`. Run as the bench
//! binary with `--floor LEDGER`; it must stay this small, or it stops being
//! a floor.

use std::path::Path;

use ratatui::crossterm::event::{self, Event, KeyCode};
use ratatui::layout::Constraint;
use ratatui::widgets::{Block, Borders, Row, Table};
use rusqlite::{Connection, OpenFlags};

/// The triage queue (ledger-v1 "States"), `?1` being now. `+state` keeps
/// SQLite off the state index so it walks ids newest first and stops at the
/// page's end: the plan that keeps a page of a 10M ledger within its
/// target. The benchmark's expected
/// rows and SQL anchors use the same condition.
pub const QUEUE_WHERE: &str = "(+state IN ('unknown','exhausted','conflict') \
     OR (+state = 'reserved' AND lease_expires_at < ?1))";

pub fn run(ledger: &Path) -> Result<(), Box<dyn std::error::Error>> {
    let conn = Connection::open_with_flags(ledger, OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    let now = chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string();
    let mut stmt = conn.prepare(&format!(
        "SELECT id, state, account, op_type, idem_key FROM operations \
         WHERE {QUEUE_WHERE} ORDER BY id DESC LIMIT 100"
    ))?;
    let rows: Vec<[String; 5]> = stmt
        .query_map([now], |r| {
            Ok([
                r.get::<_, i64>(0)?.to_string(),
                r.get(1)?,
                r.get(2)?,
                r.get(3)?,
                r.get(4)?,
            ])
        })?
        .collect::<Result<_, _>>()?;
    let mut terminal = ratatui::init();
    let drawn = terminal.draw(|f| {
        let table = Table::new(
            rows.iter().map(|r| Row::new(r.iter().map(String::as_str))),
            [
                Constraint::Length(10),
                Constraint::Length(12),
                Constraint::Length(12),
                Constraint::Length(16),
                Constraint::Fill(1),
            ],
        )
        .header(Row::new(["id", "state", "account", "op type", "key"]))
        .block(Block::default().borders(Borders::ALL).title("floor"));
        f.render_widget(table, f.area());
    });
    // Wait for q without spinning, so idle CPU and memory can be read.
    let waited = drawn.map(|_| ()).and_then(|()| {
        loop {
            if let Event::Key(k) = event::read()?
                && k.code == KeyCode::Char('q')
            {
                break Ok(());
            }
        }
    });
    ratatui::restore();
    Ok(waited?)
}
