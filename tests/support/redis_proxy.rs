//! A TCP proxy in front of a test's `redis-server` that loses replies the
//! way a failing network does: every request goes through, and, when
//! armed, the reply to the next request holding a given byte pattern is
//! dropped and that client's connection closed, after the server acted.
//!
//! Include it with `#[path = "support/redis_proxy.rs"] mod redis_proxy;`.
#![allow(dead_code)]

extern crate alloc;

use alloc::format;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::net::{Ipv4Addr, SocketAddr};
use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use core::time::Duration;
use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::Mutex;
use std::thread::{self, JoinHandle};
use std::time::Instant;

/// The proxy; stops accepting (and closes what it proxies) on drop.
pub(crate) struct LossyProxy {
    port: u16,
    shared: Arc<Shared>,
    acceptor: Option<JoinHandle<()>>,
}

struct Shared {
    target: SocketAddr,
    /// Patterns whose next request's reply is to be lost, each once.
    armed: Mutex<Vec<Vec<u8>>>,
    lost: AtomicUsize,
    connections: AtomicUsize,
    stop: AtomicBool,
    /// Server-to-client bytes are thrown away (a one-way partition).
    cut: AtomicBool,
    sockets: Mutex<Vec<TcpStream>>,
    /// How long new connections wait, unaccepted, after a reply is lost.
    hold_for: Mutex<Duration>,
    /// Until when they wait (set when a reply is lost).
    held_until: Mutex<Option<Instant>>,
}

impl LossyProxy {
    /// A proxy on a free loopback port, forwarding to `target`.
    pub(crate) fn start(target: SocketAddr) -> LossyProxy {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind the proxy");
        listener
            .set_nonblocking(true)
            .expect("nonblocking listener");
        let port = listener.local_addr().expect("local_addr").port();
        let shared = Arc::new(Shared {
            target,
            armed: Mutex::new(Vec::new()),
            lost: AtomicUsize::new(0),
            connections: AtomicUsize::new(0),
            stop: AtomicBool::new(false),
            cut: AtomicBool::new(false),
            sockets: Mutex::new(Vec::new()),
            hold_for: Mutex::new(Duration::ZERO),
            held_until: Mutex::new(None),
        });
        let acceptor = {
            let shared = Arc::clone(&shared);
            thread::spawn(move || accept(&listener, &shared))
        };
        LossyProxy {
            port,
            shared,
            acceptor: Some(acceptor),
        }
    }

    /// `redis://127.0.0.1:port/`, through the proxy.
    pub(crate) fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// Loses the reply to the next request that contains `pattern`.
    pub(crate) fn lose_reply_to(&self, pattern: &[u8]) {
        self.shared.armed.lock().unwrap().push(pattern.to_vec());
    }

    /// From now on, each lost reply also keeps new connections waiting,
    /// unaccepted, for `hold`: the retry after it reaches the server that
    /// much later (a slow reconnect), whatever the client's backoff.
    #[allow(dead_code)] // Not every test that includes the proxy holds.
    pub(crate) fn hold_after_loss(&self, hold: Duration) {
        *self.shared.hold_for.lock().unwrap() = hold;
    }

    /// Whether an armed pattern is still waiting for its request.
    pub(crate) fn armed(&self) -> bool {
        !self.shared.armed.lock().unwrap().is_empty()
    }

    /// From now on, throws away everything the server sends (requests
    /// still go through): a replica behind this proxy stops receiving the
    /// replication stream, as behind a partition.
    #[allow(dead_code)] // Not every test that includes the proxy cuts it.
    pub(crate) fn cut_replies(&self) {
        self.shared.cut.store(true, Ordering::SeqCst);
    }

    /// Replies lost so far.
    pub(crate) fn lost(&self) -> usize {
        self.shared.lost.load(Ordering::SeqCst)
    }

    /// Client connections accepted so far.
    pub(crate) fn connections(&self) -> usize {
        self.shared.connections.load(Ordering::SeqCst)
    }
}

impl Drop for LossyProxy {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        for socket in self.shared.sockets.lock().unwrap().drain(..) {
            let _ = socket.shutdown(Shutdown::Both);
        }
        if let Some(acceptor) = self.acceptor.take() {
            let _ = acceptor.join();
        }
    }
}

fn accept(listener: &TcpListener, shared: &Arc<Shared>) {
    while !shared.stop.load(Ordering::SeqCst) {
        let held = *shared.held_until.lock().unwrap();
        if held.is_some_and(|until| Instant::now() < until) {
            thread::sleep(Duration::from_millis(2));
            continue;
        }
        match listener.accept() {
            Ok((client, _)) => {
                let Ok(server) = TcpStream::connect(shared.target) else {
                    continue;
                };
                shared.connections.fetch_add(1, Ordering::SeqCst);
                let _ = client.set_nonblocking(false);
                let _ = client.set_nodelay(true);
                let _ = server.set_nodelay(true);
                {
                    let mut sockets = shared.sockets.lock().unwrap();
                    if let (Ok(c), Ok(s)) = (client.try_clone(), server.try_clone()) {
                        sockets.push(c);
                        sockets.push(s);
                    }
                }
                let doomed = Arc::new(AtomicBool::new(false));
                let up = {
                    let (shared, doomed) = (Arc::clone(shared), Arc::clone(&doomed));
                    let (from, to) = (client.try_clone().unwrap(), server.try_clone().unwrap());
                    move || requests(from, to, &shared, &doomed)
                };
                let down = {
                    let (shared, doomed) = (Arc::clone(shared), Arc::clone(&doomed));
                    move || replies(server, client, &shared, &doomed)
                };
                thread::spawn(up);
                thread::spawn(down);
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => thread::sleep(Duration::from_millis(2)),
            Err(_) => thread::sleep(Duration::from_millis(2)),
        }
    }
}

/// Client to server: marks the connection doomed before forwarding a
/// request that holds an armed pattern.
fn requests(mut from: TcpStream, mut to: TcpStream, shared: &Shared, doomed: &AtomicBool) {
    let mut buf = vec![0u8; 64 * 1024];
    // The tail of the previous chunk, so a pattern split across reads is
    // still seen.
    let mut tail: Vec<u8> = Vec::new();
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let mut window = core::mem::take(&mut tail);
        window.extend_from_slice(&buf[..n]);
        {
            let mut armed = shared.armed.lock().unwrap();
            if let Some(i) = armed.iter().position(|p| contains(&window, p)) {
                armed.remove(i);
                doomed.store(true, Ordering::SeqCst);
            }
        }
        let keep = window.len().min(256);
        tail = window[window.len() - keep..].to_vec();
        if to.write_all(&buf[..n]).is_err() {
            break;
        }
    }
    let _ = to.shutdown(Shutdown::Write);
}

/// Server to client: once the connection is doomed, the next reply is
/// read and thrown away, and both sides are closed.
fn replies(mut from: TcpStream, mut to: TcpStream, shared: &Shared, doomed: &AtomicBool) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if shared.cut.load(Ordering::SeqCst) {
            continue;
        }
        if doomed.load(Ordering::SeqCst) {
            let hold = *shared.hold_for.lock().unwrap();
            if !hold.is_zero() {
                *shared.held_until.lock().unwrap() = Some(Instant::now() + hold);
            }
            shared.lost.fetch_add(1, Ordering::SeqCst);
            let _ = to.shutdown(Shutdown::Both);
            let _ = from.shutdown(Shutdown::Both);
            return;
        }
        if to.write_all(&buf[..n]).is_err() {
            break;
        }
    }
    let _ = to.shutdown(Shutdown::Both);
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && haystack.windows(needle.len()).any(|w| w == needle)
}
