//! The seeds' durable delayed-job design, as a benchmark peer: a hash of
//! payloads, a sorted set of due times, and a Lua mover, polled every
//! 100 ms, that moves due ids (at most 1 000 a call) to a ready list which
//! consumers block on. Written on redis-rs, the client a Rust user of this
//! design would use.

use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, Ordering};
use core::time::Duration;
use std::sync::LazyLock;
use std::thread::JoinHandle;

use redis::{Commands, Connection, Script};

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

pub(crate) fn connect(url: &str) -> Connection {
    redis::Client::open(url)
        .and_then(|c| c.get_connection())
        .expect("connect")
}

/// Schedules `(id, due µs, payload)` jobs: a hash field and a sorted-set
/// entry each, pipelined.
pub(crate) fn schedule(conn: &mut Connection, jobs: &[(String, u64, Vec<u8>)]) {
    let mut pipe = redis::pipe();
    for (id, due, payload) in jobs {
        let mut value = due.to_string().into_bytes();
        value.push(b'|');
        value.extend_from_slice(payload);
        pipe.hset(JOBS, id, value).ignore();
        pipe.zadd(DUE, id, *due).ignore();
    }
    pipe.exec(conn).expect("schedule");
}

/// Cancels one job: removes its sorted-set entry and its payload.
pub(crate) fn cancel(conn: &mut Connection, id: &str) -> bool {
    let (removed, _): (u64, u64) = redis::pipe()
        .zrem(DUE, id)
        .hdel(JOBS, id)
        .query(conn)
        .expect("cancel");
    removed == 1
}

/// The mover thread: runs the script every 100 ms (again at once while it
/// moves full batches) until `stop`.
pub(crate) fn spawn_mover(url: String, stop: Arc<AtomicBool>) -> JoinHandle<()> {
    std::thread::spawn(move || {
        let mut conn = connect(&url);
        while !stop.load(Ordering::Relaxed) {
            let moved: i64 = MOVE.key(DUE).key(READY).invoke(&mut conn).expect("move");
            if moved != 1000 {
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    })
}

/// Takes one ready job (blocking up to 1 s): `(id, due µs)`, and deletes
/// its payload (the ack).
pub(crate) fn take(conn: &mut Connection) -> Option<(String, u64)> {
    let popped: Option<(String, String)> = conn.brpop(READY, 1.0).expect("brpop");
    let (_, id) = popped?;
    let (value, _): (Vec<u8>, u64) = redis::pipe()
        .hget(JOBS, &id)
        .hdel(JOBS, &id)
        .query(conn)
        .expect("take");
    let due = value.split(|&b| b == b'|').next()?;
    let due = core::str::from_utf8(due).ok()?.parse().ok()?;
    Some((id, due))
}
