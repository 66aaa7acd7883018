//! Every call of the queue, once: its checks, the script it runs and how
//! its answer is read. [`Queue`](super::Queue) and
//! [`AsyncQueue`](super::AsyncQueue) (and the consumers) are thin shells
//! over these; the three that share script calls are in `batched.rs`,
//! the dead letters' two in `dead_letters.rs`.

use alloc::string::{String, ToString};
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::time::Duration;
use std::time::SystemTime;

use redis::{Cmd, Value};

use super::counters::bump;
use super::job_info::{JobInfo, JobState};
use super::keys::{Keys, Token};
use super::link::{wall_micros, Ctx, Io};
use super::lua::{lua, Lua};
use super::options::micros;
use super::outcome::{Delivery, Nacked};
use super::pending::Pending;
use super::shared::Shared;
use super::{QueueError, MAX_DUE_MICROS, MAX_ID, MAX_LEASE, MAX_PAYLOAD, MAX_RETRY_DELAY};
use crate::event::event;

pub(super) use super::batched::{
    ack, ack_all, ack_async, cancel, cancel_async, schedule, schedule_async, schedule_many,
};
pub(super) use super::dead_letters::{dead_letters, purge_dead};

lua!(NACK, "nack.lua", records);
lua!(EXTEND, "extend.lua", records);
lua!(REQUEUE, "requeue.lua", records);
lua!(RESCHEDULE, "reschedule.lua", records);
lua!(JOB, "job.lua");

/// When a job is due: at a wall-clock time, or after a delay from the
/// server's now (microseconds either way).
#[derive(Debug, Clone, Copy)]
pub(super) enum When {
    At(u64),
    In(u64),
}

impl When {
    /// A due time, rounded up to the microsecond so a job is never early.
    pub(super) fn at(due: SystemTime) -> Result<When, QueueError> {
        let since = due
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_err(|_| QueueError::DueOutOfRange)?;
        let micros = since.as_micros() + u128::from(!since.subsec_nanos().is_multiple_of(1000));
        match u64::try_from(micros) {
            Ok(micros) if micros <= MAX_DUE_MICROS => Ok(When::At(micros)),
            _ => Err(QueueError::DueOutOfRange),
        }
    }

    /// A delay from the server's now, rounded up to the microsecond.
    pub(super) fn after(delay: Duration) -> Result<When, QueueError> {
        // Added to the server's now inside the script: keep the sum exact.
        let micros = delay.as_micros() + u128::from(!delay.subsec_nanos().is_multiple_of(1000));
        match u64::try_from(micros) {
            Ok(micros) if micros <= MAX_DUE_MICROS / 2 => Ok(When::In(micros)),
            _ => Err(QueueError::DueOutOfRange),
        }
    }

    /// The schedule script's time argument: the due time's digits, or a
    /// delay's after a '-'.
    pub(super) fn schedule_arg(self) -> String {
        match self {
            When::At(micros) => micros.to_string(),
            When::In(micros) => alloc::format!("-{micros}"),
        }
    }

    pub(super) fn kind(self) -> (&'static str, u64) {
        match self {
            When::At(micros) => ("a", micros),
            When::In(micros) => ("i", micros),
        }
    }
}

pub(super) fn check_id(id: &str) -> Result<(), QueueError> {
    if id.is_empty() {
        return Err(QueueError::InvalidId("an id may not be empty"));
    }
    if id.len() > MAX_ID {
        return Err(QueueError::InvalidId("an id may be at most 512 bytes"));
    }
    Ok(())
}

/// A new job's id: as [`check_id`], and not in the job schedulers' runs'
/// namespace.
pub(super) fn check_new_id(id: &str) -> Result<(), QueueError> {
    check_id(id)?;
    if id.starts_with(super::scheduler::RUN_PREFIX) {
        return Err(QueueError::InvalidId(
            "ids starting with `schedule/` are job schedulers' runs",
        ));
    }
    Ok(())
}

pub(super) fn check_payload(payload: &[u8]) -> Result<(), QueueError> {
    if payload.len() > MAX_PAYLOAD {
        return Err(QueueError::PayloadTooLarge { len: payload.len() });
    }
    Ok(())
}

/// A lease or lease extension: from 1 ms to [`MAX_LEASE`].
fn lease_micros(lease: Duration) -> Result<u64, QueueError> {
    if lease < Duration::from_millis(1) || lease > MAX_LEASE {
        return Err(QueueError::Argument("a lease must be from 1 ms to 24 h"));
    }
    Ok(micros(lease))
}

/// Checks that `job` came from this queue.
pub(super) fn own(ctx: &Ctx, job: &Delivery) -> Result<(), QueueError> {
    if *job.queue != *ctx.identity {
        return Err(QueueError::WrongQueue);
    }
    Ok(())
}

pub(super) fn int(value: &Value) -> Option<i64> {
    match value {
        Value::Int(n) => Some(*n),
        Value::BulkString(bytes) => core::str::from_utf8(bytes).ok()?.parse().ok(),
        Value::Double(f) => Some(*f as i64),
        _ => None,
    }
}

