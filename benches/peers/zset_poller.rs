//! The seeds' durable delayed-job design, as a benchmark peer: a hash of
//! payloads, a sorted set of due times, and a Lua mover, polled every
//! 100 ms, that moves due ids (at most 1 000 a call) to a ready list which
//! consumers block on. Written on the crate's own RESP client, so both
//! sides talk to Redis the same way.

use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::net::SocketAddr;
use core::sync::atomic::{AtomicBool, Ordering};
use core::time::Duration;
use std::thread::JoinHandle;

use super::resp::{Connection, Script, Value};

const DUE: &[u8] = b"seed:due";
const JOBS: &[u8] = b"seed:jobs";
const READY: &[u8] = b"seed:ready";

static MOVE: Script = Script::new(
    "local t = redis.call('TIME')
     local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
     local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', string.format('%.0f', now), 'LIMIT', 0, 1000)
     for _, id in ipairs(ids) do
       redis.call('ZREM', KEYS[1], id)
       redis.call('LPUSH', KEYS[2], id)
     end
     return #ids",
);

pub(crate) fn connect(addr: SocketAddr) -> Connection {
    Connection::connect(addr, Duration::from_secs(5)).expect("connect")
}

/// Schedules `(id, due µs, payload)` jobs: a hash field and a sorted-set
/// entry each, pipelined.
pub(crate) fn schedule(conn: &mut Connection, jobs: &[(String, u64, Vec<u8>)]) {
    let mut cmds = Vec::with_capacity(jobs.len() * 2);
    for (id, due, payload) in jobs {
        let mut value = due.to_string().into_bytes();
        value.push(b'|');
        value.extend_from_slice(payload);
        cmds.push(vec![
            b"HSET".to_vec(),
            JOBS.to_vec(),
            id.clone().into_bytes(),
            value,
        ]);
        cmds.push(vec![
            b"ZADD".to_vec(),
            DUE.to_vec(),
            due.to_string().into_bytes(),
            id.clone().into_bytes(),
        ]);
    }
    for reply in conn.pipeline(&cmds).expect("schedule") {
        assert!(!matches!(reply, Value::Error(_)), "{reply:?}");
    }
}

/// Cancels one job: removes its sorted-set entry and its payload.
pub(crate) fn cancel(conn: &mut Connection, id: &str) -> bool {
    let cmds = vec![
        vec![b"ZREM".to_vec(), DUE.to_vec(), id.as_bytes().to_vec()],
        vec![b"HDEL".to_vec(), JOBS.to_vec(), id.as_bytes().to_vec()],
    ];
    let replies = conn.pipeline(&cmds).expect("cancel");
    replies[0].as_int() == Some(1)
}

/// The mover thread: runs the script every 100 ms (again at once while it
/// moves full batches) until `stop`.
pub(crate) fn spawn_mover(addr: SocketAddr, stop: Arc<AtomicBool>) -> JoinHandle<()> {
    std::thread::spawn(move || {
        let mut conn = connect(addr);
        while !stop.load(Ordering::Relaxed) {
            let moved = conn.eval(&MOVE, &[DUE, READY], &[]).expect("move");
            if moved.as_int() != Some(1000) {
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    })
}

/// Takes one ready job (blocking up to 1 s): `(id, due µs)`, and deletes
/// its payload (the ack).
pub(crate) fn take(conn: &mut Connection) -> Option<(String, u64)> {
    let popped = conn.query(&[b"BRPOP", READY, b"1"]).expect("brpop");
    let id = popped.into_array()?.pop()?.into_bulk()?;
    let replies = conn
        .pipeline(&[
            vec![b"HGET".to_vec(), JOBS.to_vec(), id.clone()],
            vec![b"HDEL".to_vec(), JOBS.to_vec(), id.clone()],
        ])
        .expect("take");
    let value = replies.into_iter().next()?.into_bulk()?;
    let due = value.split(|&b| b == b'|').next()?;
    let due = core::str::from_utf8(due).ok()?.parse().ok()?;
    Some((String::from_utf8(id).ok()?, due))
}
