//! A connection that stops answering (a network that drops packets, a
//! proxy or a middlebox that holds them) cut by settle itself: the client
//! library waits for a reply without end, and the server's statement
//! timeout cannot help a statement that never reached it or a reply that
//! never comes back. The client library does not hand out its socket, so
//! each new connection's socket is found among the process's own
//! (`/proc/self/fd`), its peer noted under the host settle connected to,
//! and a stall shuts down this process's sockets to that peer
//! (`pidfd_getfd` gives a second handle to the same socket, safely). The
//! blocked call then returns as on a connection the server closed. Where
//! the process's sockets cannot be seen, nothing is noted and nothing cut:
//! a stall then waits for the operating system's TCP timeouts.

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::os::fd::OwnedFd;
use std::sync::{Mutex, MutexGuard, PoisonError};

use rustix::process::{PidfdFlags, PidfdGetfdFlags};

/// Each host's peers (`host:port` as shown) this process connected to.
static PEERS: Mutex<BTreeMap<String, BTreeSet<SocketAddr>>> = Mutex::new(BTreeMap::new());

fn peers() -> MutexGuard<'static, BTreeMap<String, BTreeSet<SocketAddr>>> {
    PEERS.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The descriptors of the process's sockets, now.
pub(crate) fn sockets() -> BTreeSet<i32> {
    let Ok(dir) = std::fs::read_dir("/proc/self/fd") else {
        return BTreeSet::new();
    };
    dir.filter_map(|entry| entry.ok())
        .filter(|entry| {
            std::fs::read_link(entry.path())
                .is_ok_and(|link| link.to_string_lossy().starts_with("socket:"))
        })
        .filter_map(|entry| entry.file_name().to_str()?.parse().ok())
        .collect()
}

/// The process itself, to take second handles to its own sockets with.
fn this_process() -> Option<OwnedFd> {
    rustix::process::pidfd_open(rustix::process::getpid(), PidfdFlags::empty()).ok()
}

/// A second handle to socket `fd` and its TCP peer.
fn peer_of(process: &OwnedFd, fd: i32) -> Option<(OwnedFd, SocketAddr)> {
    let socket = rustix::process::pidfd_getfd(process, fd, PidfdGetfdFlags::empty()).ok()?;
    let peer = rustix::net::getpeername(&socket).ok()??;
    Some((socket, SocketAddr::try_from(peer).ok()?))
}

/// Notes the peers on `port` of the sockets opened since `before`, as
/// `host`'s: the connection just made to it (and, when another thread
/// connected to the same port meanwhile, that one too: cut with it).
pub(crate) fn note(host: &str, port: u16, before: &BTreeSet<i32>) {
    let Some(process) = this_process() else {
        return;
    };
    let found: Vec<SocketAddr> = sockets()
        .difference(before)
        .filter_map(|fd| peer_of(&process, *fd))
        .map(|(_, peer)| peer)
        .filter(|peer| peer.port() == port)
        .collect();
    if !found.is_empty() {
        peers().entry(host.to_string()).or_default().extend(found);
    }
}

/// Whether a stall on `hosts` can be cut: a peer of one of them is known.
pub(crate) fn watched(hosts: &[String]) -> bool {
    let peers = peers();
    hosts.iter().any(|host| peers.contains_key(host))
}

/// Shuts down every socket of this process to a peer of `hosts`; how many.
pub(crate) fn cut(hosts: &[String]) -> usize {
    let wanted: BTreeSet<SocketAddr> = {
        let peers = peers();
        hosts
            .iter()
            .filter_map(|host| peers.get(host))
            .flatten()
            .copied()
            .collect()
    };
    let Some(process) = this_process() else {
        return 0;
    };
    sockets()
        .into_iter()
        .filter_map(|fd| peer_of(&process, fd))
        .filter(|(_, peer)| wanted.contains(peer))
        .filter(|(socket, _)| rustix::net::shutdown(socket, rustix::net::Shutdown::Both).is_ok())
        .count()
}

/// What a passed [`crate::store::interrupt::Deadline`] does to a ledger's
/// connections: cuts every one to its hosts.
pub(crate) struct Cut(pub Vec<String>);

impl crate::store::interrupt::Interrupt for Cut {
    fn interrupt(&self) {
        cut(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn a_noted_connection_is_found_and_cut_and_its_blocked_read_returns() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let before = sockets();
        let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        let (_held, _) = listener.accept().unwrap();
        let host = format!("stall-test:{port}");
        note(&host, port, &before);
        if !watched(std::slice::from_ref(&host)) {
            // No /proc or no pidfd_getfd here: nothing to cut with.
            return;
        }
        let reader = std::thread::spawn(move || stream.read(&mut [0u8; 1]).map_err(|e| e.kind()));
        std::thread::sleep(std::time::Duration::from_millis(100));
        assert_eq!(cut(std::slice::from_ref(&host)), 1);
        assert_eq!(
            reader.join().unwrap(),
            Ok(0),
            "the blocked read returned, at its end"
        );
    }
}
