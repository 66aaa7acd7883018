//! The three calls that many callers share script calls for (see
//! `lanes.rs`): schedule, cancel and ack, each a job in its lane, with its
//! checks, its arguments and how its answers are read.

use alloc::string::{String, ToString};
use alloc::vec::Vec;

use redis::{Cmd, Value};
use tokio::sync::oneshot;

use super::counters::bump;
use super::keys::{Keys, Token};
use super::lanes::{Batched, Call, Kind, Lane, Lanes};
use super::link::{wall_micros, Ctx, Request};
use super::lua::{lua, Lua};
use super::ops::{
    array, bytes, check_id, check_new_id, check_payload, int, keys_with, own, time_of, When,
};
use super::outcome::{Acked, Cancelled, Delivery, Scheduled};
use super::pending::Pending;
use super::shared::Shared;
use super::QueueError;
use crate::event::event;

lua!(SCHEDULE, "schedule.lua");
lua!(CANCEL, "cancel.lua");
lua!(ACK, "ack.lua", records);

// ---- schedule ------------------------------------------------------------

pub(super) struct ScheduleJob {
    id: String,
    token: Token,
    when: When,
    payload: Vec<u8>,
    priority: u8,
}

impl ScheduleJob {
    /// A job with a fresh request token; `id` and `payload` already checked.
    fn new(id: &str, when: When, payload: &[u8], priority: u8) -> ScheduleJob {
        ScheduleJob {
            id: id.to_string(),
            token: Token::new(),
            when,
            payload: payload.to_vec(),
            priority,
        }
    }

    /// A job scheduler's run (`scheduler.rs`): due at `due` µs.
    pub(super) fn run(id: String, due: i64, payload: &[u8]) -> Result<ScheduleJob, QueueError> {
        check_id(&id)?;
        let due = u64::try_from(due).map_err(|_| QueueError::DueOutOfRange)?;
        Ok(ScheduleJob {
            id,
            token: Token::new(),
            when: When::at(std::time::UNIX_EPOCH + core::time::Duration::from_micros(due))?,
            payload: payload.to_vec(),
            priority: 0,
        })
    }
}

impl Batched for ScheduleJob {
    type Answer = Scheduled;
    const KIND: Kind = Kind::Schedule;
    const REPLICATED: bool = true;

    fn lua() -> &'static Lua {
        &SCHEDULE
    }

    fn bytes(&self) -> usize {
        self.payload.len() + self.id.len() + 48
    }

    fn id(&self) -> &str {
        &self.id
    }

    fn command(jobs: &[Self], _ctx: &Ctx, keys: &Keys) -> Cmd {
        let mut cmd = SCHEDULE.command(&keys.fixed);
        // Priorities cost an argument a job only in calls that have one.
        let ranked = jobs.iter().any(|job| job.priority != 0);
        cmd.arg(&keys.channel).arg(if ranked { "1" } else { "0" });
        for job in jobs {
            cmd.arg(&job.id)
                .arg(job.token.bytes())
                .arg(job.when.schedule_arg())
                .arg(&job.payload);
            if ranked {
                cmd.arg(&[u8::MAX - job.priority][..]);
            }
        }
        cmd
    }

    /// The reply is the server's now, then a pair per job the call did
    /// not just create (see schedule.lua); every other job was created.
    fn answers(reply: Value, jobs: &[Self], ctx: &Ctx) -> Result<Vec<Scheduled>, QueueError> {
        let wrong = || QueueError::Server(String::from("a malformed schedule reply"));
        let items = array(reply)?;
        let now = items.first().and_then(int).ok_or_else(wrong)?;
        if items.len() % 2 != 1 {
            return Err(wrong());
        }
        let mut out: Vec<Scheduled> = jobs
            .iter()
            .map(|job| Scheduled::Created {
                due: time_of(match job.when {
                    When::At(micros) => micros as i64,
                    When::In(micros) => now.saturating_add(micros as i64),
                }),
            })
            .collect();
        for pair in items[1..].chunks(2) {
            let index = int(&pair[0])
                .and_then(|i| usize::try_from(i).ok())
                .filter(|&i| (1..=jobs.len()).contains(&i))
                .ok_or_else(wrong)?;
            out[index - 1] = match int(&pair[1]) {
                // Created by this call's first attempt, whose reply was lost.
                Some(due) => Scheduled::Created { due: time_of(due) },
                None => Scheduled::Exists,
            };
        }
        let c = &ctx.counters;
        let mut first = None;
        for answer in &out {
            match answer {
                Scheduled::Created { due } => {
                    bump(&c.scheduled, 1);
                    let at = due
                        .duration_since(std::time::UNIX_EPOCH)
                        .map_or(0, |d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX));
                    first = Some(first.map_or(at, |first: i64| first.min(at)));
                }
                Scheduled::Exists => bump(&c.duplicates, 1),
            }
        }
        // One call is one partition's: its earliest new job, for this
        // process's claim loops, before the callers hear of it.
        if let (Some(at), Some(job)) = (first, jobs.first()) {
            ctx.local_hint(job.id(), at, at <= now.max(wall_micros()));
        }
        Ok(out)
    }

    fn lanes(lanes: &mut Lanes) -> &mut [Lane<Self>] {
        &mut lanes.schedule
    }

    fn request(call: Call<Self>) -> Request {
        Request::Schedule(alloc::vec![call])
    }
}

