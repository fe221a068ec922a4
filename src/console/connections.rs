//! The console's connections, in the order it opens them: the reader's
//! first (a read-only connection that validates the ledger and writes nothing),
//! then, for a file, the writer's and the watcher's at once (a file opens
//! in microseconds); for a server they wait behind the [`Gate`] until the
//! first page is drawn, each on its own thread, since every connection
//! costs a round trip and a backend process the first frame would wait for.

use std::path::{Path, PathBuf};
use std::sync::mpsc::Sender;
use std::time::Instant;

use crate::app::Msg;
use crate::console::gate::Gate;
use crate::console::watch::{FileId, Watch};
use crate::console::workers::Writer;
use crate::domain::Declarations;
use crate::error::{Error, Result};
use crate::store::group;
use crate::store::{Access, Ledger, OpenReport};

/// What the console starts with.
pub struct Connections {
    /// The reader's connection.
    pub reader: Ledger,
    /// What opening said (the writer's open for a file, the reader's for a
    /// server, whose writer says the rest when it opens).
    pub report: OpenReport,
    /// The writer adopts the ledger first.
    pub adopting: bool,
    /// No write will go through, for good.
    pub read_only: bool,
    pub watch: Watch,
    pub writer: WriterStart,
}

/// How the writer starts.
pub enum WriterStart {
    Opened(Ledger),
    Adopt,
    Later(Access),
}

/// Opens the reader's connection and, for a file, the other connections; a server's
/// wait for `gate`.
pub fn open(path: &Path, access: Access, gate: &Gate) -> Result<Connections> {
    let (reader, reader_report) = group::open(path, Access::ReadOnly)?;
    let adopting = access == Access::ReadWrite && reader_report.not_adopted.is_some();
    let Some(file) = reader.file().map(Path::to_path_buf) else {
        return Ok(Connections {
            reader,
            report: reader_report,
            adopting,
            read_only: access == Access::ReadOnly || adopting,
            watch: Watch::opening(path.to_path_buf(), gate.clone(), Instant::now()),
            writer: if adopting {
                WriterStart::Adopt
            } else {
                WriterStart::Later(access)
            },
        });
    };
    let (writer, report) = if adopting {
        (WriterStart::Adopt, OpenReport::default())
    } else {
        let (ledger, report) = group::open(path, access)?;
        (WriterStart::Opened(ledger), report)
    };
    let read_only = match &writer {
        WriterStart::Opened(ledger) => ledger.is_read_only(),
        _ => true,
    };
    let (watching, _) = group::open(path, Access::ReadOnly)?;
    let opened = FileId::of(&file)
        .map_err(|why| Error::ledger(&file, why, "check the path and open it again"))?;
    Ok(Connections {
        reader,
        report,
        adopting,
        read_only,
        watch: Watch::new(watching, Some(opened), Instant::now()),
        writer,
    })
}

impl WriterStart {
    /// Starts the writer on the ledger at `path`, answering on `answers`.
    /// The writer judges decisions on `declared`, the receivers file's
    /// contracts.
    pub fn spawn<T>(
        self,
        path: PathBuf,
        declared: Declarations,
        gate: &Gate,
        answers: Sender<T>,
    ) -> Writer
    where
        T: From<Msg> + Send + 'static,
    {
        match self {
            WriterStart::Opened(mut ledger) => {
                ledger.declare(declared);
                Writer::spawn(ledger, answers)
            }
            WriterStart::Adopt => Writer::adopt(path, declared, answers),
            WriterStart::Later(access) => {
                Writer::later(path, access, declared, gate.clone(), answers)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::console::counter::Counter;
    use crate::store::postgres::testing::{connect, fresh_database};
    use std::time::Duration;

    /// The sessions on the ledger's database, the counting one left out.
    fn sessions(admin: &mut postgres::Client) -> i64 {
        admin
            .query_one(
                "SELECT count(*) FROM pg_stat_activity
                 WHERE datname = current_database() AND pid <> pg_backend_pid()",
                &[],
            )
            .unwrap()
            .get(0)
    }

    #[test]
    fn a_servers_ledger_holds_one_connection_until_the_first_page_opens_the_gate() {
        let Some(db) = fresh_database("one connection first") else {
            return;
        };
        drop(Ledger::create(&db).unwrap());
        let mut admin = connect(&db);
        let gate = Gate::default();
        let mut opened = open(&db, Access::ReadWrite, &gate).unwrap();
        let (tx, _answers) = std::sync::mpsc::channel::<Msg>();
        let _writer = opened
            .writer
            .spawn(db.clone(), Declarations::default(), &gate, tx.clone());
        let _counter = Counter::spawn(db.clone(), gate.clone(), tx);
        assert!(opened.watch.poll(Instant::now()).is_empty());
        std::thread::sleep(Duration::from_millis(200));
        assert_eq!(sessions(&mut admin), 1, "the reader's alone");
        gate.open();
        let started = Instant::now();
        // The writer, the counter and the watcher connect (the watcher's
        // thread once it is asked).
        while sessions(&mut admin) < 4 {
            opened.watch.poll(Instant::now());
            assert!(started.elapsed() < Duration::from_secs(10), "never opened");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}
