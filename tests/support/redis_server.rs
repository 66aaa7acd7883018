//! A throwaway `redis-server` for tests, examples and benches: each
//! [`RedisServer`] runs its own process on a free loopback port with a fresh
//! data directory, and offers the faults a durable queue must survive
//! (SIGKILL, SIGSTOP/SIGCONT, a restart that reloads the AOF).
//!
//! Include it with `#[path = "support/redis_server.rs"] mod redis_server;`.
//! It uses std only, so it compiles in the `no_std` library's unit tests as
//! well as in test, example and bench crates.
//!
//! The binary is `$TICKWHEEL_REDIS_SERVER`, else `redis-server` on `PATH`,
//! else `/usr/bin/redis-server` or `/usr/local/bin/redis-server`. Where
//! there is none, [`RedisServer::start_or_skip`] says so once and the test
//! returns without running; with `TICKWHEEL_REQUIRE_REDIS=1` (as `.ci/run`
//! sets) a missing server is a failure instead.
#![allow(dead_code)]

// Explicit, so that this file also compiles inside the `no_std` library.
extern crate alloc;

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::net::{Ipv4Addr, SocketAddr};
use core::sync::atomic::{AtomicU64, Ordering};
use core::time::Duration;
use std::fs::{self, File};
use std::io::{self, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{self, Child, Command, Stdio};
use std::thread;
use std::time::Instant;

#[path = "redis_wire.rs"]
mod wire;
use wire::{encode, ping, read_reply};
#[path = "redis_binary.rs"]
mod binary;
#[path = "redis_config.rs"]
mod config;
use binary::server_binary;
#[allow(unused_imports)]
pub(crate) use binary::{find_binary, skip};
use config::write_config;
#[allow(unused_imports)] // Some includers name only `Config`.
pub(crate) use config::{Config, Fsync};

/// How long a server may take to answer PING after it was spawned
/// (including loading its AOF).
const READY_TIMEOUT: Duration = Duration::from_secs(10);

/// How often a fresh port is tried when another process took it first.
const PORT_ATTEMPTS: u32 = 8;

/// Data directories made by this process, so parallel tests never share one.
static NEXT_DIR: AtomicU64 = AtomicU64::new(0);

/// A `redis-server` process owned by a test; killed, and its data
/// directory removed, on drop.
#[derive(Debug)]
pub(crate) struct RedisServer {
    child: Option<Child>,
    pid: u32,
    port: u16,
    dir: PathBuf,
    config: Config,
}

impl RedisServer {
    /// Starts a server with the default [`Config`], or `None` where there
    /// is no `redis-server` (see [`RedisServer::start_with_or_skip`]).
    #[track_caller]
    pub(crate) fn start_or_skip() -> Option<RedisServer> {
        RedisServer::start_with_or_skip(Config::default())
    }

    /// Starts a server with `config`; where no `redis-server` is
    /// installed, prints once (past the test harness's capture) that the
    /// Redis tests did not run and how to run them, and returns `None`,
    /// unless `TICKWHEEL_REQUIRE_REDIS` is set, which makes it a failure.
    #[track_caller]
    pub(crate) fn start_with_or_skip(config: Config) -> Option<RedisServer> {
        if binary::skip() {
            return None;
        }
        Some(RedisServer::start_with(config))
    }

    /// Starts a server with the default [`Config`].
    #[track_caller]
    pub(crate) fn start() -> RedisServer {
        RedisServer::start_with(Config::default())
    }

    /// Starts a server with `config` on a free port, and waits until it
    /// answers PING.
    #[track_caller]
    pub(crate) fn start_with(config: Config) -> RedisServer {
        match RedisServer::try_start_with(config) {
            Ok(server) => server,
            Err(why) => panic!("{why}"),
        }
    }

    /// As [`RedisServer::start_with`], but says why the server did not
    /// start instead of panicking (for examples, which report it).
    pub(crate) fn try_start_with(config: Config) -> Result<RedisServer, String> {
        let binary = binary::try_server_binary()?;
        let dir = fresh_dir();
        let mut last_failure = String::new();
        for _ in 0..PORT_ATTEMPTS {
            let port = free_port();
            write_config(&dir, port, &config);
            let mut child = match try_spawn(&binary, &dir, config.sentinel) {
                Ok(child) => child,
                Err(why) => {
                    let _ = fs::remove_dir_all(&dir);
                    return Err(why);
                }
            };
            match wait_ready(&mut child, port, &dir, config.tls_only) {
                Ok(()) => {
                    return Ok(RedisServer {
                        pid: child.id(),
                        child: Some(child),
                        port,
                        dir,
                        config,
                    })
                }
                Err(why) => {
                    reap(&mut child);
                    last_failure = failure_report(&why, &dir);
                    // Another process may have taken the port between
                    // our probe and the server's bind: try another one.
                    if !last_failure.contains("Address already in use") {
                        break;
                    }
                }
            }
        }
        let _ = fs::remove_dir_all(&dir);
        Err(format!("redis-server did not start: {last_failure}"))
    }

    /// The TCP port the server listens on (on 127.0.0.1).
    pub(crate) fn port(&self) -> u16 {
        self.port
    }

    /// The server's URL, `redis://127.0.0.1:port/`.
    pub(crate) fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// The server's address, `127.0.0.1:port`.
    pub(crate) fn addr(&self) -> SocketAddr {
        SocketAddr::from((Ipv4Addr::LOCALHOST, self.port))
    }

    /// Whether this server still has its process (not [`kill9`](Self::kill9)ed).
    #[allow(dead_code)] // Only some tests include it.
    pub(crate) fn has_process(&self) -> bool {
        self.child.is_some()
    }

    /// The process id of the current (or, after `kill9`, the last) server process.
    pub(crate) fn pid(&self) -> u32 {
        self.pid
    }

    /// The server's data directory (AOF, `redis.conf`, `redis.log`).
    pub(crate) fn data_dir(&self) -> &Path {
        &self.dir
    }

    /// Whether a server process is running (it may be stopped by SIGSTOP).
    pub(crate) fn is_running(&mut self) -> bool {
        match &mut self.child {
            Some(child) => matches!(child.try_wait(), Ok(None)),
            None => false,
        }
    }

    /// Kills the server with SIGKILL and waits for it to exit; the data
    /// directory stays, for [`restart`](Self::restart).
    pub(crate) fn kill9(&mut self) {
        if let Some(mut child) = self.child.take() {
            // SIGKILL ends a stopped process too.
            reap(&mut child);
        }
    }

    /// Freezes the server with SIGSTOP: connections are still accepted by
    /// the kernel, but nothing is answered until [`cont_signal`](Self::cont_signal).
    #[track_caller]
    pub(crate) fn stop_signal(&self) {
        self.signal("-STOP");
        // Wait until the kernel shows it stopped, where /proc tells.
        let stat = PathBuf::from(format!("/proc/{}/stat", self.pid));
        let deadline = Instant::now() + Duration::from_secs(2);
        while Instant::now() < deadline {
            match fs::read_to_string(&stat) {
                Ok(text) if process_state(&text) == Some('T') => return,
                Ok(_) => thread::sleep(Duration::from_millis(1)),
                Err(_) => return,
            }
        }
        panic!("redis-server {} did not stop after SIGSTOP", self.pid);
    }

    /// Resumes a server frozen by [`stop_signal`](Self::stop_signal).
    #[track_caller]
    pub(crate) fn cont_signal(&self) {
        self.signal("-CONT");
    }

    /// Starts a new server process on the same port, data directory and
    /// config (SIGKILLing the current one if it still runs), and waits until
    /// it has loaded its AOF and answers PING.
    #[track_caller]
    pub(crate) fn restart(&mut self) {
        self.kill9();
        let binary = server_binary();
        let mut last_failure = String::new();
        // The port was ours a moment ago; retry briefly if it is not free yet.
        for _ in 0..PORT_ATTEMPTS {
            let mut child = spawn(&binary, &self.dir, self.config.sentinel);
            match wait_ready(&mut child, self.port, &self.dir, self.config.tls_only) {
                Ok(()) => {
                    self.pid = child.id();
                    self.child = Some(child);
                    return;
                }
                Err(why) => {
                    reap(&mut child);
                    last_failure = failure_report(&why, &self.dir);
                    if !last_failure.contains("Address already in use") {
                        break;
                    }
                    thread::sleep(Duration::from_millis(100));
                }
            }
        }
        panic!(
            "redis-server did not restart on port {}: {last_failure}",
            self.port
        );
    }

    /// Kills the server (SIGKILL) and removes its data directory, as drop does.
    pub(crate) fn shutdown(self) {
        drop(self);
    }

    /// `total_commands_processed` from `INFO stats` (this call's own INFO
    /// not yet counted).
    #[track_caller]
    pub(crate) fn commands_processed(&self) -> u64 {
        let info = self.command(&["INFO", "stats"]);
        info.lines()
            .find_map(|line| line.strip_prefix("total_commands_processed:"))
            .and_then(|n| n.trim().parse().ok())
            .expect("INFO stats has total_commands_processed")
    }

    /// Sends one command on a fresh connection and returns the raw RESP
    /// reply (`+PONG\r\n`, `$5\r\nhello\r\n`, …). Panics on any I/O error
    /// or after 5 s without a reply.
    #[track_caller]
    pub(crate) fn command(&self, args: &[&str]) -> String {
        match self.try_command(args, Duration::from_secs(5)) {
            Ok(reply) => reply,
            Err(e) => panic!("redis command {args:?} failed: {e}"),
        }
    }

    /// Sends one command on a fresh connection and returns the raw RESP
    /// reply, or the error (`WouldBlock`/`TimedOut` when no reply came
    /// within `timeout`).
    pub(crate) fn try_command(&self, args: &[&str], timeout: Duration) -> io::Result<String> {
        let mut stream = TcpStream::connect_timeout(&self.addr(), timeout)?;
        stream.set_read_timeout(Some(timeout))?;
        stream.set_write_timeout(Some(timeout))?;
        let mut reply = Vec::new();
        if let Some(password) = &self.config.password {
            stream.write_all(&encode(&["AUTH", password]))?;
            read_reply(&mut BufReader::new(&stream), &mut reply)?;
            reply.clear();
        }
        stream.write_all(&encode(args))?;
        let mut reader = BufReader::new(stream);
        read_reply(&mut reader, &mut reply)?;
        Ok(String::from_utf8_lossy(&reply).into_owned())
    }

    #[track_caller]
    fn signal(&self, which: &str) {
        // After `kill9` the pid may already belong to another process.
        assert!(
            self.child.is_some(),
            "kill {which}: the server is not running"
        );
        let status = Command::new("kill")
            .arg(which)
            .arg(self.pid.to_string())
            .status();
        match status {
            Ok(s) if s.success() => {}
            other => panic!("kill {which} {} failed: {other:?}", self.pid),
        }
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            // In case it is stopped: SIGKILL works on a stopped process,
            // but a resumed one exits the same way and leaves no doubt.
            let _ = Command::new("kill")
                .arg("-CONT")
                .arg(child.id().to_string())
                .stderr(Stdio::null())
                .status();
            reap(&mut child);
        }
        let _ = fs::remove_dir_all(&self.dir);
    }
}

