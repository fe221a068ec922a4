//! Several ledgers read and written as one (one incident, many services):
//! a backend whose rows are its members' rows, each numbered so one id
//! names one row of the group ([`ids`]) and carrying the ledger it is from
//! ([`crate::domain::Origin`]). Every read asks each member on its own
//! connection, in parallel, and merges their answers by the same keys a
//! ledger sorts by, a page from each at most ([`reads`]); a decision goes
//! to its row's own ledger, under that ledger's rules and audit chain
//! ([`writes`]). A member that cannot be opened or read is left out of the
//! answer and said in [`Session::members`], and the others go on; one that
//! could not be opened is opened again every [`REOPEN_EVERY`].
//!
//! A group sits above the backends: it is made of ledgers, and opened by
//! the path [`declare`] gave for it through [`open`], which opens any other
//! path as the ledger it names, so every connection the console opens
//! (reader, writer, counter, watcher) is a group of its own connections.

mod ids;
mod merge;
mod reads;
mod writes;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::{Duration, Instant};

use super::Ledger;
use super::backend::{Backend, ReadModel, Session, Waiter};
use super::interrupt::{Interrupt, InterruptHandle};
use super::open::{Access, OpenReport, Progress};
use super::sqlite::SqliteSql;
use crate::domain::{CatchUp, Declarations, MemberState};
use crate::error::{Error, Result};
use ids::Spread;

/// How often a member that could not be opened is tried again.
pub const REOPEN_EVERY: Duration = Duration::from_secs(2);
/// How long a member whose read failed is left out of the next reads
/// before it is asked again: a server that went away answers at once,
/// and a stalled one would hold every read of the group.
const UNREAD_FOR: Duration = Duration::from_secs(2);
/// The page cache one ledger keeps alone, in KiB (SQLite's default); a
/// group's members share twice that, so the group's memory is bounded by
/// its pages, not by the number of its ledgers.
const CACHE_KIB: i64 = 4_000;
/// The least a member keeps for the reads the operator waits on: the
/// pages a filter typed key by key reads again stay in memory.
const MEMBER_CACHE_KIB: i64 = 512;
/// What a member keeps on a connection nobody waits on (the counts).
const BACKGROUND_CACHE_KIB: i64 = 128;

/// One ledger of a group, as the command line named it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberSpec {
    /// Its name in the group, unique in it.
    pub name: String,
    /// A SQLite path or a PostgreSQL address.
    pub address: PathBuf,
    /// Why it takes no write (a ledger named read-only), if it takes none.
    pub writes_refused: Option<String>,
}

/// The groups this process declared, each under its path.
static DECLARED: Mutex<Vec<(PathBuf, Vec<MemberSpec>)>> = Mutex::new(Vec::new());

fn declared() -> MutexGuard<'static, Vec<(PathBuf, Vec<MemberSpec>)>> {
    DECLARED.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Declares a group of ledgers under `name`; the path returned opens it
/// ([`Ledger::open`]) as long as this process runs.
pub fn declare(name: &str, members: Vec<MemberSpec>) -> PathBuf {
    let path = PathBuf::from(format!("@{name}"));
    let mut groups = declared();
    groups.retain(|(p, _)| *p != path);
    groups.push((path.clone(), members));
    path
}

fn members_of(path: &Path) -> Option<Vec<MemberSpec>> {
    declared()
        .iter()
        .find(|(p, _)| p == path)
        .map(|(_, m)| m.clone())
}

/// Opens the ledger at `path`, or the group [`declare`] gave that path:
/// how the console opens each of its connections, so none of them needs
/// to know which it has.
pub fn open(path: &Path, access: Access) -> Result<(Ledger, OpenReport)> {
    open_with_progress(path, access, &mut |_| {})
}

/// [`open`], telling an adoption's steps to `progress` (a group's
/// members adopt each on its own, untold).
pub fn open_with_progress(
    path: &Path,
    access: Access,
    progress: &mut dyn FnMut(Progress),
) -> Result<(Ledger, OpenReport)> {
    match members_of(path) {
        Some(specs) => {
            let (group, report) = Group::open(path, specs, access, super::BUSY_TIMEOUT)?;
            Ok((Ledger::from_backend(Box::new(group)), report))
        }
        None => Ledger::open_with_progress(path, access, progress),
    }
}

/// An open group.
pub(crate) struct Group {
    path: PathBuf,
    spread: Spread,
    members: Vec<Arc<Slot>>,
    declarations: Declarations,
    /// Nobody waits on this connection's reads (the header's counts): it
    /// asks its members one at a time, leaving the other cores to the
    /// reads the operator waits on.
    background: AtomicBool,
    /// The shared statements' spelling, for the contract's sake only: a
    /// group runs no statement of its own ([`reads`]).
    dialect: SqliteSql,
}