pub(super) fn bytes(value: Value) -> Vec<u8> {
    match value {
        Value::BulkString(bytes) => bytes,
        Value::SimpleString(s) => s.into_bytes(),
        _ => Vec::new(),
    }
}

pub(super) fn array(value: Value) -> Result<Vec<Value>, QueueError> {
    match value {
        Value::Array(items) | Value::Set(items) => Ok(items),
        Value::Nil => Ok(Vec::new()),
        other => Err(unexpected(&other)),
    }
}

fn unexpected(value: &Value) -> QueueError {
    QueueError::Server(alloc::format!(
        "unexpected reply from a queue script: {value:?}"
    ))
}

pub(super) fn time_of(micros: i64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_micros(micros.max(0) as u64)
}

/// A partition's six fixed keys, then `extra`.
pub(super) fn keys_with(keys: &Keys, extra: &[String]) -> Vec<String> {
    let mut keys: Vec<String> = keys.fixed.to_vec();
    keys.extend_from_slice(extra);
    keys
}

// ---- single calls ----------------------------------------------------------

/// Runs a script whose arguments depend on whether this attempt is a
/// retry (the scripts that keep an answer for one).
pub(super) async fn script_with_retry_flag(
    io: &Io,
    lua: &'static Lua,
    cmd: impl Fn(bool) -> Cmd,
) -> Result<Value, QueueError> {
    io.retry(|conn, again| {
        let cmd = cmd(again);
        async move { lua.run(conn, &cmd).await }
    })
    .await
}

pub(super) fn reschedule(s: &Shared, id: &str, when: When) -> Result<Pending<bool>, QueueError> {
    check_id(id)?;
    let id = id.to_string();
    Ok(s.task(move |io, reply| async move {
        let token = Token::new();
        let part = io.ctx.parts().of_id(&id);
        let keys = keys_with(part, &[part.of_token("ans", &token)]);
        let (kind, micros) = when.kind();
        let answer = script_with_retry_flag(&io, &RESCHEDULE, |again| {
            let mut cmd = RESCHEDULE.command(&keys);
            cmd.arg(&id)
                .arg(kind)
                .arg(micros)
                .arg(token.bytes())
                .arg(u8::from(again));
            cmd.arg(io.ctx.options.answer_ttl_ms()).arg(&part.channel);
            cmd
        })
        .await
        .map(|v| {
            let due = int(&v).filter(|due| *due >= 0);
            if let Some(due) = due {
                bump(&io.ctx.counters.rescheduled, 1);
                io.ctx.local_hint(&id, due, due <= wall_micros());
            }
            due.is_some()
        });
        let _ = reply.send(answer);
    }))
}

pub(super) fn requeue(s: &Shared, id: &str) -> Result<Pending<bool>, QueueError> {
    check_id(id)?;
    let id = id.to_string();
    Ok(s.task(move |io, reply| async move {
        let token = Token::new();
        let part = io.ctx.parts().of_id(&id);
        let keys = keys_with(part, &[part.of_token("ans", &token)]);
        let answer = script_with_retry_flag(&io, &REQUEUE, |again| {
            let mut cmd = REQUEUE.command(&keys);
            cmd.arg(&id).arg(token.bytes()).arg(u8::from(again));
            cmd.arg(io.ctx.options.answer_ttl_ms()).arg(&part.channel);
            cmd
        })
        .await
        .map(|v| int(&v) == Some(1));
        if matches!(answer, Ok(true)) {
            // Due now: a fetch made after this answer takes it.
            io.ctx.local_hint(&id, wall_micros(), true);
        }
        let _ = reply.send(answer);
    }))
}

pub(super) fn nack(
    s: &Shared,
    job: &Delivery,
    delay: Duration,
) -> Result<Pending<Nacked>, QueueError> {
    own(&s.ctx, job)?;
    if delay > MAX_RETRY_DELAY {
        return Err(QueueError::Argument(
            "a retry delay must be at most 365 days",
        ));
    }
    let delay = micros(delay);
    let (id, fence) = (job.id.clone(), job.fence);
    Ok(s.task(move |io, reply| async move {
        let token = Token::new();
        let part = io.ctx.parts().of_id(&id);
        let keys = keys_with(part, &[part.of_token("ans", &token)]);
        let o = &io.ctx.options;
        let answer = script_with_retry_flag(&io, &NACK, |again| {
            let mut cmd = NACK.command(&keys);
            cmd.arg(&id)
                .arg(fence)
                .arg(delay)
                .arg(o.max_attempts)
                .arg(token.bytes());
            cmd.arg(u8::from(again))
                .arg(o.answer_ttl_ms())
                .arg(&part.channel);
            cmd
        })
        .await
        .map(|v| {
            let c = &io.ctx.counters;
            c.held.settle(&id, fence);
            match int(&v) {
                Some(1) => {
                    bump(&c.retried, 1);
                    if delay == 0 {
                        // Due now: a fetch made after this answer takes it.
                        io.ctx.local_hint(&id, wall_micros(), true);
                    }
                    Nacked::Retrying
                }
                Some(2) => {
                    bump(&c.dead_lettered, 1);
                    event!(
                        warn,
                        "a nacked job dead-lettered (out of attempts)",
                        queue = io.ctx.identity,
                        id = id
                    );
                    Nacked::DeadLettered
                }
                _ => {
                    bump(&c.lease_lost, 1);
                    event!(
                        warn,
                        "a nack found its lease lost (the delivery was acked or nacked, or the job went to another)",
                        queue = io.ctx.identity,
                        id = id
                    );
                    Nacked::LeaseLost
                }
            }
        });
        let _ = reply.send(answer);
    }))
}

