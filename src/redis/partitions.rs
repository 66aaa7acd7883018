//! A queue's partitions, and how a connect learns them.
//!
//! A queue of one partition keeps its keys under the hash tag `{name}`, so
//! a Redis Cluster holds all of them in one slot. A queue of `n > 1`
//! partitions keeps partition `k`'s keys under `{name:k}` or, where a salt
//! spaces the partitions evenly over the slots, `{name:k.s}` (see `tag`):
//! each partition is a whole queue of its own (the same keys, the same
//! scripts), and a cluster spreads the partitions over its shards. A job lives in the
//! partition [`Partitions::of`] its id, so every call about one job is a
//! script on one slot. The count is kept in `tw:{name}:partitions`; a
//! queue cannot change it (ids would move): `connect` refuses a builder
//! that names another count, and one that names none takes the queue's.
//!
//! A partition's tag is a queue name too: a queue named `orders:4` would
//! share partition 4 of a partitioned `orders` (its jobs, its payloads).
//! So `connect` refuses a name that is a partition of a partitioned queue
//! it finds, and a partitioned queue whose partition a queue of its own
//! name already uses (`overlaps`).

use alloc::format;
use alloc::string::{String, ToString};
use alloc::sync::Arc;
use alloc::vec::Vec;

use super::keys::Keys;
use super::link::{Ctx, Io};
use super::lua::lua;
use super::options::MAX_PARTITIONS;
use super::server::Conn;
use super::{QueueBuilder, QueueError};

/// Every partition's keys, and which partition a job id lives in.
#[derive(Debug)]
pub(super) struct Partitions {
    parts: Vec<Keys>,
    /// Whether wake-ups go over shard channels (`SPUBLISH`/`SSUBSCRIBE`).
    pub(super) sharded: bool,
}

impl Partitions {
    /// `n` partitions of queue `queue`; `n == 1` is the one-partition
    /// layout (`{queue}`), `n > 1` partition `k`'s tag is [`tag`];
    /// `sharded` gives each a shard channel for its wake-ups.
    pub(super) fn new(queue: &str, n: u16, sharded: bool) -> Partitions {
        let keys = |tag: &str| {
            let keys = Keys::new(tag);
            if sharded {
                keys.with_shard_channel()
            } else {
                keys
            }
        };
        let parts = if n <= 1 {
            alloc::vec![keys(queue)]
        } else {
            (0..n).map(|k| keys(&tag(queue, k, n))).collect()
        };
        Partitions { parts, sharded }
    }

    pub(super) fn len(&self) -> usize {
        self.parts.len()
    }

    /// Where queue `queue` keeps its partition count (under its own tag).
    pub(super) fn count_key(queue: &str) -> String {
        format!("tw:{{{queue}}}:partitions")
    }

    /// Partition `k`'s keys.
    pub(super) fn get(&self, k: usize) -> &Keys {
        &self.parts[k]
    }

    /// Every partition's keys, in order.
    pub(super) fn iter(&self) -> core::slice::Iter<'_, Keys> {
        self.parts.iter()
    }

    /// The partition of job `id`: the 64-bit FNV-1a hash of its UTF-8
    /// bytes, modulo the count. Part of the data format: another client
    /// of the same queue must compute the same.
    pub(super) fn of(&self, id: &str) -> usize {
        if self.parts.len() == 1 {
            return 0;
        }
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        for byte in id.bytes() {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        }
        (hash % self.parts.len() as u64) as usize
    }

    /// The keys of job `id`'s partition.
    pub(super) fn of_id(&self, id: &str) -> &Keys {
        self.get(self.of(id))
    }

    /// Which partition a wake-up channel belongs to.
    pub(super) fn of_channel(&self, channel: &str) -> Option<usize> {
        self.parts.iter().position(|keys| keys.channel == channel)
    }
}

lua!(PARTITIONS, "partitions.lua");

impl QueueBuilder {
    /// Connects only to a queue that exists, and writes nothing but what
    /// its calls ask for: [`connect`](Self::connect) reads the queue's
    /// partition count where it would store one for a new queue, and fails
    /// with [`QueueError::Connect`] on a queue with no keys at all; and the
    /// queue forgets no ended jobs on a schedule of its own (see
    /// [`retention`](Self::retention)), leaving that to the queue's other
    /// processes, whose retention may be longer than this builder's. For
    /// tools that inspect queues (`tickwheel-admin` uses it): a mistyped
    /// name is then an error, not a new empty queue whose stored partition
    /// count a later builder would have to match.
    ///
    /// ```
    /// # let b = tickwheel::redis::Queue::builder("redis://127.0.0.1:1", "q");
    /// let b = b.existing_only();
    /// # drop(b);
    /// ```
    pub fn existing_only(mut self) -> Self {
        self.options.existing = true;
        self
    }
}