impl std::fmt::Debug for Group {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.members.iter().map(|s| &*s.name).collect();
        f.debug_struct("Group")
            .field("path", &self.path)
            .field("members", &names)
            .finish()
    }
}

/// One member: its connection once open, and how its last read went.
struct Slot {
    name: Arc<str>,
    /// How many ledgers the group has.
    of: i64,
    spec: MemberSpec,
    access: Access,
    ledger: Mutex<Option<Ledger>>,
    /// Kept apart from the ledger, which a read holds while it runs.
    interrupt: Mutex<Option<InterruptHandle>>,
    declared: Mutex<Declarations>,
    state: Mutex<SlotState>,
}

#[derive(Default)]
struct SlotState {
    /// Why its last read or open failed, and when.
    unread: Option<(String, Instant)>,
    read_only: bool,
    catching_up: Option<CatchUp>,
}

fn locked<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Slot {
    fn open(&self, wait: Duration) -> Result<OpenReport> {
        let (mut ledger, report) =
            Ledger::open_waiting(&self.spec.address, self.access, wait, &mut |_| {})?;
        ledger.cache_within((CACHE_KIB / self.of.max(1)).max(MEMBER_CACHE_KIB));
        ledger.declare(locked(&self.declared).clone());
        *locked(&self.interrupt) = Some(ledger.interrupt_handle());
        let mut state = locked(&self.state);
        // A reading connection is read-only by asking: what the header
        // says is whether the member takes decisions.
        state.read_only = self.spec.writes_refused.is_some()
            || (self.access == Access::ReadWrite && ledger.is_read_only());
        state.unread = None;
        *locked(&self.ledger) = Some(ledger);
        Ok(report)
    }

    fn failed(&self, e: &Error) {
        let line = e.to_string().lines().next().unwrap_or_default().to_string();
        locked(&self.state).unread = Some((line, Instant::now()));
    }

    /// Whether a read should ask it now.
    fn answering(&self) -> bool {
        locked(&self.state)
            .unread
            .as_ref()
            .is_none_or(|(_, at)| at.elapsed() >= UNREAD_FOR)
    }

    /// Runs `f` on its connection; a member not open yet fails, saying why.
    fn with<T>(&self, f: impl FnOnce(&mut Ledger) -> Result<T>) -> Result<T> {
        let mut ledger = locked(&self.ledger);
        match ledger.as_mut() {
            Some(ledger) => f(ledger),
            None => Err(self.not_read(false)),
        }
    }

    /// Why it is not read now: it could not be opened (`opened` false),
    /// or its last read failed a moment ago. Called without its ledger's
    /// lock held.
    fn not_read(&self, opened: bool) -> Error {
        let why = locked(&self.state)
            .unread
            .as_ref()
            .map_or_else(|| "not opened yet".to_string(), |(why, _)| why.clone());
        let (problem, hint) = match opened {
            true => (
                format!("not read: {why}"),
                format!("settle asks it again within {} s", UNREAD_FOR.as_secs()),
            ),
            false => (
                format!("could not be opened: {why}"),
                format!("settle opens it again every {} s", REOPEN_EVERY.as_secs()),
            ),
        };
        Error::in_ledger(&self.name, Error::ledger(&self.spec.address, problem, hint))
    }

    /// Tries to open it every [`REOPEN_EVERY`] until it opens or the group
    /// is gone.
    fn reopen_later(slot: Weak<Slot>) {
        std::thread::spawn(move || {
            loop {
                std::thread::sleep(REOPEN_EVERY);
                let Some(slot) = slot.upgrade() else {
                    return;
                };
                match slot.open(super::BUSY_TIMEOUT) {
                    Ok(_) => return,
                    Err(e) => slot.failed(&e),
                }
            }
        });
    }
}

