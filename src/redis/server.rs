//! Reaching the Redis a user runs, through redis-rs: a URL or a cluster's
//! seed nodes, TLS certificates, TCP settings, the one multiplexed
//! connection a queue's calls share, the pub/sub connection its consumers'
//! hints arrive on, and the check of the server's eviction policy.

use alloc::boxed::Box;
use alloc::format;
use alloc::string::{String, ToString};
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::time::Duration;

use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig, PubSub};
use redis::cluster_async::ClusterConnection;
use redis::cluster_routing::{MultipleNodeRoutingInfo, RoutingInfo};
use redis::io::tcp::{socket2, TcpSettings};
use redis::{Client, Cmd, ConnectionAddr, ConnectionInfo, IntoConnectionInfo, RedisFuture, Value};

use super::link::Ctx;
use super::sentinel::{SentinelConn, SentinelTarget};
use super::QueueError;

/// Where the queue's keys live.
#[derive(Debug, Clone)]
pub(super) enum Target {
    /// One server (or a proxy in front of several).
    Single(Box<ConnectionInfo>),
    /// A Redis Cluster, found through these seed nodes.
    Cluster(Vec<ConnectionInfo>),
    /// The master Redis Sentinel names.
    Sentinel(Box<SentinelTarget>),
}

impl Target {
    pub(super) fn single(url: &str) -> Result<Target, QueueError> {
        Ok(Target::Single(Box::new(parse(url)?)))
    }

    pub(super) fn cluster(nodes: &[&str]) -> Result<Target, QueueError> {
        if nodes.is_empty() {
            return Err(QueueError::Connect(String::from(
                "a cluster needs at least one seed node",
            )));
        }
        let nodes: Vec<ConnectionInfo> = nodes
            .iter()
            .map(|url| parse(url))
            .collect::<Result<_, _>>()?;
        // redis-rs's cluster client has one TLS mode for every node: a mix
        // once made it TLS for all, and a plain node failed its handshake
        // for the whole retry window.
        let tls = |info: &ConnectionInfo| matches!(info.addr(), ConnectionAddr::TcpTls { .. });
        if nodes.iter().any(|info| tls(info) != tls(&nodes[0])) {
            return Err(QueueError::Connect(String::from(
                "a cluster's seed nodes are all redis:// or all rediss://",
            )));
        }
        Ok(Target::Cluster(nodes))
    }

    /// The nodes as given, without credentials: what a delivery's queue is
    /// known by, and what `Debug` shows.
    pub(super) fn describe(&self) -> String {
        match self {
            Target::Single(info) => describe_node(info),
            Target::Cluster(nodes) => {
                let mut all: Vec<String> = nodes.iter().map(describe_node).collect();
                all.sort();
                format!("cluster[{}]", all.join(","))
            }
            Target::Sentinel(sentinel) => sentinel.describe(),
        }
    }

    fn uses_tls(&self) -> bool {
        let tls = |info: &ConnectionInfo| matches!(info.addr(), ConnectionAddr::TcpTls { .. });
        match self {
            Target::Single(info) => tls(info),
            Target::Cluster(nodes) => nodes.iter().any(tls),
            Target::Sentinel(sentinel) => sentinel.uses_tls(),
        }
    }
}

/// One node's URL, without credentials.
pub(super) fn describe_node(info: &ConnectionInfo) -> String {
    match info.addr() {
        ConnectionAddr::Tcp(host, port) => {
            format!("redis://{host}:{port}/{}", info.redis_settings().db())
        }
        ConnectionAddr::TcpTls { host, port, .. } => {
            format!("rediss://{host}:{port}/{}", info.redis_settings().db())
        }
        // The database too: two queues of one name in two databases behind
        // one socket are two queues (a delivery acts only on its own).
        ConnectionAddr::Unix(path) => format!(
            "redis+unix://{}?db={}",
            path.display(),
            info.redis_settings().db()
        ),
        _ => String::from("redis://?"),
    }
}

pub(super) fn parse(url: &str) -> Result<ConnectionInfo, QueueError> {
    let info = url
        .into_connection_info()
        .map_err(|e| QueueError::Connect(format!("{}: {e}", redact(url))))?;
    if !info.addr().is_supported() {
        return Err(QueueError::Connect(format!(
            "{}: this kind of address is not supported here",
            redact(url)
        )));
    }
    Ok(info)
}