/// Learns the queue's partition count (storing the builder's, or 1, if
/// the queue has none, once no other queue uses its partitions' keys;
/// refusing a queue with no keys if it must exist), refuses a builder
/// whose count differs (ids would move), and sets the partitions up.
pub(super) async fn set_partitions(ctx: &Arc<Ctx>, conn: &Conn) -> Result<(), QueueError> {
    let io = Io {
        conn: conn.clone(),
        replicated: None,
        ctx: Arc::clone(ctx),
    };
    let count_key = Partitions::count_key(&ctx.name);
    let (peeked, new) = partition_count(&io, &count_key, true).await?;
    let have = if new {
        // A new queue's partitions are checked before its count is stored,
        // so a refused one leaves no count that would pass a later connect.
        overlaps(&io, &ctx.name, peeked, true).await?;
        partition_count(&io, &count_key, false).await?.0
    } else {
        peeked
    };
    if let Some(wanted) = ctx.options.partitions.filter(|&n| n != have) {
        return Err(QueueError::Connect(alloc::format!(
            "queue `{}` has {have} partition(s) and this builder asks for {wanted}; \
             a queue's partition count cannot change (ids would move)",
            ctx.name
        )));
    }
    if !new {
        overlaps(&io, &ctx.name, have, false).await?;
    }
    let sharded = shard_channels(ctx, conn, &count_key).await;
    let _ = ctx.parts.set(Partitions::new(&ctx.name, have, sharded));
    let _ = ctx
        .trim_wake
        .set((0..have).map(|_| tokio::sync::Notify::new()).collect());
    Ok(())
}

/// `partitions.lua`'s answer: the queue's count, and whether it is new
/// (stored by this call, or by it were it not a `peek`).
async fn partition_count(io: &Io, count_key: &str, peek: bool) -> Result<(u16, bool), QueueError> {
    let ctx = &io.ctx;
    let one = Keys::new(&ctx.name);
    let keys = [count_key, one.due(), one.fixed[1].as_str()];
    let mut cmd = PARTITIONS.command(&keys);
    let wanted = ctx.options.partitions;
    cmd.arg(wanted.map_or(String::new(), |n| n.to_string()))
        .arg(u8::from(ctx.options.existing))
        .arg(u8::from(peek));
    let reply = io.script(&PARTITIONS, &cmd).await?;
    if reply == redis::Value::Nil {
        return Err(QueueError::Connect(alloc::format!(
            "no queue `{}` here (it has no keys: is the name right?)",
            ctx.name
        )));
    }
    let mut reply = super::ops::array(reply)?.into_iter();
    let (have, new) = (reply.next().unwrap_or(redis::Value::Nil), reply.next());
    let new = new.and_then(|c| super::ops::int(&c)) == Some(1);
    let have = super::ops::int(&have)
        .or_else(|| {
            core::str::from_utf8(&super::ops::bytes(have))
                .ok()?
                .parse()
                .ok()
        })
        .and_then(|n| u16::try_from(n).ok())
        .filter(|n| (1..=MAX_PARTITIONS).contains(n))
        .ok_or_else(|| {
            QueueError::Server(alloc::format!(
                "`{count_key}` does not hold a partition count"
            ))
        })?;
    Ok((have, new))
}

/// Refuses a queue whose keys another queue uses: `name` is `base:k` (or
/// `base:k.s`) and a partitioned `base` has it as partition `k`; or this
/// connect makes the queue (`new`) with `n > 1` partitions and one of
/// their tags is a queue that was connected on its own (it keeps a
/// partition count). That second check runs once, before the count is
/// stored: a queue of a partition's name made later is refused by the
/// first. Run at every connect, it asked every partition's shard, so while
/// one shard was down no process of the queue could connect, not even to
/// serve the others.
async fn overlaps(io: &Io, name: &str, n: u16, new: bool) -> Result<(), QueueError> {
    let clash = |other: &str, k: u16, base: &str| {
        QueueError::Connect(format!(
            "queue `{other}` uses the keys of partition {k} of queue `{base}`; \
             give one of them another name"
        ))
    };
    if let Some((base, k)) = name.rsplit_once(':').and_then(|(base, suffix)| {
        let digits = suffix.split_once('.').map_or(suffix, |(k, _)| k);
        Some((base, digits.parse::<u16>().ok()?))
    }) {
        let mut get = redis::cmd("GET");
        get.arg(Partitions::count_key(base));
        let count = super::ops::bytes(io.query(&get).await?);
        let count = core::str::from_utf8(&count)
            .ok()
            .and_then(|c| c.parse::<u16>().ok());
        if count.is_some_and(|count| count > 1 && k < count && tag(base, k, count) == name) {
            return Err(clash(name, k, base));
        }
    }
    for k in (0..n).filter(|_| n > 1 && new) {
        let part = tag(name, k, n);
        let mut exists = redis::cmd("EXISTS");
        exists.arg(Partitions::count_key(&part));
        if super::ops::int(&io.query(&exists).await?) == Some(1) {
            return Err(clash(&part, k, name));
        }
    }
    Ok(())
}