impl Group {
    fn open(
        path: &Path,
        specs: Vec<MemberSpec>,
        access: Access,
        wait: Duration,
    ) -> Result<(Group, OpenReport)> {
        let of = i64::try_from(specs.len()).unwrap_or(i64::MAX);
        let members: Vec<Arc<Slot>> = specs
            .into_iter()
            .map(|spec| {
                Arc::new(Slot {
                    name: Arc::from(spec.name.as_str()),
                    of,
                    access: match spec.writes_refused {
                        Some(_) => Access::ReadOnly,
                        None => access,
                    },
                    spec,
                    ledger: Mutex::new(None),
                    interrupt: Mutex::new(None),
                    declared: Mutex::new(Declarations::default()),
                    state: Mutex::new(SlotState::default()),
                })
            })
            .collect();
        let opened: Vec<Result<OpenReport>> = std::thread::scope(|scope| {
            let opening: Vec<_> = members
                .iter()
                .map(|slot| scope.spawn(move || slot.open(wait)))
                .collect();
            opening
                .into_iter()
                .map(|o| {
                    o.join()
                        .unwrap_or_else(|_| Err(Error::Usage("a member's open panicked".into())))
                })
                .collect()
        });
        let mut report = OpenReport::default();
        let mut first_failure = None;
        for (slot, opened) in members.iter().zip(opened) {
            match opened {
                Ok(one) => merge::report(&mut report, &slot.name, one),
                Err(e) => {
                    slot.failed(&e);
                    Slot::reopen_later(Arc::downgrade(slot));
                    first_failure.get_or_insert(Error::in_ledger(&slot.name, e));
                }
            }
        }
        if let Some(e) = first_failure
            && members.iter().all(|s| locked(&s.ledger).is_none())
        {
            return Err(e);
        }
        let group = Group {
            path: path.to_path_buf(),
            spread: Spread::of(members.len()),
            members,
            declarations: Declarations::default(),
            background: AtomicBool::new(false),
            dialect: SqliteSql {
                derived: false,
                indexed: Vec::new(),
            },
        };
        Ok((group, report))
    }

    /// Runs `read` on each member `asked` picks (with what it asks it),
    /// in parallel, and gives each answer with its member's index. A
    /// member that fails is left out and said in its state; when every
    /// one asked fails, or a read was interrupted, that is the answer.
    fn each<Q: Sync, T: Send>(
        &self,
        asked: impl Fn(&Slot) -> Option<Q>,
        read: impl Fn(usize, &Ledger, &Q) -> Result<T> + Sync,
    ) -> Result<Vec<(usize, T)>> {
        let picked: Vec<(usize, &Arc<Slot>, Q)> = self
            .members
            .iter()
            .enumerate()
            .filter_map(|(k, slot)| asked(slot).map(|q| (k, slot, q)))
            .collect();
        let runs: Vec<(usize, &Arc<Slot>, &Q)> = picked
            .iter()
            .filter(|(_, slot, _)| slot.answering())
            .map(|(k, slot, q)| (*k, *slot, q))
            .collect();
        let one = |(k, slot, q): (usize, &Arc<Slot>, &Q)| {
            let ledger = locked(&slot.ledger);
            match ledger.as_ref() {
                Some(ledger) => read(k, ledger, q),
                None => Err(slot.not_read(false)),
            }
        };
        let answers: Vec<Result<T>> = if runs.len() == 1 || self.background.load(Ordering::Relaxed)
        {
            runs.iter().map(|&run| one(run)).collect()
        } else {
            std::thread::scope(|scope| {
                let running: Vec<_> = runs
                    .iter()
                    .map(|&run| scope.spawn(move || one(run)))
                    .collect();
                running
                    .into_iter()
                    .map(|r| {
                        r.join().unwrap_or_else(|_| {
                            Err(Error::Usage("a member's read panicked".into()))
                        })
                    })
                    .collect()
            })
        };
        let mut got = Vec::with_capacity(answers.len());
        let mut first_failure = None;
        for ((k, slot, _), answer) in runs.iter().zip(answers) {
            match answer {
                Ok(t) => {
                    locked(&slot.state).unread = None;
                    got.push((*k, t));
                }
                Err(e @ Error::Interrupted { .. }) => return Err(e),
                Err(e) => {
                    slot.failed(&e);
                    first_failure.get_or_insert(Error::in_ledger(&slot.name, e));
                }
            }
        }
        match first_failure {
            Some(e) if got.is_empty() => Err(e),
            _ if got.is_empty() && !picked.is_empty() => {
                let slot = picked[0].1;
                let opened = locked(&slot.ledger).is_some();
                Err(slot.not_read(opened))
            }
            _ => Ok(got),
        }
    }

    /// [`Group::each`] on every member.
    fn every<T: Send>(
        &self,
        read: impl Fn(usize, &Ledger) -> Result<T> + Sync,
    ) -> Result<Vec<(usize, T)>> {
        self.each(|_| Some(()), |k, ledger, ()| read(k, ledger))
    }
}

impl Session for Group {
    fn path(&self) -> &Path {
        &self.path
    }

    fn file(&self) -> Option<&Path> {
        None
    }

    fn schema_version(&self) -> i64 {
        self.members
            .iter()
            .find_map(|s| locked(&s.ledger).as_ref().map(Ledger::schema_version))
            .unwrap_or(0)
    }

    fn is_read_only(&self) -> bool {
        self.members
            .iter()
            .all(|s| locked(&s.ledger).as_ref().is_none_or(Ledger::is_read_only))
    }

