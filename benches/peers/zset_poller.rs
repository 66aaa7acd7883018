//! The seeds' durable delayed-job design, as a benchmark peer: a hash of
//! payloads, a sorted set of due times, and a Lua mover, polled every
//! 100 ms, that moves due ids (at most 1 000 a call, again at once while
//! it moves full batches) to a ready list which consumers block on.
//!
//! Written on redis-rs's async API, the way a Rust user of this design
//! would: one `MultiplexedConnection` per process for every call that does
//! not block (schedules, cancels, acks, the mover), shared by cloning, so
//! any number of calls are in flight on it at once. Blocking commands
//! (`BRPOP`) cannot go on that connection: the server answers a
//! connection's commands in order, so a `BRPOP` waiting for a job would
//! stall every call queued behind it. Each consumer therefore has a
//! connection of its own for `BRPOP`, with no response timeout (redis-rs's
//! default of 500 ms would cut a 1 s `BRPOP` short).

use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, Ordering};
use core::time::Duration;
use std::sync::LazyLock;

use redis::aio::MultiplexedConnection;
use redis::{AsyncCommands, AsyncConnectionConfig, Script};

const DUE: &str = "seed:due";
const JOBS: &str = "seed:jobs";
const READY: &str = "seed:ready";

static MOVE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        "local t = redis.call('TIME')
         local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
         local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', string.format('%.0f', now), 'LIMIT', 0, 1000)
         for _, id in ipairs(ids) do
           redis.call('ZREM', KEYS[1], id)
           redis.call('LPUSH', KEYS[2], id)
         end
         return #ids",
    )
});

async fn open(url: &str, response_timeout: Option<Duration>) -> MultiplexedConnection {
    let config = AsyncConnectionConfig::new().set_response_timeout(response_timeout);
    redis::Client::open(url)
        .expect("redis URL")
        .get_multiplexed_async_connection_with_config(&config)
        .await
        .expect("connect")
}

/// The process's shared connection (clone it for each caller). A 10 s
/// response timeout instead of the default 500 ms: with hundreds of calls
/// queued, the last may wait longer than that behind an AOF rewrite.
pub(crate) async fn connect(url: &str) -> MultiplexedConnection {
    open(url, Some(Duration::from_secs(10))).await
}

/// A consumer's own connection, for `BRPOP` only.
pub(crate) async fn connect_blocking(url: &str) -> MultiplexedConnection {
    open(url, None).await
}

/// Schedules one job due at `due` (µs since the epoch): its hash field and
/// its sorted-set entry, pipelined in one call.
pub(crate) async fn schedule(conn: &mut MultiplexedConnection, id: &str, due: u64, payload: &[u8]) {
    let mut value = due.to_string().into_bytes();
    value.push(b'|');
    value.extend_from_slice(payload);
    redis::pipe()
        .hset(JOBS, id, value)
        .ignore()
        .zadd(DUE, id, due)
        .ignore()
        .exec_async(conn)
        .await
        .expect("schedule");
}

/// Cancels one job: removes its sorted-set entry and its payload, in one
/// call. `true` if it was waiting.
pub(crate) async fn cancel(conn: &mut MultiplexedConnection, id: &str) -> bool {
    let (removed, _): (u64, u64) = redis::pipe()
        .zrem(DUE, id)
        .hdel(JOBS, id)
        .query_async(conn)
        .await
        .expect("cancel");
    removed == 1
}

/// The mover: runs the script every 100 ms (again at once while it moves
/// full batches) until `stop`.
pub(crate) fn spawn_mover(
    mut conn: MultiplexedConnection,
    stop: Arc<AtomicBool>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        while !stop.load(Ordering::Relaxed) {
            let moved: i64 = MOVE
                .key(DUE)
                .key(READY)
                .invoke_async(&mut conn)
                .await
                .expect("move");
            if moved != 1000 {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    })
}

/// Takes one ready job: `BRPOP` (up to 1 s) on the consumer's own
/// connection, then reads and deletes its payload (the ack) on the shared
/// one. The id, and the due time its payload held (`None` if it had none).
pub(crate) async fn take(
    blocking: &mut MultiplexedConnection,
    conn: &mut MultiplexedConnection,
) -> Option<(String, Option<u64>)> {
    let popped: Option<(String, String)> = blocking.brpop(READY, 1.0).await.expect("brpop");
    let (_, id) = popped?;
    let (value, _): (Option<Vec<u8>>, u64) = redis::pipe()
        .hget(JOBS, &id)
        .hdel(JOBS, &id)
        .query_async(conn)
        .await
        .expect("take");
    let due = value.and_then(|value| {
        let due = value.split(|&b| b == b'|').next()?;
        core::str::from_utf8(due).ok()?.parse().ok()
    });
    Some((id, due))
}