/// A new, empty directory under the system's temp dir, unique to this
/// process and call.
fn fresh_dir() -> PathBuf {
    let n = NEXT_DIR.fetch_add(1, Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("tickwheel-redis-{}-{n}", process::id()));
    // A leftover from an earlier process that had the same pid.
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("cannot create {}: {e}", dir.display()));
    dir
}

/// The `redis-server` binary the harness runs.
#[allow(dead_code)] // Only some tests include it.
pub(crate) fn binary_path() -> PathBuf {
    server_binary()
}

/// A port that was free a moment ago (the OS picked it for us).
fn free_port() -> u16 {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .unwrap_or_else(|e| panic!("cannot bind a loopback port: {e}"));
    listener.local_addr().expect("local_addr").port()
}

/// Spawns the server on `dir/redis.conf`; what it prints before its log
/// file is open goes to `dir/stderr.log`.
#[track_caller]
fn spawn(binary: &Path, dir: &Path, sentinel: bool) -> Child {
    match try_spawn(binary, dir, sentinel) {
        Ok(child) => child,
        Err(why) => panic!("{why}"),
    }
}

/// As [`spawn`], but says why it failed instead of panicking.
fn try_spawn(binary: &Path, dir: &Path, sentinel: bool) -> Result<Child, String> {
    let stderr = File::create(dir.join("stderr.log"))
        .map_err(|e| format!("cannot create stderr.log in {}: {e}", dir.display()))?;
    let mut command = Command::new(binary);
    command.arg(dir.join("redis.conf"));
    if sentinel {
        command.arg("--sentinel");
    }
    command
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(stderr)
        .spawn()
        .map_err(|e| format!("cannot spawn {}: {e}", binary.display()))
}

