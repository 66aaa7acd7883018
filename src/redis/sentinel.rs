//! Reaching a master through Redis Sentinel, and following it to the
//! replica Sentinel promotes when it fails.
//!
//! The queue asks the sentinels for the master's address (redis-rs's
//! `SentinelClient`, which also checks with `ROLE` that the node it names
//! is a master), and keeps one connection manager to it. A call that
//! fails the way a lost master fails (the connection refused, dropped or
//! timed out, or `READONLY` from a master demoted to a replica) asks the
//! sentinels again, at most once per [`LOOKUP_EVERY`], and one caller at
//! a time; if they name another node, every later call goes there. The
//! failed call itself comes back as an error that the queue retries within
//! its retry window, as any other, so a failover costs callers that window
//! of waiting, not an error. Hints ride their own connection, which asks
//! the sentinels each time it is made.
//!
//! A new master is dialled (and counted in `Metrics::dials`) and its
//! eviction policy read before any call goes there, as at connect: one
//! that may evict the queue's keys is not followed unless the queue allows
//! eviction, and calls fail with [`QueueError::EvictingServer`] until
//! Sentinel names another. The old master's policy was the only one read.

use alloc::boxed::Box;
use alloc::format;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::time::Duration;
use std::time::Instant;

use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig};
use redis::sentinel::{SentinelClient, SentinelClientBuilder, SentinelServerType};
use redis::{
    Client, Cmd, ConnectionAddr, ConnectionInfo, ErrorKind, RedisError, RedisFuture, RedisResult,
    ServerErrorKind, TlsMode, Value,
};

use super::builder::QueueBuilder;
use super::counters::bump;
use super::link::Ctx;
use super::queue::Queue;
use super::server::{self, Conn, Reach, Target};
use super::QueueError;
use crate::event::event;

/// The least time between two lookups of the master: a failover takes
/// Sentinel a second or more, and every caller of a queue fails at once.
const LOOKUP_EVERY: Duration = Duration::from_millis(100);

impl Queue {
    /// A builder for the queue `name` on the master that Redis Sentinel
    /// knows as `master`, found through any of `sentinels`.
    ///
    /// - `sentinels`: the sentinels' URLs, `redis://[[user]:password@]host:port`
    ///   (a password if the sentinels have `requirepass`), or `rediss://…`.
    /// - `master`: the master as a URL whose host is its name in Sentinel
    ///   (`sentinel monitor <name> …`) and which has no port:
    ///   `redis://[[user]:password@]name[/db]`, the credentials and
    ///   database for the master and, after a failover, the replica that
    ///   takes its place; `rediss://…` for TLS to them.
    ///
    /// The sentinels are all `redis://` or all `rediss://`. Over TLS the
    /// certificates given to the builder
    /// ([`tls_root_certificate`](QueueBuilder::tls_root_certificate),
    /// [`tls_client_certificate`](QueueBuilder::tls_client_certificate))
    /// serve the sentinels and the master alike.
    ///
    /// The queue follows a failover: calls made while Sentinel promotes a
    /// replica wait for it within the retry window
    /// ([`retry`](QueueBuilder::retry)), then go to the new master. A
    /// schedule that must survive a failover needs
    /// [`replicas`](QueueBuilder::replicas).
    ///
    /// ```
    /// let b = tickwheel::redis::Queue::sentinel_builder(
    ///     &["redis://10.0.0.1:26379", "redis://10.0.0.2:26379"],
    ///     "redis://:secret@orders-master/0",
    ///     "orders",
    /// );
    /// # drop(b);
    /// ```
    pub fn sentinel_builder(sentinels: &[&str], master: &str, name: &str) -> QueueBuilder {
        QueueBuilder::new(SentinelTarget::target(sentinels, master), name)
    }
}

/// The sentinels and the master's name and settings, as given.
#[derive(Debug, Clone)]
pub(super) struct SentinelTarget {
    sentinels: Vec<ConnectionInfo>,
    master: ConnectionInfo,
    name: String,
    /// TLS to the master (and the replica that replaces it), and to the
    /// sentinels.
    tls: bool,
    sentinel_tls: bool,
}