    /// Changes when any member's does, or a member comes or goes.
    fn data_version(&self) -> Result<i64> {
        use std::hash::{Hash, Hasher};
        let versions: Vec<Option<i64>> = self
            .members
            .iter()
            .map(|s| {
                locked(&s.ledger)
                    .as_ref()
                    .and_then(|l| l.data_version().ok())
            })
            .collect();
        if versions.iter().all(Option::is_none) {
            let slot = &self.members[0];
            let opened = locked(&slot.ledger).is_some();
            return Err(slot.not_read(opened));
        }
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        versions.hash(&mut hasher);
        Ok(i64::from_ne_bytes(hasher.finish().to_ne_bytes()))
    }

    fn reinspect(&mut self) -> Result<()> {
        for slot in &self.members {
            if let Some(ledger) = locked(&slot.ledger).as_mut() {
                ledger
                    .reinspect()
                    .map_err(|e| Error::in_ledger(&slot.name, e))?;
            }
        }
        Ok(())
    }

    fn interrupt_handle(&self) -> InterruptHandle {
        InterruptHandle::new(Interrupts(self.members.clone()))
    }

    fn why_not_writable(&self) -> Error {
        let why: Vec<String> = self
            .members
            .iter()
            .map(|s| match &s.spec.writes_refused {
                Some(why) => format!("{}: {why}", s.name),
                None => format!("{}: opened read-only", s.name),
            })
            .collect();
        Error::ledger(
            &self.path,
            format!("no ledger of the group takes a write ({})", why.join("; ")),
            "open the group without --read-only, or decide in a ledger that takes writes",
        )
    }

    /// Blocked when every member that writes is.
    fn writes_blocked(&mut self) -> Option<String> {
        let mut blocked = Vec::new();
        let mut writing = 0;
        for slot in &self.members {
            let mut ledger = locked(&slot.ledger);
            let Some(ledger) = ledger.as_mut().filter(|l| !l.is_read_only()) else {
                continue;
            };
            writing += 1;
            let why = ledger.writes_blocked();
            locked(&slot.state).read_only = why.is_some();
            if let Some(why) = why {
                blocked.push(format!("{}: {why}", slot.name));
            }
        }
        (writing > 0 && blocked.len() == writing).then(|| blocked.join("; "))
    }

    fn declare(&mut self, declarations: Declarations) {
        for slot in &self.members {
            *locked(&slot.declared) = declarations.clone();
            if let Some(ledger) = locked(&slot.ledger).as_mut() {
                ledger.declare(declarations.clone());
            }
        }
        self.declarations = declarations;
    }

    fn declarations(&self) -> &Declarations {
        &self.declarations
    }

    fn members(&self) -> Vec<MemberState> {
        self.members
            .iter()
            .map(|slot| {
                let state = locked(&slot.state);
                MemberState {
                    name: slot.name.to_string(),
                    down: state.unread.as_ref().map(|(why, _)| why.clone()),
                    read_only: state.read_only,
                    catching_up: state.catching_up,
                }
            })
            .collect()
    }
}

/// Stops the read running on every member.
struct Interrupts(Vec<Arc<Slot>>);

impl Interrupt for Interrupts {
    fn interrupt(&self) {
        for slot in &self.0 {
            if let Some(handle) = locked(&slot.interrupt).as_ref() {
                handle.interrupt();
            }
        }
    }
}

impl ReadModel for Group {
    fn catch_up_in_steps(&self, waiter: Waiter) {
        let background = waiter == Waiter::Background;
        self.background.store(background, Ordering::Relaxed);
        for slot in &self.members {
            if let Some(ledger) = locked(&slot.ledger).as_ref() {
                ledger.catch_up_in_steps(waiter);
                if background {
                    ledger.cache_within(BACKGROUND_CACHE_KIB);
                }
            }
        }
    }

    fn catching_up(&self) -> Option<CatchUp> {
        let mut all: Option<CatchUp> = None;
        for slot in &self.members {
            let behind = locked(&slot.ledger).as_ref().and_then(Ledger::catching_up);
            locked(&slot.state).catching_up = behind;
            if let Some(b) = behind {
                let sum = all.get_or_insert(CatchUp { done: 0, total: 0 });
                sum.done += b.done;
                sum.total += b.total;
            }
        }
        all
    }

    fn catch_up(&self) -> Result<Option<CatchUp>> {
        self.every(|_, ledger| match ledger.catching_up() {
            Some(_) => ledger.catch_up().map(|_| ()),
            None => Ok(()),
        })?;
        Ok(self.catching_up())
    }

    fn set_aside(&self, _failed: &Error) -> bool {
        // Each member's own ledger sets its read model aside.
        false
    }
}

impl Backend for Group {
    fn read_model(&self) -> Option<&dyn ReadModel> {
        Some(self)
    }
}

#[cfg(test)]
mod tests;