pub(super) fn schedule(
    s: &Shared,
    id: &str,
    when: When,
    payload: &[u8],
) -> Result<Pending<Scheduled>, QueueError> {
    let mut one = schedule_many(s, &[(id, when, payload, 0)])?;
    Ok(one.remove(0))
}

/// Checks every job first, so bad input in any refuses the whole batch
/// before anything is sent; the rest travel to the I/O thread together.
/// Each job is (id, when, payload, priority).
pub(super) fn schedule_many(
    s: &Shared,
    jobs: &[(&str, When, &[u8], u8)],
) -> Result<Vec<Pending<Scheduled>>, QueueError> {
    for &(id, _, payload, _) in jobs {
        check_new_id(id)?;
        check_payload(payload)?;
    }
    let (calls, pending) = jobs
        .iter()
        .map(|&(id, when, payload, priority)| {
            let job = ScheduleJob::new(id, when, payload, priority);
            let (reply, rx) = oneshot::channel();
            (Call { job, reply }, s.pending(rx))
        })
        .unzip();
    s.send(Request::Schedule(calls));
    Ok(pending)
}

/// [`schedule`] for an async caller: the call is sent from the caller's
/// task when it can be (`Shared::lane_call`).
pub(super) async fn schedule_async(
    s: &Shared,
    id: &str,
    when: When,
    payload: &[u8],
) -> Result<Scheduled, QueueError> {
    check_new_id(id)?;
    check_payload(payload)?;
    s.lane_call(ScheduleJob::new(id, when, payload, 0)).await
}

// ---- cancel --------------------------------------------------------------

pub(super) struct CancelJob {
    id: String,
    token: Token,
}

impl CancelJob {
    pub(super) fn new(id: String) -> CancelJob {
        CancelJob {
            id,
            token: Token::new(),
        }
    }
}

impl Batched for CancelJob {
    type Answer = Cancelled;
    const KIND: Kind = Kind::Cancel;

    fn lua() -> &'static Lua {
        &CANCEL
    }

    fn bytes(&self) -> usize {
        self.id.len() + 64
    }

    fn id(&self) -> &str {
        &self.id
    }

    fn command(jobs: &[Self], ctx: &Ctx, keys: &Keys) -> Cmd {
        // One answer key per script call: a retry sends this same command.
        let answers = keys.of_token("ans", &Token::new());
        let mut cmd = CANCEL.command(&keys_with(keys, &[answers]));
        cmd.arg(ctx.options.answer_ttl_ms());
        for job in jobs {
            cmd.arg(&job.id).arg(job.token.bytes());
        }
        cmd
    }

    fn answers(reply: Value, jobs: &[Self], ctx: &Ctx) -> Result<Vec<Cancelled>, QueueError> {
        let items = array(reply)?;
        if items.len() != jobs.len() * 2 {
            return Err(QueueError::Server(String::from(
                "a cancel reply of the wrong length",
            )));
        }
        let mut items = items.into_iter();
        let mut out = Vec::with_capacity(jobs.len());
        while let (Some(what), Some(body)) = (items.next(), items.next()) {
            out.push(match bytes(what).as_slice() {
                b"c" => {
                    bump(&ctx.counters.cancelled, 1);
                    ctx.job_ended();
                    Cancelled::Cancelled(bytes(body))
                }
                b"f" => Cancelled::InFlight,
                b"a" => Cancelled::Delivered,
                b"e" => Cancelled::Ended,
                _ => Cancelled::Unknown,
            });
        }
        Ok(out)
    }

    fn lanes(lanes: &mut Lanes) -> &mut [Lane<Self>] {
        &mut lanes.cancel
    }

    fn request(call: Call<Self>) -> Request {
        Request::Cancel(call)
    }
}