impl SentinelTarget {
    fn target(sentinels: &[&str], master: &str) -> Result<Target, QueueError> {
        if sentinels.is_empty() {
            return Err(QueueError::Connect(String::from(
                "Sentinel needs at least one sentinel's URL",
            )));
        }
        let sentinels = sentinels
            .iter()
            .map(|url| super::server::parse(url))
            .collect::<Result<Vec<_>, _>>()?;
        // redis-rs sets one TLS mode for all the sentinels.
        let tls_of = |info: &ConnectionInfo| match info.addr() {
            ConnectionAddr::Tcp(..) => Some(false),
            ConnectionAddr::TcpTls { .. } => Some(true),
            _ => None,
        };
        let sentinel_tls = tls_of(&sentinels[0]);
        if sentinel_tls.is_none() || sentinels.iter().any(|info| tls_of(info) != sentinel_tls) {
            return Err(QueueError::Connect(String::from(
                "the sentinels are reached all by redis:// or all by rediss://",
            )));
        }
        if master.trim().is_empty() {
            return Err(QueueError::Connect(String::from(
                "Sentinel needs the master's URL: redis://<its name in Sentinel>",
            )));
        }
        let master_info = super::server::parse(master)?;
        let (name, tls) = match master_info.addr() {
            ConnectionAddr::Tcp(name, _) => (name, false),
            ConnectionAddr::TcpTls { host, .. } => (host, true),
            _ => {
                return Err(QueueError::Connect(format!(
                "{}: the master's URL is redis:// or rediss:// with its name in Sentinel as host",
                super::server::redact(master)
            )))
            }
        };
        if master_has_port(master) {
            return Err(QueueError::Connect(format!(
                "{}: the master's URL names it as Sentinel does, without a port",
                super::server::redact(master)
            )));
        }
        let name = name.clone();
        Ok(Target::Sentinel(Box::new(SentinelTarget {
            sentinels,
            master: master_info,
            name,
            tls,
            sentinel_tls: sentinel_tls == Some(true),
        })))
    }

    /// `sentinel[scheme://host:port,…]/scheme://name/db`, without
    /// credentials.
    pub(super) fn describe(&self) -> String {
        let scheme = |tls: bool| if tls { "rediss" } else { "redis" };
        let mut all: Vec<String> = self
            .sentinels
            .iter()
            .map(|info| match info.addr() {
                ConnectionAddr::Tcp(host, port) | ConnectionAddr::TcpTls { host, port, .. } => {
                    format!("{}://{host}:{port}", scheme(self.sentinel_tls))
                }
                _ => String::from("?"),
            })
            .collect();
        all.sort();
        format!(
            "sentinel[{}]/{}://{}/{}",
            all.join(","),
            scheme(self.tls),
            self.name,
            self.master.redis_settings().db()
        )
    }

    pub(super) fn uses_tls(&self) -> bool {
        self.tls || self.sentinel_tls
    }

    /// A client of redis-rs's that asks the sentinels for the master.
    fn client(&self, reach: &Reach) -> RedisResult<SentinelClient> {
        let addrs = self.sentinels.iter().map(|info| info.addr().clone());
        let mut builder =
            SentinelClientBuilder::new(addrs, &self.name, SentinelServerType::Master)?
                .set_client_to_sentinel_tcp_settings(reach.tcp())
                .set_client_to_redis_tcp_settings(reach.tcp())
                .set_client_to_redis_db(self.master.redis_settings().db());
        // The sentinels share one set of credentials, as their ACLs do.
        if let Some(info) = self
            .sentinels
            .iter()
            .find(|i| i.redis_settings().password().is_some())
        {
            let settings = info.redis_settings();
            if let Some(user) = settings.username() {
                builder = builder.set_client_to_sentinel_username(user);
            }
            if let Some(password) = settings.password() {
                builder = builder.set_client_to_sentinel_password(password);
            }
        }
        let settings = self.master.redis_settings();
        if let Some(user) = settings.username() {
            builder = builder.set_client_to_redis_username(user);
        }
        if let Some(password) = settings.password() {
            builder = builder.set_client_to_redis_password(password);
        }
        // The builder's certificates (a private CA, a client certificate)
        // serve every TLS link; without them, the system's roots.
        if self.sentinel_tls {
            if let Some(certs) = &reach.tls {
                builder = builder.set_client_to_sentinel_certificates(certs.clone());
            }
        }
        if self.tls {
            builder = builder.set_client_to_redis_tls_mode(TlsMode::Secure);
            if let Some(certs) = &reach.tls {
                builder = builder.set_client_to_redis_certificates(certs.clone());
            }
        }
        builder.build()
    }

