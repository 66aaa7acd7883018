//! A queue's partitions, and how a connect learns them.
//!
//! A queue of one partition keeps its keys under the hash tag `{name}`, so
//! a Redis Cluster holds all of them in one slot. A queue of `n > 1`
//! partitions keeps partition `k`'s keys under `{name:k}`: each partition
//! is a whole queue of its own (the same keys, the same scripts), and a
//! cluster spreads the partitions over its shards. A job lives in the
//! partition [`Partitions::of`] its id, so every call about one job is a
//! script on one slot. The count is kept in `tw:{name}:partitions`; a
//! queue cannot change it (ids would move): `connect` refuses a builder
//! that names another count, and one that names none takes the queue's.

use alloc::format;
use alloc::string::{String, ToString};
use alloc::sync::Arc;
use alloc::vec::Vec;

use super::keys::Keys;
use super::link::{Ctx, Io};
use super::lua::lua;
use super::options::MAX_PARTITIONS;
use super::server::Conn;
use super::QueueError;

/// Every partition's keys, and which partition a job id lives in.
#[derive(Debug)]
pub(super) struct Partitions {
    parts: Vec<Keys>,
}

impl Partitions {
    /// `n` partitions of queue `queue`; `n == 1` is the one-partition
    /// layout (`{queue}`), `n > 1` partition `k` is `{queue:k}`.
    pub(super) fn new(queue: &str, n: u16) -> Partitions {
        let parts = if n <= 1 {
            alloc::vec![Keys::new(queue)]
        } else {
            (0..n).map(|k| Keys::new(&format!("{queue}:{k}"))).collect()
        };
        Partitions { parts }
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

/// Learns the queue's partition count (storing the builder's, or 1, if
/// the queue has none), refuses a builder whose count differs (ids would
/// move), and sets the partitions up.
pub(super) async fn set_partitions(ctx: &Arc<Ctx>, conn: &Conn) -> Result<(), QueueError> {
    let io = Io {
        conn: conn.clone(),
        replicated: None,
        ctx: Arc::clone(ctx),
    };
    let one = Keys::new(&ctx.name);
    let count_key = Partitions::count_key(&ctx.name);
    let keys = [count_key.as_str(), one.due(), one.fixed[1].as_str()];
    let mut cmd = PARTITIONS.command(&keys);
    let wanted = ctx.options.partitions;
    cmd.arg(wanted.map_or(String::new(), |n| n.to_string()));
    let have = io.script(&PARTITIONS, &cmd).await?;
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
    if let Some(wanted) = wanted.filter(|&n| n != have) {
        return Err(QueueError::Connect(alloc::format!(
            "queue `{}` has {have} partition(s) and this builder asks for {wanted}; \
             a queue's partition count cannot change (ids would move)",
            ctx.name
        )));
    }
    let _ = ctx.parts.set(Partitions::new(&ctx.name, have));
    let _ = ctx
        .trim_wake
        .set((0..have).map(|_| tokio::sync::Notify::new()).collect());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partitions_have_tags_of_their_own_and_ids_stay_put() {
        let one = Partitions::new("orders", 1);
        assert_eq!(one.len(), 1);
        assert_eq!(one.get(0).due(), "tw:{orders}:due");
        assert_eq!(one.of("anything"), 0);
        let eight = Partitions::new("orders", 8);
        assert_eq!(eight.get(3).due(), "tw:{orders:3}:due");
        assert_eq!(eight.get(3).channel, "tw:{orders:3}:wake");
        assert_eq!(Partitions::count_key("orders"), "tw:{orders}:partitions");
        assert_eq!(eight.of_channel("tw:{orders:5}:wake"), Some(5));
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
}