/// A URL with its password replaced, for error messages.
pub(super) fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let auth = &url[scheme + 3..at];
            match auth.find(':') {
                Some(colon) => {
                    format!("{}{}:***{}", &url[..scheme + 3], &auth[..colon], &url[at..])
                }
                None => format!("{}***{}", &url[..scheme + 3], &url[at..]),
            }
        }
        _ => url.to_string(),
    }
}

/// How to reach the server, beyond the URL.
#[derive(Clone)]
pub(super) struct Reach {
    pub(super) target: Target,
    /// CA and client certificates (PEM) for `rediss://`, when the system's
    /// roots are not the ones to trust.
    pub(super) tls: Option<redis::TlsCertificates>,
    pub(super) io_timeout: Duration,
}

impl core::fmt::Debug for Reach {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Reach")
            .field("target", &self.target.describe())
            .field("tls_certificates", &self.tls.is_some())
            .field("io_timeout", &self.io_timeout)
            .finish()
    }
}

impl Reach {
    pub(super) fn tcp(&self) -> TcpSettings {
        // Nagle off: a call is one small write that must not wait. Keepalive
        // and a user timeout find a peer that vanished without a FIN.
        let keepalive = socket2::TcpKeepalive::new()
            .with_time(Duration::from_secs(15))
            .with_interval(Duration::from_secs(5));
        let settings = TcpSettings::default()
            .set_nodelay(true)
            .set_keepalive(keepalive);
        #[cfg(any(target_os = "android", target_os = "fuchsia", target_os = "linux"))]
        let settings = settings.set_user_timeout(Duration::from_secs(30).max(self.io_timeout * 4));
        settings
    }

    fn client(&self, info: &ConnectionInfo) -> Result<Client, QueueError> {
        let info = info.clone().set_tcp_settings(self.tcp());
        let client = match &self.tls {
            Some(certs) => Client::build_with_tls(info, certs.clone()),
            None => Client::open(info),
        };
        client.map_err(|e| QueueError::Connect(e.to_string()))
    }

    fn install_crypto(&self) {
        if self.target.uses_tls() {
            // rustls needs a process-wide provider; keep one a user installed.
            let _ = rustls::crypto::ring::default_provider().install_default();
        }
    }

    /// The queue's multiplexed connection (one attempt; the caller retries).
    pub(super) async fn connect(&self, ctx: &Arc<Ctx>) -> Result<Conn, redis::RedisError> {
        self.install_crypto();
        match &self.target {
            Target::Single(info) => {
                let client = self.client(info).map_err(to_redis)?;
                let manager = client
                    .get_connection_manager_with_config(self.manager_config())
                    .await?;
                Ok(Conn::Single(manager))
            }
            Target::Cluster(nodes) => {
                let client = self.cluster_client(nodes).build()?;
                Ok(Conn::Cluster(client.get_async_connection().await?))
            }
            Target::Sentinel(sentinel) => {
                let conn =
                    SentinelConn::connect(sentinel, self, self.manager_config(), ctx).await?;
                Ok(Conn::Sentinel(conn))
            }
        }
    }

    /// One multiplexed connection, redialled when it drops; the queue's
    /// own retries sit above its single one.
    fn manager_config(&self) -> ConnectionManagerConfig {
        ConnectionManagerConfig::new()
            .set_connection_timeout(Some(self.io_timeout))
            .set_response_timeout(Some(self.io_timeout))
            .set_number_of_retries(1)
            .set_min_delay(Duration::from_millis(5))
            .set_max_delay(Duration::from_millis(500))
    }

    fn cluster_client(&self, nodes: &[ConnectionInfo]) -> redis::cluster::ClusterClientBuilder {
        let mut builder = redis::cluster::ClusterClientBuilder::new(nodes.to_vec())
            .connection_timeout(self.io_timeout)
            .response_timeout(self.io_timeout)
            .tcp_settings(self.tcp())
            .retries(3);
        if self.target.uses_tls() {
            builder = builder.tls(redis::cluster::TlsMode::Secure);
        }
        if let Some(certs) = &self.tls {
            builder = builder.certs(certs.clone());
        }
        builder
    }

