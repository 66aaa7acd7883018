//! A master with a password, its replica (in sync) and one sentinel (with
//! a password of its own) watching them, all real `redis-server`
//! processes, optionally with TLS beside each plain port; every process is
//! killed and its directory removed on drop.
//!
//! Include it after `redis_server.rs` and `tls_certs.rs`:
//! `#[path = "support/redis_sentinel.rs"] mod redis_sentinel;`.
#![allow(dead_code)]

use core::time::Duration;
use std::time::Instant;

use tickwheel::redis::{Queue, QueueBuilder};

use super::redis_server::{self, Config, RedisServer};
use super::tls_certs::{self, TlsFiles};

pub(crate) const PASSWORD: &str = "s3cret";
pub(crate) const SENTINEL_PASSWORD: &str = "watch3r";
pub(crate) const MASTER: &str = "orders-master";

/// A master, its replica (in sync) and a sentinel that knows both; or
/// `None` where there is no `redis-server`.
pub(crate) struct Watched {
    pub(crate) master: RedisServer,
    pub(crate) replica: RedisServer,
    pub(crate) sentinel: RedisServer,
    tls: Option<Tls>,
}

/// With TLS, each process also listens for TLS on a port of its own; the
/// plain ports stay for the harness's commands.
struct Tls {
    master: u16,
    replica: u16,
    sentinel: u16,
    ca: Vec<u8>,
    _certs: Certs,
}

/// A directory of test certificates, removed on drop.
struct Certs(std::path::PathBuf, TlsFiles);

impl Drop for Certs {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A port that was free a moment ago.
fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind(("127.0.0.1", 0)).unwrap();
    listener.local_addr().unwrap().port()
}

/// TLS on `port` beside the plain one: the test certificates, no client
/// certificates asked for, and replication and Sentinel's own links over
/// TLS (so the ports they announce and monitor are the TLS ones).
fn with_tls(config: Config, certs: &TlsFiles, port: u16) -> Config {
    let quote = |path: &std::path::Path| format!("\"{}\"", path.display());
    config
        .config("tls-port", &port.to_string())
        .config("tls-cert-file", &quote(&certs.server_cert))
        .config("tls-key-file", &quote(&certs.server_key))
        .config("tls-ca-cert-file", &quote(&certs.ca))
        .config("tls-auth-clients", "no")
        .config("tls-replication", "yes")
}

/// Starts a server from `config`, with TLS on `*port` when `tls` is given.
/// `try_start_with` picks another plain port when a process took the one
/// it probed; a TLS port taken meanwhile (by a test's client connection,
/// say) is picked again here, and `*port` says the one it got.
fn start_tls(tls: Option<(&TlsFiles, &mut u16)>, config: Config) -> RedisServer {
    let Some((certs, port)) = tls else {
        return RedisServer::start_with(config);
    };
    let mut failure = String::new();
    for _ in 0..5 {
        match RedisServer::try_start_with(with_tls(config.clone(), certs, *port)) {
            Ok(server) => return server,
            Err(why) if why.contains("Address already in use") => {
                *port = free_port();
                failure = why;
            }
            Err(why) => panic!("{why}"),
        }
    }
    panic!("{failure}")
}

impl Watched {
    pub(crate) fn start() -> Option<Watched> {
        Watched::start_with(false)
    }

    pub(crate) fn start_with(tls: bool) -> Option<Watched> {
        if redis_server::skip() {
            return None;
        }
        let mut tls = tls.then(|| {
            let dir =
                std::env::temp_dir().join(format!("tickwheel-tls-sentinel-{}", std::process::id()));
            let certs = tls_certs::make(&dir);
            Tls {
                master: free_port(),
                replica: free_port(),
                sentinel: free_port(),
                ca: TlsFiles::read(&certs.ca),
                _certs: Certs(dir, certs),
            }
        });
        let config = Config::new().password(PASSWORD);
        let master = start_tls(
            tls.as_mut().map(|t| (&t._certs.1, &mut t.master)),
            config.clone(),
        );
        // Replication, and Sentinel's view, go over TLS when it is on.
        let master_port = tls.as_ref().map_or(master.port(), |t| t.master);
        let replica = start_tls(
            tls.as_mut().map(|t| (&t._certs.1, &mut t.replica)),
            config.config("replicaof", &format!("127.0.0.1 {master_port}")),
        );
        wait_until("the replica is in sync", || {
            replica
                .command(&["INFO", "replication"])
                .contains("master_link_status:up")
        });
        // Started after the replica is in sync, the sentinel's first look
        // at the master finds the replica: a failover has somewhere to go.
        let sentinel = Config::new()
            .sentinel()
            .password(SENTINEL_PASSWORD)
            .config(
                "sentinel monitor",
                &format!("{MASTER} 127.0.0.1 {master_port} 1"),
            )
            .config("sentinel auth-pass", &format!("{MASTER} {PASSWORD}"))
            .config(
                "sentinel down-after-milliseconds",
                &format!("{MASTER} 1000"),
            )
            .config("sentinel failover-timeout", &format!("{MASTER} 5000"));
        let sentinel = start_tls(
            tls.as_mut().map(|t| (&t._certs.1, &mut t.sentinel)),
            sentinel,
        );
        let watched = Watched {
            master,
            replica,
            sentinel,
            tls,
        };
        let replica_port = watched.replica_port();
        wait_until("the sentinel knows the replica", || {
            watched
                .sentinel
                .command(&["SENTINEL", "replicas", MASTER])
                .contains(&replica_port)
        });
        Some(watched)
    }

    /// The sentinel's URL for the queue (`rediss://` with TLS).
    pub(crate) fn sentinel_url(&self) -> String {
        match &self.tls {
            Some(t) => format!("rediss://:{SENTINEL_PASSWORD}@127.0.0.1:{}", t.sentinel),
            None => format!(
                "redis://:{SENTINEL_PASSWORD}@127.0.0.1:{}",
                self.sentinel.port()
            ),
        }
    }

    /// The master as the queue names it, in database 2.
    pub(crate) fn master_url(&self) -> String {
        let scheme = if self.tls.is_some() {
            "rediss"
        } else {
            "redis"
        };
        format!("{scheme}://:{PASSWORD}@{MASTER}/2")
    }

    /// A builder for the queue "orders" through the sentinel.
    pub(crate) fn builder(&self) -> QueueBuilder {
        let builder =
            Queue::sentinel_builder(&[&self.sentinel_url()], &self.master_url(), "orders");
        match &self.tls {
            Some(t) => builder.tls_root_certificate(t.ca.clone()),
            None => builder,
        }
    }

    /// The port Sentinel knows the first master by.
    pub(crate) fn first_master_port(&self) -> String {
        self.tls
            .as_ref()
            .map_or(self.master.port(), |t| t.master)
            .to_string()
    }

    /// The port Sentinel knows the replica by.
    pub(crate) fn replica_port(&self) -> String {
        self.tls
            .as_ref()
            .map_or(self.replica.port(), |t| t.replica)
            .to_string()
    }

    /// The master's port, as the sentinel names it now.
    pub(crate) fn master_port(&self) -> String {
        let reply = self
            .sentinel
            .command(&["SENTINEL", "get-master-addr-by-name", MASTER]);
        reply
            .lines()
            .filter(|line| !line.starts_with(['*', '$']))
            .nth(1)
            .unwrap_or_default()
            .to_owned()
    }
}

#[track_caller]
pub(crate) fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !done() {
        assert!(Instant::now() < deadline, "{what}: not after 30 s");
        std::thread::sleep(Duration::from_millis(20));
    }
}