pub(super) fn cancel(s: &Shared, id: &str) -> Result<Pending<Cancelled>, QueueError> {
    check_id(id)?;
    let job = CancelJob::new(id.to_string());
    Ok(s.call(|reply| Request::Cancel(Call { job, reply })))
}

/// [`cancel`] for an async caller (as [`schedule_async`]).
pub(super) async fn cancel_async(s: &Shared, id: &str) -> Result<Cancelled, QueueError> {
    check_id(id)?;
    s.lane_call(CancelJob::new(id.to_string())).await
}

// ---- ack -----------------------------------------------------------------

pub(super) struct AckJob {
    id: String,
    fence: u64,
    token: Token,
}

impl AckJob {
    /// The ack of `job`, checked to be this queue's.
    fn of(ctx: &Ctx, job: &Delivery) -> Result<AckJob, QueueError> {
        own(ctx, job)?;
        Ok(AckJob {
            id: job.id.clone(),
            fence: job.fence,
            token: Token::new(),
        })
    }

    pub(super) fn id(&self) -> &str {
        &self.id
    }

    /// Appends this ack's arguments: id, fence, token.
    pub(super) fn args(&self, cmd: &mut Cmd) {
        cmd.arg(&self.id).arg(self.fence).arg(self.token.bytes());
    }
}

/// The answers to `acks`, as `ack_jobs` in `common.lua` gives them;
/// counts them. Whatever the answer, the delivery is no longer held.
pub(super) fn acked(items: &[Value], acks: &[AckJob], ctx: &Ctx) -> Vec<Acked> {
    let c = &ctx.counters;
    for ack in acks {
        c.held.settle(&ack.id, ack.fence);
    }
    items
        .iter()
        .zip(acks)
        .map(|(item, ack)| match int(item) {
            Some(1) => {
                bump(&c.acked, 1);
                ctx.job_ended();
                Acked::Acked
            }
            // A repeated ack of a delivery acked before: counted once.
            Some(2) => Acked::Acked,
            _ => {
                bump(&c.lease_lost, 1);
                event!(
                    warn,
                    "an ack found its lease lost (the delivery was nacked or dead-lettered, or the job went to another)",
                    queue = ctx.identity,
                    id = ack.id
                );
                Acked::LeaseLost
            }
        })
        .collect()
}

impl Batched for AckJob {
    type Answer = Acked;
    const KIND: Kind = Kind::Ack;

    fn lua() -> &'static Lua {
        &ACK
    }

    fn bytes(&self) -> usize {
        self.id.len() + 48
    }

    fn id(&self) -> &str {
        &self.id
    }

    fn command(jobs: &[Self], _ctx: &Ctx, keys: &Keys) -> Cmd {
        let mut cmd = ACK.command(&keys.fixed);
        for job in jobs {
            job.args(&mut cmd);
        }
        cmd
    }

    fn answers(reply: Value, jobs: &[Self], ctx: &Ctx) -> Result<Vec<Acked>, QueueError> {
        let items = array(reply)?;
        if items.len() != jobs.len() {
            return Err(QueueError::Server(String::from(
                "an ack reply of the wrong length",
            )));
        }
        Ok(acked(&items, jobs, ctx))
    }

    fn lanes(lanes: &mut Lanes) -> &mut [Lane<Self>] {
        &mut lanes.ack
    }

    fn request(call: Call<Self>) -> Request {
        Request::Ack(alloc::vec![call])
    }
}

pub(super) fn ack(s: &Shared, job: &Delivery) -> Result<Pending<Acked>, QueueError> {
    let mut one = ack_all(s, core::slice::from_ref(job))?;
    Ok(one.remove(0))
}

/// [`ack`] for an async caller (as [`schedule_async`]).
pub(super) async fn ack_async(s: &Shared, job: &Delivery) -> Result<Acked, QueueError> {
    s.lane_call(AckJob::of(&s.ctx, job)?).await
}

/// The ack of each delivery, each checked to be this queue's.
pub(super) fn ack_jobs(ctx: &Ctx, jobs: &[Delivery]) -> Result<Vec<AckJob>, QueueError> {
    jobs.iter().map(|job| AckJob::of(ctx, job)).collect()
}

pub(super) fn ack_all(s: &Shared, jobs: &[Delivery]) -> Result<Vec<Pending<Acked>>, QueueError> {
    let (calls, pending) = ack_jobs(&s.ctx, jobs)?
        .into_iter()
        .map(|job| {
            let (reply, rx) = oneshot::channel();
            (Call { job, reply }, s.pending(rx))
        })
        .unzip();
    s.send(Request::Ack(calls));
    Ok(pending)
}