/// Whether wake-ups should use shard channels: on a cluster whose nodes
/// run Redis 7 or later (asked of the node that holds `key`), where a
/// plain `PUBLISH` would cross every node of the cluster bus. A cluster of
/// older servers, or one that will not say, keeps `PUBLISH`; a queue's
/// processes must then agree (they do when they run one tickwheel version
/// against one cluster), since a hint on the other kind of channel is lost
/// and costs a poll interval.
async fn shard_channels(ctx: &Ctx, conn: &Conn, key: &str) -> bool {
    if !matches!(ctx.reach.target, super::server::Target::Cluster(_)) {
        return false;
    }
    let mut version = redis::cmd("EVAL");
    version
        .arg("return redis.REDIS_VERSION_NUM or 0")
        .arg(1)
        .arg(key);
    let mut conn = conn.clone();
    let num: redis::RedisResult<i64> = version.query_async(&mut conn).await;
    // REDIS_VERSION_NUM is 0x00MMmmpp: 7.0.0 is 0x070000.
    num.is_ok_and(|n| n >= 0x07_00_00)
}

/// Redis Cluster's slots.
const SLOTS: u32 = 16_384;

/// Partition `k` of `n`'s hash tag: `queue:k`, or `queue:k.s` with the
/// smallest `s` that puts the tag's slot in the `k`-th `n`-th of the slot
/// space. A cluster gives its masters contiguous ranges of slots (an even
/// split, unless resharded), so partitions spaced evenly over the slots
/// spread evenly over the masters: 12 partitions on 3 masters are 4 on
/// each, where plain `queue:k` tags fell 6/2/4. Part of the data format.
fn tag(queue: &str, k: u16, n: u16) -> String {
    let (k, n) = (u32::from(k), u32::from(n));
    let (low, high) = (k * SLOTS / n, (k + 1) * SLOTS / n);
    let fits = |tag: &str| (low..high).contains(&slot(tag));
    let plain = format!("{queue}:{k}");
    if fits(&plain) {
        return plain;
    }
    // A range of at least 16 slots: about a thousand tries at worst.
    (1u32..)
        .map(|s| format!("{queue}:{k}.{s}"))
        .find(|tag| fits(tag))
        .unwrap_or(plain)
}

/// The slot of a key whose hash tag is `tag`: CRC16 (XMODEM) of the tag,
/// modulo 16,384, as Redis Cluster computes it.
fn slot(tag: &str) -> u32 {
    let mut crc: u16 = 0;
    for byte in tag.bytes() {
        crc ^= u16::from(byte) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
        }
    }
    u32::from(crc) % SLOTS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partitions_have_tags_of_their_own_and_ids_stay_put() {
        let one = Partitions::new("orders", 1, false);
        assert_eq!(one.len(), 1);
        assert_eq!(one.get(0).due(), "tw:{orders}:due");
        assert_eq!(one.of("anything"), 0);
        let eight = Partitions::new("orders", 8, false);
        let third = tag("orders", 3, 8);
        assert!(third.starts_with("orders:3"), "{third}");
        assert_eq!(eight.get(3).due(), format!("tw:{{{third}}}:due"));
        assert_eq!(eight.get(3).channel, format!("tw:{{{third}}}:wake"));
        assert_eq!(Partitions::count_key("orders"), "tw:{orders}:partitions");
        let fifth = format!("tw:{{{}}}:wake", tag("orders", 5, 8));
        assert_eq!(eight.of_channel(&fifth), Some(5));
        let sharded = Partitions::new("orders", 8, true);
        let fifth = format!("tw:{{{}}}:shard-wake", tag("orders", 5, 8));
        assert_eq!(sharded.of_channel(&fifth), Some(5));
        // FNV-1a 64 of "", "a" and "order-1017" (reference values), mod 8.
        assert_eq!(eight.of(""), (0xcbf2_9ce4_8422_2325_u64 % 8) as usize);
        assert_eq!(eight.of("a"), (0xaf63_dc4c_8601_ec8c_u64 % 8) as usize);
        // Ten thousand ids spread evenly: each partition within 15 %.
        let mut counts = [0usize; 8];
        for i in 0..10_000 {
            counts[eight.of(&format!("order-{i}"))] += 1;
        }
        assert!(
            counts.iter().all(|&c| (1063..=1438).contains(&c)),
            "{counts:?}"
        );
    }

    #[test]
    fn slots_are_redis_cluster_slots() {
        // `CLUSTER KEYSLOT` of these keys (Redis's own test vectors, and
        // two asked of redis-server 7.0.15: `orders`, `tw:{orders:3.5}:due`).
        assert_eq!(slot("123456789"), 12_739);
        assert_eq!(slot("foo"), 12_182);
        assert_eq!(slot("orders"), 105);
        assert_eq!(slot("orders:3.5"), 7_762);
    }

    #[test]
    fn partitions_spread_evenly_over_the_slots() {
        for n in [2u16, 3, 8, 12, 100, 1024] {
            for k in 0..n {
                let at = slot(&tag("orders", k, n));
                let (k, n) = (u32::from(k), u32::from(n));
                assert!(
                    (k * SLOTS / n..(k + 1) * SLOTS / n).contains(&at),
                    "partition {k} of {n} at slot {at}"
                );
            }
        }
    }
}