pub(super) fn extend(
    s: &Shared,
    job: &Delivery,
    lease: Duration,
) -> Result<Pending<bool>, QueueError> {
    own(&s.ctx, job)?;
    let lease_of = lease;
    let lease = lease_micros(lease)?;
    let (id, fence) = (job.id.clone(), job.fence);
    Ok(s.task(move |io, reply| async move {
        let mut cmd = EXTEND.command(&io.ctx.parts().of_id(&id).fixed);
        cmd.arg(&id).arg(fence).arg(lease);
        let answer = io.script(&EXTEND, &cmd).await.map(|v| {
            let kept = int(&v) == Some(1);
            let c = &io.ctx.counters;
            if kept {
                c.held.extend(&id, fence, lease_of);
            } else {
                c.held.settle(&id, fence);
                bump(&c.lease_lost, 1);
                event!(
                    warn,
                    "an extend found its lease lost (the delivery was acked or nacked, or the job went to another)",
                    queue = io.ctx.identity,
                    id = id
                );
            }
            kept
        });
        let _ = reply.send(answer);
    }))
}

pub(super) fn job(s: &Shared, id: &str) -> Result<Pending<Option<JobInfo>>, QueueError> {
    check_id(id)?;
    let id = id.to_string();
    Ok(s.task(move |io, reply| async move {
        let mut cmd = JOB.command(&io.ctx.parts().of_id(&id).fixed);
        cmd.arg(&id);
        let answer = io.script(&JOB, &cmd).await.and_then(|v| read_job(id, v));
        let _ = reply.send(answer);
    }))
}

/// `job.lua`'s answer: nil, or state, attempts, fence, due, score, payload.
fn read_job(id: String, reply: Value) -> Result<Option<JobInfo>, QueueError> {
    let items = array(reply)?;
    if items.is_empty() {
        return Ok(None);
    }
    let [state, attempts, fence, due, at, payload] =
        <[Value; 6]>::try_from(items).map_err(|items| unexpected(&Value::Array(items)))?;
    let state = bytes(state)
        .first()
        .copied()
        .and_then(JobState::of_byte)
        .ok_or_else(|| QueueError::Server(String::from("a job record has an unknown state")))?;
    Ok(Some(JobInfo {
        id,
        state,
        due: time_of(int(&due).unwrap_or(0)),
        attempts: int(&attempts).unwrap_or(0).try_into().unwrap_or(u32::MAX),
        fence: int(&fence).unwrap_or(0).try_into().unwrap_or(0),
        at: int(&at).map(time_of),
        payload: bytes(payload),
    }))
}

pub(super) fn len(s: &Shared) -> Pending<(u64, u64)> {
    s.task(move |io, reply| async move {
        // A pipeline per partition: a cluster client refuses one across
        // slots.
        let mut sum = (0, 0);
        for part in io.ctx.parts().iter() {
            let mut pipe = redis::pipe();
            pipe.zcard(part.due()).zcard(part.dead());
            let sizes = io
                .retry(|mut conn, _| {
                    let pipe = &pipe;
                    async move { pipe.query_async::<(u64, u64)>(&mut conn).await }
                })
                .await;
            match sizes {
                Ok((live, dead)) => sum = (sum.0 + live, sum.1 + dead),
                Err(err) => {
                    let _ = reply.send(Err(err));
                    return;
                }
            }
        }
        let answer = Ok(sum);
        io.ctx.counters.held.refresh();
        if let Ok(sizes) = answer {
            io.ctx.counters.sizes.set(sizes);
        }
        let _ = reply.send(answer);
    })
}

/// A delivery as the claim script lists it: id, payload, attempt, fence,
/// due.
pub(super) fn delivery(
    queue: &Arc<str>,
    item: &mut impl Iterator<Item = Value>,
) -> Option<Delivery> {
    let id = String::from_utf8_lossy(&bytes(item.next()?)).into_owned();
    let payload = bytes(item.next()?);
    let attempt = int(&item.next()?)?;
    let fence = int(&item.next()?)?;
    let due = int(&item.next()?)?;
    Some(Delivery {
        id,
        payload,
        attempt: attempt.try_into().unwrap_or(u32::MAX),
        due: time_of(due),
        fence: fence.try_into().unwrap_or(0),
        queue: Arc::clone(queue),
    })
}
