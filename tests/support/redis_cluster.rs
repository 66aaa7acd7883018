//! A real Redis Cluster on loopback for a test: six `redis-server`s (3
//! masters, 3 replicas, `cluster-enabled yes`, a 1 s node timeout), made
//! into a cluster by `redis-cli --cluster create … --cluster-replicas 1`
//! (the `redis-cli` beside `redis-server`), each node with its own port and
//! data directory; every node is killed and its directory removed on drop.
//!
//! Include it after `redis_server.rs`: `#[path = "support/redis_cluster.rs"]
//! mod redis_cluster;`.

use core::time::Duration;
use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

use super::redis_server::{Config, RedisServer};

/// One node that serves every slot: a cluster of one, up and `ok`; `None`
/// where there is no `redis-server`.
#[allow(dead_code)] // Only some tests include it.
#[track_caller]
pub(crate) fn single_node() -> Option<RedisServer> {
    let config = Config::new()
        .config("cluster-enabled", "yes")
        .config("cluster-config-file", "nodes.conf")
        .config("cluster-node-timeout", "1000");
    let server = RedisServer::start_with_or_skip(config)?;
    assert_eq!(
        server.command(&["CLUSTER", "ADDSLOTSRANGE", "0", "16383"]),
        "+OK\r\n"
    );
    let up = Instant::now() + Duration::from_secs(10);
    while !server
        .command(&["CLUSTER", "INFO"])
        .contains("cluster_state:ok")
    {
        assert!(Instant::now() < up, "the cluster did not come up");
        std::thread::sleep(Duration::from_millis(10));
    }
    Some(server)
}

/// The nodes, in the order `redis-cli` was given them.
pub(crate) struct RedisCluster {
    pub(crate) nodes: Vec<RedisServer>,
}

