//! The export prompt's keys: `e` opens it with a name, typing edits the
//! name, Enter asks the shell for the file, and the answer lands on the
//! status line. What the request holds is `export`'s.

use std::path::PathBuf;

use super::effect::{Effect, Read};
use super::export::{ExportRequest, ExportRows};
use super::model::{App, Mode};
use super::pane::Pane;
use crate::export::FileFormat;

/// `e`: opens the prompt with a name no earlier export has taken (it
/// carries the view and the second).
pub(super) fn start_export(app: &mut App) -> Vec<Effect> {
    if matches!(app.pane(), Pane::Operations(_) | Pane::Audit) {
        let name = format!(
            "settle-{}-{}.csv",
            app.view.title().to_lowercase(),
            app.now.format("%Y%m%d-%H%M%S")
        );
        app.mode = Mode::Export { name };
    }
    Vec::new()
}

/// Types `c` into the file name, or deletes its last character.
pub(super) fn edit_export_name(app: &mut App, c: Option<char>) -> Vec<Effect> {
    if let Mode::Export { name } = &mut app.mode {
        match c {
            Some(c) => name.push(c),
            None => {
                name.pop();
            }
        }
    }
    Vec::new()
}

/// Enter: a name with a known extension goes to the shell; any other
/// keeps the prompt open and says which extensions work.
pub(super) fn confirm_export(app: &mut App) -> Vec<Effect> {
    let name = app.export_name().trim().to_string();
    let path = PathBuf::from(&name);
    let Some(format) = FileFormat::of(&path) else {
        app.error(format!(
            "export: {name:?} has no known extension: end the name with {}",
            FileFormat::EXTENSIONS
        ));
        return Vec::new();
    };
    let rows = match app.pane() {
        Pane::Operations(id) => {
            let list = app.list(id);
            ExportRows::Operations {
                query: Box::new(list.query.clone()),
                marks: list.marks.iter().copied().collect(),
            }
        }
        Pane::Audit => ExportRows::Audit,
        _ => return Vec::new(),
    };
    app.mode = Mode::Normal;
    app.info(format!("exporting to {}…", path.display()));
    vec![Effect::Read(Read::Export(Box::new(ExportRequest {
        path,
        format,
        rows,
    })))]
}

/// The shell's answer, on the status line.
pub(super) fn exported(app: &mut App, path: &str, outcome: Result<u64, String>) -> Vec<Effect> {
    match outcome {
        Ok(n) => app.info(format!(
            "exported {n} row{} to {path}",
            if n == 1 { "" } else { "s" }
        )),
        Err(why) => app.error(why),
    }
    Vec::new()
}

#[cfg(test)]
mod tests {
    use std::fs;
    use std::path::Path;

    use super::super::testkit::Harness;
    use super::*;
    use crate::app::Msg;

    /// Opens the prompt, replaces the prefilled name with `path` and
    /// presses Enter, all through the real keymap.
    fn export_to(h: &mut Harness, path: &Path) -> Vec<Effect> {
        h.keys("e");
        let prefilled = h.app.export_name().chars().count();
        h.keys(&"backspace ".repeat(prefilled));
        h.type_text(&path.display().to_string());
        h.keys("enter")
    }

    fn request(effects: &[Effect]) -> Option<&ExportRequest> {
        effects.iter().find_map(|e| match e {
            Effect::Read(Read::Export(r)) => Some(r.as_ref()),
            _ => None,
        })
    }

    fn lines(path: &Path) -> Vec<String> {
        fs::read_to_string(path)
            .unwrap()
            .lines()
            .map(str::to_string)
            .collect()
    }

    #[test]
    fn e_prefills_a_csv_name_for_the_view() {
        let mut h = Harness::new();
        h.keys("e");
        assert!(matches!(h.app.mode, Mode::Export { .. }));
        assert!(
            h.app.export_name().starts_with("settle-queue-")
                && h.app.export_name().ends_with(".csv"),
            "{}",
            h.app.export_name()
        );
        h.keys("esc");
        assert_eq!(h.app.mode, Mode::Normal);
    }

    #[test]
    fn marked_rows_are_exported_and_only_they() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("marked.csv");
        let mut h = Harness::new();
        h.keys("space j space");
        let effects = export_to(&mut h, &path);
        let asked = request(&effects).expect("an export was asked for");
        assert_eq!(asked.path, path);
        assert_eq!(asked.format, FileFormat::Csv);
        let ExportRows::Operations { query, marks } = &asked.rows else {
            panic!("operations expected: {:?}", asked.rows);
        };
        assert_eq!(**query, h.app.queue.query);
        assert_eq!(marks.len(), 2);
        let rows = lines(&path);
        assert_eq!(rows[0], crate::export::OPERATION_CSV_HEADER);
        assert_eq!(rows.len(), 3, "{rows:?}");
        assert!(rows[1].contains("k-report-1") && !rows[1].contains("k-order"));
        assert_eq!(
            h.app.status.as_ref().map(|s| s.text.clone()),
            Some(format!("exported 2 rows to {}", path.display()))
        );
    }

    #[test]
    fn without_marks_the_file_holds_every_row_the_filter_matches_as_settle_list_writes_them() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("beta.csv");
        let mut h = Harness::new();
        h.keys("2 /");
        h.type_text("account:beta");
        h.keys("enter");
        export_to(&mut h, &path);
        let mut expected = vec![crate::export::OPERATION_CSV_HEADER.to_string()];
        let query = h.app.all.query.clone();
        h.ledger
            .for_each_row(&query, h.app.now, |row| {
                expected.push(crate::export::operation_csv(&row, h.app.now));
                Ok(())
            })
            .unwrap();
        assert_eq!(expected.len(), 3, "two beta operations: {expected:?}");
        assert_eq!(lines(&path), expected);
        assert!(lines(&path)[1].contains("k-conflict"));
    }

    #[test]
    fn jsonl_writes_one_object_per_decision_in_the_audit_view() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("trail.jsonl");
        let mut h = Harness::new();
        h.keys("a enter 4");
        export_to(&mut h, &path);
        let rows = lines(&path);
        assert_eq!(rows.len(), 1, "{rows:?}");
        let decision: serde_json::Value = serde_json::from_str(&rows[0]).unwrap();
        assert_eq!(decision["decision"], "applied");
        assert_eq!(decision["operator"], "alice");
    }

    #[test]
    fn an_existing_file_is_never_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("taken.csv");
        fs::write(&path, "keep me\n").unwrap();
        let mut h = Harness::new();
        export_to(&mut h, &path);
        assert_eq!(fs::read_to_string(&path).unwrap(), "keep me\n");
        let status = h.app.status.clone().unwrap();
        assert!(status.error, "{status:?}");
        assert!(
            status.text.contains(&path.display().to_string()) && status.text.contains("exists"),
            "{status:?}"
        );
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn an_unknown_extension_says_which_work_and_keeps_the_prompt() {
        let mut h = Harness::new();
        let effects = export_to(&mut h, Path::new("rows.xlsx"));
        assert!(request(&effects).is_none());
        assert!(matches!(h.app.mode, Mode::Export { .. }));
        let status = h.app.status.clone().unwrap();
        assert!(
            status.error && status.text.contains(".csv or .jsonl"),
            "{status:?}"
        );
    }

    #[test]
    fn the_answer_is_said_on_the_status_line() {
        let mut h = Harness::new();
        h.receive(Msg::Exported {
            path: "x.csv".into(),
            outcome: Ok(1),
        });
        assert_eq!(h.app.status.unwrap().text, "exported 1 row to x.csv");
    }
}