    /// A client for the master the sentinels name now.
    pub(super) async fn master(&self, reach: &Reach) -> RedisResult<Client> {
        let mut client = self.client(reach)?;
        within(reach.io_timeout, client.async_get_client()).await
    }
}

/// Whether `url` spells out a port after its host.
fn master_has_port(url: &str) -> bool {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let host = rest.rsplit_once('@').map_or(rest, |(_, host)| host);
    let host = host.split(['/', '?']).next().unwrap_or(host);
    host.contains(':')
}

async fn within<T>(
    timeout: Duration,
    future: impl core::future::Future<Output = RedisResult<T>>,
) -> RedisResult<T> {
    tokio::time::timeout(timeout, future)
        .await
        .map_err(|_| RedisError::from(std::io::Error::from(std::io::ErrorKind::TimedOut)))?
}

/// The queue's connection to the master Sentinel names; clones share it.
#[derive(Clone)]
pub(super) struct SentinelConn(Arc<Shared>);

struct Shared {
    target: SentinelTarget,
    reach: Reach,
    config: ConnectionManagerConfig,
    /// The master's address, how many times it changed, and the
    /// connection to it.
    current: parking_lot::Mutex<(ConnectionAddr, u64, ConnectionManager)>,
    /// When the sentinels were last asked; held while asking, so one
    /// caller asks for all.
    asked: tokio::sync::Mutex<Instant>,
    /// The queue's options and counters.
    ctx: Arc<Ctx>,
    /// The eviction policy of the master Sentinel names, when the queue
    /// would not follow it there.
    refused: parking_lot::Mutex<Option<String>>,
}

impl SentinelConn {
    pub(super) async fn connect(
        target: &SentinelTarget,
        reach: &Reach,
        config: ConnectionManagerConfig,
        ctx: &Arc<Ctx>,
    ) -> RedisResult<SentinelConn> {
        let client = target.master(reach).await?;
        let addr = client.get_connection_info().addr().clone();
        let manager = client
            .get_connection_manager_with_config(config.clone())
            .await?;
        Ok(SentinelConn(Arc::new(Shared {
            target: target.clone(),
            reach: reach.clone(),
            config,
            current: parking_lot::Mutex::new((addr, 0, manager)),
            asked: tokio::sync::Mutex::new(Instant::now()),
            ctx: Arc::clone(ctx),
            refused: parking_lot::Mutex::new(None),
        })))
    }

    /// The eviction policy of the master Sentinel names, if the queue
    /// refused to follow it there.
    pub(super) fn refused(&self) -> Option<String> {
        self.0.refused.lock().clone()
    }

    fn current(&self) -> (u64, ConnectionManager) {
        let current = self.0.current.lock();
        (current.1, current.2.clone())
    }