impl RedisCluster {
    /// Starts six nodes and makes a cluster of them; `None` where there is
    /// no `redis-server` (see `RedisServer::start_with_or_skip`).
    #[track_caller]
    pub(crate) fn start_or_skip() -> Option<RedisCluster> {
        let config = || {
            Config::new()
                .config("cluster-enabled", "yes")
                .config("cluster-config-file", "nodes.conf")
                .config("cluster-node-timeout", "1000")
                // Replicas sync at once (the default waits 5 s for more):
                // one not yet synced cannot take over.
                .config("repl-diskless-sync-delay", "0")
                .appendfsync(super::redis_server::Fsync::EverySec)
        };
        let first = RedisServer::start_with_or_skip(config())?;
        let mut nodes = vec![first];
        for _ in 1..6 {
            nodes.push(RedisServer::start_with(config()));
        }
        let mut args: Vec<String> = vec!["--cluster".into(), "create".into()];
        args.extend(nodes.iter().map(|n| format!("127.0.0.1:{}", n.port())));
        args.extend(["--cluster-replicas", "1", "--cluster-yes"].map(String::from));
        let out = Command::new(cli())
            .args(&args)
            .output()
            .expect("run redis-cli --cluster create");
        assert!(
            out.status.success(),
            "redis-cli --cluster create failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let cluster = RedisCluster { nodes };
        cluster.wait_ok(Duration::from_secs(30));
        cluster.wait_synced(Duration::from_secs(30));
        Some(cluster)
    }

    /// Every node's URL, as seeds for `Queue::cluster_builder`.
    pub(crate) fn urls(&self) -> Vec<String> {
        self.nodes.iter().map(RedisServer::url).collect()
    }

    /// Waits until every running node says `cluster_state:ok` and sees
    /// every slot served.
    #[track_caller]
    pub(crate) fn wait_ok(&self, within: Duration) {
        let give_up = Instant::now() + within;
        loop {
            let ok = self.running().all(|n| {
                n.try_command(&["CLUSTER", "INFO"], Duration::from_secs(1))
                    .is_ok_and(|info| {
                        info.contains("cluster_state:ok") && info.contains("cluster_slots_ok:16384")
                    })
            });
            if ok {
                return;
            }
            assert!(Instant::now() < give_up, "the cluster did not become ok");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits until every running master has a replica online, in sync.
    #[track_caller]
    pub(crate) fn wait_synced(&self, within: Duration) {
        let give_up = Instant::now() + within;
        loop {
            let synced = self.running().all(|n| {
                n.try_command(&["INFO", "replication"], Duration::from_secs(1))
                    .is_ok_and(|info| info.contains("role:slave") || info.contains("state=online"))
            });
            if synced {
                return;
            }
            assert!(Instant::now() < give_up, "the replicas did not sync");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn running(&self) -> impl Iterator<Item = &RedisServer> {
        self.nodes.iter().filter(|n| n.has_process())
    }

    /// The index of the node that is master for `slot` now, as a running
    /// node sees it; `None` while no live master serves it (a failover).
    pub(crate) fn master_of(&self, slot: u16) -> Option<usize> {
        let node = self.running().next().expect("a running node");
        let nodes = node.command(&["CLUSTER", "NODES"]);
        for line in nodes.lines() {
            let fields: Vec<&str> = line.split(' ').collect();
            if fields.len() < 9 || !fields[2].contains("master") || fields[2].contains("fail") {
                continue;
            }
            let serves = fields[8..].iter().any(|range| {
                let (lo, hi) = range.split_once('-').unwrap_or((range, range));
                matches!((lo.parse::<u16>(), hi.parse::<u16>()), (Ok(lo), Ok(hi)) if lo <= slot && slot <= hi)
            });
            if serves {
                let port: u16 = fields[1]
                    .split(['@', ':'])
                    .nth(1)
                    .and_then(|p| p.parse().ok())
                    .expect("a node's port");
                return self.nodes.iter().position(|n| n.port() == port);
            }
        }
        None
    }

    /// Node `i`'s cluster id (`CLUSTER MYID`).
    pub(crate) fn id_of(&self, i: usize) -> String {
        let id = self.nodes[i].command(&["CLUSTER", "MYID"]);
        id.lines().nth(1).expect("a node id").trim().to_owned()
    }

    /// Moves hash slot `slot` from master `from` to master `to`, keys
    /// included, the way `redis-cli --cluster reshard` moves each slot:
    /// the target imports it, the source migrates it, `MIGRATE` carries
    /// its keys (clients meanwhile get ASK redirects), and the masters are
    /// told its new owner. Returns once a running node says `to` serves it.
    /// (One slot: a reshard of every slot below it took 1–7 s.)
    #[allow(dead_code)] // Only some tests include it.
    #[track_caller]
    pub(crate) fn move_slot(&self, slot: u16, from: usize, to: usize) {
        let (source, target) = (&self.nodes[from], &self.nodes[to]);
        let (from_id, to_id, slot_arg) = (self.id_of(from), self.id_of(to), slot.to_string());
        let ok = |reply: String, what: &str| {
            assert!(reply.starts_with("+OK"), "{what}: {reply}");
        };
        let setslot = |node: &RedisServer, how: &str, id: &str| {
            node.command(&["CLUSTER", "SETSLOT", &slot_arg, how, id])
        };
        ok(setslot(target, "IMPORTING", &from_id), "IMPORTING");
        ok(setslot(source, "MIGRATING", &to_id), "MIGRATING");
        let port = target.port().to_string();
        loop {
            let keys =
                bulk_strings(&source.command(&["CLUSTER", "GETKEYSINSLOT", &slot_arg, "100"]));
            if keys.is_empty() {
                break;
            }
            let mut migrate = vec!["MIGRATE", "127.0.0.1", &port, "", "0", "5000", "KEYS"];
            migrate.extend(keys.iter().map(String::as_str));
            ok(source.command(&migrate), "MIGRATE");
        }
        ok(setslot(target, "NODE", &to_id), "NODE on the target");
        ok(setslot(source, "NODE", &to_id), "NODE on the source");
        // The other masters learn it by gossip too; telling them is faster.
        // Replicas refuse SETSLOT, which is why the answers are not read.
        for node in self.running() {
            if node.port() != source.port() && node.port() != target.port() {
                setslot(node, "NODE", &to_id);
            }
        }
        let give_up = Instant::now() + Duration::from_secs(10);
        while self.master_of(slot) != Some(to) {
            assert!(Instant::now() < give_up, "slot {slot} did not move");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The index of a replica of node `master`. A node learns the
    /// replicas' roles by gossip, after they synced: waits up to 10 s.
    #[allow(dead_code)] // Only some tests include it.
    pub(crate) fn replica_of(&self, master: usize) -> usize {
        let id = self.id_of(master);
        let node = self.running().next().expect("a running node");
        let give_up = Instant::now() + Duration::from_secs(10);
        let line = loop {
            let nodes = node.command(&["CLUSTER", "NODES"]);
            let found = nodes
                .lines()
                .find(|l| l.split(' ').nth(3) == Some(id.as_str()))
                .map(str::to_owned);
            match found {
                Some(line) => break line,
                None if Instant::now() < give_up => {
                    std::thread::sleep(Duration::from_millis(50));
                }
                None => panic!("no replica of {id} after 10 s:\n{nodes}"),
            }
        };
        let port: u16 = line
            .split(' ')
            .nth(1)
            .and_then(|a| a.split(['@', ':']).nth(1))
            .and_then(|p| p.parse().ok())
            .expect("a replica's port");
        self.nodes
            .iter()
            .position(|n| n.port() == port)
            .expect("one of ours")
    }

    /// The slot of partition `k` of `n` of queue `queue`: its tag is
    /// `queue:k`, or `queue:k.s` with the smallest `s` that falls in the
    /// `k`-th `n`-th of the slots (the library's layout, asked of Redis).
    #[allow(dead_code)] // Only some tests include it.
    pub(crate) fn partition_slot(&self, queue: &str, k: u16, n: u16) -> u16 {
        let span = 16_384 / n;
        let range = k * span..(k + 1) * span;
        core::iter::once(format!("{queue}:{k}"))
            .chain((1..).map(|s| format!("{queue}:{k}.{s}")))
            .map(|tag| self.slot_of(&format!("{{{tag}}}")))
            .find(|slot| range.contains(slot))
            .expect("a slot in range")
    }

    /// The master serving partition 0 of `n` of `queue`, with its replica
    /// forbidden to take over (so a fault test's stop or kill stays one),
    /// and every partition that master serves, 0 first.
    #[allow(dead_code)] // Only some tests include it.
    pub(crate) fn pin_master_of_partition_0(&self, queue: &str, n: u16) -> (usize, Vec<u16>) {
        let victim = self
            .master_of(self.partition_slot(queue, 0, n))
            .expect("a master for partition 0");
        let replica = self.replica_of(victim);
        self.nodes[replica].command(&["CONFIG", "SET", "cluster-replica-no-failover", "yes"]);
        let served = (0..n)
            .filter(|&k| self.master_of(self.partition_slot(queue, k, n)) == Some(victim))
            .collect();
        (victim, served)
    }

    /// The slot of `key` (`CLUSTER KEYSLOT`).
    pub(crate) fn slot_of(&self, key: &str) -> u16 {
        let node = self.running().next().expect("a running node");
        let reply = node.command(&["CLUSTER", "KEYSLOT", key]);
        reply
            .trim()
            .trim_start_matches(':')
            .parse()
            .expect("a slot number")
    }
}

/// The bulk strings of a RESP array reply (`*2\r\n$1\r\na\r\n$1\r\nb\r\n`).
fn bulk_strings(reply: &str) -> Vec<String> {
    let mut lines = reply.split("\r\n");
    let count: usize = lines
        .next()
        .and_then(|l| l.strip_prefix('*'))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("not an array: {reply}"));
    (0..count)
        .map(|_| {
            let _length = lines.next();
            lines.next().expect("a bulk string").to_owned()
        })
        .collect()
}

/// `redis-cli`, beside the `redis-server` the harness uses.
fn cli() -> PathBuf {
    let server = super::redis_server::binary_path();
    let beside = server.with_file_name("redis-cli");
    if beside.is_file() {
        beside
    } else {
        PathBuf::from("redis-cli")
    }
}