    /// A cluster's sharded pub/sub: a RESP3 cluster connection (one link
    /// per master that serves a channel) subscribed with `SSUBSCRIBE` to
    /// `channels`, one call each (they lie in different slots); what the
    /// nodes push arrives on the receiver, and whether some channels are
    /// missing (their shard did not answer: the others are served, where
    /// one dead shard once left a consumer with no hints at all). An error
    /// if none could be subscribed; `None` off a cluster.
    pub(super) async fn subscribe_sharded(
        &self,
        channels: &[&str],
    ) -> Option<Result<(ClusterConnection, Pushes, bool), redis::RedisError>> {
        let Target::Cluster(nodes) = &self.target else {
            return None;
        };
        self.install_crypto();
        let subscribed = async {
            let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
            let client = self
                .cluster_client(nodes)
                .use_protocol(redis::ProtocolVersion::RESP3)
                .push_sender(tx)
                .build()?;
            let mut conn = tokio::time::timeout(self.io_timeout, client.get_async_connection())
                .await
                .map_err(|_| timed_out())??;
            let mut missing = 0;
            let mut last = None;
            for channel in channels {
                match tokio::time::timeout(self.io_timeout, conn.ssubscribe(*channel)).await {
                    Ok(Ok(())) => {}
                    Ok(Err(e)) => (missing, last) = (missing + 1, Some(e)),
                    Err(_) => (missing, last) = (missing + 1, Some(timed_out())),
                }
            }
            match last {
                Some(e) if missing == channels.len() => Err(e),
                _ => Ok((conn, rx, missing > 0)),
            }
        };
        Some(subscribed.await)
    }

    /// A pub/sub connection to one of the nodes (a cluster's `PUBLISH`
    /// reaches every node), subscribed to `channels` (one a partition).
    pub(super) async fn subscribe(
        &self,
        channels: &[&str],
        attempt: usize,
    ) -> Result<PubSub, redis::RedisError> {
        self.install_crypto();
        let client = match &self.target {
            Target::Single(info) => self.client(info).map_err(to_redis)?,
            Target::Cluster(nodes) => self
                .client(&nodes[attempt % nodes.len()])
                .map_err(to_redis)?,
            // Asked anew on each attempt: a failover moves the master.
            Target::Sentinel(sentinel) => sentinel.master(self).await?,
        };
        let mut pubsub = tokio::time::timeout(self.io_timeout, client.get_async_pubsub())
            .await
            .map_err(|_| timed_out())??;
        tokio::time::timeout(self.io_timeout, pubsub.subscribe(channels))
            .await
            .map_err(|_| timed_out())??;
        Ok(pubsub)
    }
}

fn to_redis(e: QueueError) -> redis::RedisError {
    redis::RedisError::from((
        redis::ErrorKind::InvalidClientConfig,
        "client",
        e.to_string(),
    ))
}

fn timed_out() -> redis::RedisError {
    redis::RedisError::from(std::io::Error::from(std::io::ErrorKind::TimedOut))
}

/// What a sharded subscription's nodes push (messages, and the
/// library's notice of a lost link).
pub(super) type Pushes = tokio::sync::mpsc::UnboundedReceiver<redis::PushInfo>;

/// The connection every call of a queue shares: redis-rs's connection
/// manager (one multiplexed connection, redialled when it drops) or its
/// cluster connection (one per node, following MOVED and ASK).
#[derive(Clone)]
pub(super) enum Conn {
    Single(ConnectionManager),
    Cluster(ClusterConnection),
    Sentinel(SentinelConn),
}

impl ConnectionLike for Conn {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Conn::Single(c) => c.req_packed_command(cmd),
            Conn::Cluster(c) => c.req_packed_command(cmd),
            Conn::Sentinel(c) => c.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a redis::Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Conn::Single(c) => c.req_packed_commands(pipeline, offset, count),
            Conn::Cluster(c) => c.req_packed_commands(pipeline, offset, count),
            Conn::Sentinel(c) => c.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Conn::Single(c) => c.get_db(),
            Conn::Cluster(c) => c.get_db(),
            Conn::Sentinel(c) => c.get_db(),
        }
    }
}