    /// After a call on connection `seen` failed as a lost master fails:
    /// asks the sentinels, and moves to the master they name if it is
    /// another node. Errors are left to the caller's retry.
    async fn follow(&self, seen: u64) {
        let mut asked = self.0.asked.lock().await;
        if self.0.current.lock().1 != seen || asked.elapsed() < LOOKUP_EVERY {
            return;
        }
        *asked = Instant::now();
        let Ok(client) = self.0.target.master(&self.0.reach).await else {
            return;
        };
        let addr = client.get_connection_info().addr().clone();
        if addr == self.0.current.lock().0 {
            return;
        }
        let connect = client.get_connection_manager_with_config(self.0.config.clone());
        if let Ok(manager) = within(self.0.reach.io_timeout, connect).await {
            let ctx = &self.0.ctx;
            bump(&ctx.counters.dials, 1);
            let policy = server::eviction_policy(&mut Conn::Single(manager.clone())).await;
            let evicting = policy.filter(|p| server::evicts_queue_keys(p));
            if let Some(policy) = evicting.filter(|_| !ctx.options.allow_eviction) {
                event!(
                    error,
                    "redis sentinel names a master that may evict the queue's keys; not following",
                    queue = self.0.target.describe(),
                    master = super::server::describe_node(client.get_connection_info()),
                    policy = policy
                );
                *self.0.refused.lock() = Some(policy);
                return;
            }
            *self.0.refused.lock() = None;
            event!(
                warn,
                "redis sentinel names another master; calls go there now",
                queue = self.0.target.describe(),
                master = super::server::describe_node(client.get_connection_info())
            );
            let mut current = self.0.current.lock();
            *current = (addr, current.1 + 1, manager);
        }
    }

    /// Runs `call` on the master's connection; a failure as a lost master
    /// fails asks the sentinels before it is returned.
    async fn on_master<T>(
        &self,
        call: impl AsyncFnOnce(ConnectionManager) -> RedisResult<T>,
    ) -> RedisResult<T> {
        let (seen, conn) = self.current();
        let answer = call(conn).await;
        if answer.as_ref().is_err_and(lost_master) {
            self.follow(seen).await;
        }
        answer
    }
}

/// Whether `err` is how a call to a master that is gone or demoted fails.
fn lost_master(err: &RedisError) -> bool {
    err.is_io_error()
        || err.is_connection_dropped()
        || err.is_connection_refusal()
        || err.is_timeout()
        || err.kind() == ErrorKind::Server(ServerErrorKind::ReadOnly)
        || err.code() == Some("MASTERDOWN")
}

impl ConnectionLike for SentinelConn {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        Box::pin(self.on_master(async |mut conn| conn.req_packed_command(cmd).await))
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a redis::Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        Box::pin(self.on_master(async move |mut conn| {
            conn.req_packed_commands(pipeline, offset, count).await
        }))
    }

    fn get_db(&self) -> i64 {
        self.0.target.master.redis_settings().db()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;

    fn describe(sentinels: &[&str], master: &str) -> Result<String, String> {
        match SentinelTarget::target(sentinels, master) {
            Ok(Target::Sentinel(t)) => Ok(t.describe()),
            Ok(_) => Err(String::from("not a sentinel target")),
            Err(e) => Err(e.to_string()),
        }
    }

    #[test]
    fn sentinels_and_the_master_name_are_checked_and_described_without_secrets() {
        assert_eq!(
            describe(
                &["redis://:pw@s2:26379", "redis://s1:26379"],
                "redis://:hunter2@orders/2"
            ),
            Ok(String::from(
                "sentinel[redis://s1:26379,redis://s2:26379]/redis://orders/2"
            ))
        );
        assert_eq!(
            describe(&["rediss://s1:26379"], "rediss://app:pw@orders"),
            Ok(String::from(
                "sentinel[rediss://s1:26379]/rediss://orders/0"
            ))
        );
        let mixed =
            describe(&["rediss://s1:26379", "redis://s2:26379"], "redis://orders").unwrap_err();
        assert!(
            mixed.contains("all by redis:// or all by rediss://"),
            "{mixed}"
        );
        let no_sentinels = describe(&[], "redis://orders").unwrap_err();
        assert!(
            no_sentinels.contains("at least one sentinel"),
            "{no_sentinels}"
        );
        let port = describe(&["redis://s1:26379"], "redis://:hunter2@orders:6379/0").unwrap_err();
        assert!(port.contains("without a port"), "{port}");
        assert!(!port.contains("hunter2"), "{port}");
        assert!(describe(&["redis://s1:26379"], "redis+unix:///tmp/x.sock").is_err());
        assert!(describe(&["redis+unix:///tmp/s.sock"], "redis://orders").is_err());
    }
}
