//! A TCP proxy in front of a server's Unix socket that a test controls,
//! for a network that drops between settle and PostgreSQL: it forwards,
//! stalls (holds every byte in both directions, the connections left
//! open, as a network that drops packets leaves them), and resets (every
//! connection through it closed at once, as a middlebox or a failed link
//! does). Runs on threads of the test process.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub struct Proxy {
    pub port: u16,
    stalled: Arc<AtomicBool>,
    /// Resets so far: bytes held across one are dropped, as the link drops them.
    resets: Arc<AtomicU64>,
    open: Arc<Mutex<Vec<TcpStream>>>,
}

impl Proxy {
    /// Listens on 127.0.0.1 and forwards to the Unix socket `target`.
    pub fn to_unix(target: &Path) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let stalled = Arc::new(AtomicBool::new(false));
        let resets = Arc::new(AtomicU64::new(0));
        let open = Arc::new(Mutex::new(Vec::new()));
        let link = Link {
            stalled: stalled.clone(),
            resets: resets.clone(),
        };
        let (o, target) = (open.clone(), target.to_path_buf());
        std::thread::spawn(move || accept(listener, target, link, o));
        Proxy {
            port,
            stalled,
            resets,
            open,
        }
    }

    /// Holds every byte from now on, in both directions.
    pub fn stall(&self) {
        self.stalled.store(true, Ordering::SeqCst);
    }

    /// Closes every connection through it and forwards again.
    pub fn reset(&self) {
        self.resets.fetch_add(1, Ordering::SeqCst);
        for stream in self.open.lock().unwrap().drain(..) {
            let _ = stream.shutdown(Shutdown::Both);
        }
        self.stalled.store(false, Ordering::SeqCst);
    }
}

/// What each direction of each connection reads of the proxy's state.
#[derive(Clone)]
struct Link {
    stalled: Arc<AtomicBool>,
    resets: Arc<AtomicU64>,
}

fn accept(listener: TcpListener, target: PathBuf, link: Link, open: Arc<Mutex<Vec<TcpStream>>>) {
    for client in listener.incoming().flatten() {
        let Ok(server) = UnixStream::connect(&target) else {
            continue;
        };
        open.lock().unwrap().push(client.try_clone().unwrap());
        let (c2, s2) = (client.try_clone().unwrap(), server.try_clone().unwrap());
        let (l1, l2) = (link.clone(), link.clone());
        let s3 = server.try_clone().unwrap();
        std::thread::spawn(move || {
            pump(client, server, l1);
            let _ = s3.shutdown(Shutdown::Both);
        });
        std::thread::spawn(move || pump(s2, c2, l2));
    }
}

/// Copies `from` to `to`, holding what it read while stalled; ends when
/// either side closes.
fn pump(mut from: impl Read, mut to: impl Write, link: Link) {
    let mut buf = [0u8; 16 * 1024];
    while let Ok(n) = from.read(&mut buf) {
        if n == 0 {
            break;
        }
        let resets = link.resets.load(Ordering::SeqCst);
        while link.stalled.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(10));
        }
        if link.resets.load(Ordering::SeqCst) != resets || to.write_all(&buf[..n]).is_err() {
            break;
        }
    }
}