/// The server's `maxmemory-policy`, or `None` if it will not say (a
/// managed Redis that renames `CONFIG`, an ACL user without `INFO`). On a
/// cluster every master is asked (a plain `CONFIG GET` goes to one node at
/// random, so a cluster with one evicting master passed most connects),
/// and an evicting master's policy wins: any master may hold a partition
/// (or the queue's keys after a resharding).
pub(super) async fn eviction_policy(conn: &mut Conn) -> Option<String> {
    let mut config = redis::cmd("CONFIG");
    config.arg("GET").arg("maxmemory-policy");
    let mut info = redis::cmd("INFO");
    info.arg("memory");
    let mut policies = Vec::new();
    if let Conn::Cluster(cluster) = conn {
        let every = || RoutingInfo::MultiNode((MultipleNodeRoutingInfo::AllMasters, None));
        let nodes = match cluster.route_command(config, every()).await {
            Ok(Value::Map(nodes)) => nodes,
            _ => Vec::new(),
        };
        for (_, answer) in &nodes {
            policies.extend(config_value(answer));
        }
        if policies.is_empty() || policies.len() < nodes.len() {
            // Some node would not say by `CONFIG`: ask them all by `INFO`.
            if let Ok(Value::Map(nodes)) = cluster.route_command(info, every()).await {
                policies.extend(nodes.iter().filter_map(|(_, text)| info_value(text)));
            }
        }
    } else {
        if let Ok(value) = config.query_async::<Value>(conn).await {
            policies.extend(config_value(&value));
        }
        if policies.is_empty() {
            let text: Option<String> = info.query_async(conn).await.ok();
            policies.extend(text.and_then(|text| policy_in_info(&text)));
        }
    }
    let evicting = policies.iter().position(|p| evicts_queue_keys(p));
    match evicting {
        Some(at) => Some(policies.swap_remove(at)),
        None => policies.into_iter().next(),
    }
}

/// `INFO memory`'s `maxmemory_policy`.
fn policy_in_info(text: &str) -> Option<String> {
    text.lines()
        .find_map(|line| line.strip_prefix("maxmemory_policy:"))
        .map(|policy| policy.trim().to_string())
}

/// One node's `INFO` answer's policy.
fn info_value(value: &Value) -> Option<String> {
    match value {
        Value::BulkString(text) => policy_in_info(&String::from_utf8_lossy(text)),
        Value::VerbatimString { text, .. } => policy_in_info(text),
        Value::SimpleString(text) => policy_in_info(text),
        _ => None,
    }
}

/// `CONFIG GET`'s answer, in RESP2 (a pair) or RESP3 (a map).
fn config_value(value: &Value) -> Option<String> {
    match value {
        Value::Array(items) => match items.as_slice() {
            [Value::BulkString(_), Value::BulkString(v)] => {
                Some(String::from_utf8_lossy(v).into_owned())
            }
            many => many.iter().find_map(config_value),
        },
        Value::Map(pairs) => pairs.iter().find_map(|(_, v)| match v {
            Value::BulkString(v) => Some(String::from_utf8_lossy(v).into_owned()),
            other => config_value(other),
        }),
        _ => None,
    }
}

/// Whether a policy evicts keys that have no time to live (the queue's
/// own keys): `volatile-*` touches only keys with one, which the queue
/// uses only for replay records a retry can do without.
pub(super) fn evicts_queue_keys(policy: &str) -> bool {
    policy.starts_with("allkeys")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_never_reach_an_error_message() {
        assert_eq!(redact("redis://:hunter2@host:1/0"), "redis://:***@host:1/0");
        assert_eq!(
            redact("rediss://app:hunter2@host:1"),
            "rediss://app:***@host:1"
        );
        assert_eq!(redact("redis://host:1"), "redis://host:1");
        let err = Target::single("redis://:hunter2@host:notaport").unwrap_err();
        assert!(!err.to_string().contains("hunter2"), "{err}");
    }

    #[test]
    fn urls_name_host_port_database_and_scheme() {
        let t = Target::single("redis://app:pw@localhost:6390/3").unwrap();
        assert_eq!(t.describe(), "redis://localhost:6390/3");
        let t = Target::single("rediss://example.com:6380").unwrap();
        assert_eq!(t.describe(), "rediss://example.com:6380/0");
        let t = Target::single("redis+unix:///tmp/redis.sock").unwrap();
        assert_eq!(t.describe(), "redis+unix:///tmp/redis.sock?db=0");
        let t = Target::single("redis+unix:///tmp/redis.sock?db=2").unwrap();
        assert_eq!(t.describe(), "redis+unix:///tmp/redis.sock?db=2");
        assert!(Target::single("http://x").is_err());
        assert!(Target::cluster(&[]).is_err());
        assert!(Target::cluster(&["redis://a:1", "rediss://b:2"]).is_err());
        let t = Target::cluster(&["redis://b:2", "redis://a:1"]).unwrap();
        assert_eq!(t.describe(), "cluster[redis://a:1/0,redis://b:2/0]");
    }

    #[test]
    fn only_allkeys_policies_evict_the_queue() {
        assert!(evicts_queue_keys("allkeys-lru"));
        assert!(evicts_queue_keys("allkeys-random"));
        assert!(!evicts_queue_keys("noeviction"));
        assert!(!evicts_queue_keys("volatile-lru"));
    }
}