/// SIGKILLs `child` (if it still runs) and waits for it.
fn reap(child: &mut Child) {
    let _ = child.kill();
    let _ = child.wait();
}

/// Waits until the server on `port` answers `+PONG` (`-LOADING` means
/// it is still reading its AOF), or says why it never will.
fn wait_ready(child: &mut Child, port: u16, dir: &Path, tls_only: bool) -> Result<(), String> {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let deadline = Instant::now() + READY_TIMEOUT;
    // A TLS-only server cannot be pinged in plain TCP: its log says when
    // it is ready (and a restart appends to the same log: count lines).
    let log = dir.join("redis.log");
    let ready_before = count_ready(&log);
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Err(format!("the server exited ({status})")),
            Ok(None) => {}
            Err(e) => return Err(format!("cannot wait for the server: {e}")),
        }
        let last = if tls_only {
            if count_ready(&log) > ready_before {
                return Ok(());
            }
            String::from("its log does not say it is ready yet")
        } else {
            match ping(addr) {
                // NOAUTH: up, and asking for a password.
                Ok(reply) if reply.starts_with("+PONG") || reply.starts_with("-NOAUTH") => {
                    return Ok(())
                }
                Ok(reply) => format!("PING answered {:?}", reply.trim_end()),
                Err(e) => format!("PING failed: {e}"),
            }
        };
        if Instant::now() >= deadline {
            return Err(format!(
                "no +PONG within {READY_TIMEOUT:?} on port {port} ({last})"
            ));
        }
        thread::sleep(Duration::from_millis(10));
    }
}

/// How many times the log says the server is ready.
fn count_ready(log: &Path) -> usize {
    fs::read_to_string(log)
        .map(|text| text.matches("Ready to accept connections").count())
        .unwrap_or(0)
}

/// Why the server failed, with the tails of its log and stderr.
fn failure_report(why: &str, dir: &Path) -> String {
    format!(
        "{why}\n--- {dir}/redis.log (tail) ---\n{log}\n--- stderr ---\n{stderr}",
        dir = dir.display(),
        log = tail(&dir.join("redis.log"), 20),
        stderr = tail(&dir.join("stderr.log"), 20),
    )
}

/// The last `n` lines of a file, or why it cannot be read.
fn tail(path: &Path, n: usize) -> String {
    match fs::read(path) {
        Ok(bytes) => {
            let text = String::from_utf8_lossy(&bytes);
            let lines: Vec<&str> = text.lines().collect();
            lines[lines.len().saturating_sub(n)..].join("\n")
        }
        Err(e) => format!("({e})"),
    }
}

/// The state letter of a `/proc/<pid>/stat` line (after the `(comm)`).
fn process_state(stat: &str) -> Option<char> {
    let after = stat.rfind(')')?;
    stat[after + 1..].trim_start().chars().next()
}
