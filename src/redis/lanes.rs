//! Lanes: calls of the three busy kinds (schedule, cancel, ack) that many
//! callers share one script call for.
//!
//! Each kind waits in a lane, one lane per kind and partition (a script
//! call runs on one partition's keys). A lane sends at most [`IN_FLIGHT`]
//! script calls at a time, each carrying every call that waited (up to
//! [`MAX_CALLS`] calls or [`MAX_BYTES`] of payload): alone, a call goes out
//! at once; under load, calls that arrive while the lane is busy share the
//! next script call, so Redis runs one script and a handful of commands for
//! many jobs. A call whose caller has gone before it was sent is dropped
//! unsent.
//!
//! The serve loop (`link.rs`) fills the lanes and sends their script calls
//! as tasks of the I/O. A call made from a task of the runtime the I/O runs
//! on ([`QueueBuilder::runtime`](super::QueueBuilder::runtime)) skips that
//! when its lane has room and no call waits in it: the caller's own task
//! takes one of the lane's slots and sends the script call itself, so the
//! call and its answer pass through no other task (see [`LaneSet::claim`]).
//! A slot given back to a lane with calls waiting wakes the serve loop.

use alloc::collections::VecDeque;
use alloc::sync::Arc;
use alloc::vec::Vec;

use parking_lot::{Mutex, MutexGuard};
use redis::{Cmd, Value};
use tokio::sync::Notify;
use tokio::task::JoinSet;

use super::batched::{AckJob, CancelJob, ScheduleJob};
use super::keys::Keys;
use super::link::{Ctx, Io, Request};
use super::lua::Lua;
use super::pending::Reply;
use super::QueueError;

/// Script calls a lane keeps in flight at once.
pub(super) const IN_FLIGHT: usize = 2;
/// The most calls one script call carries.
pub(super) const MAX_CALLS: usize = 500;
/// The most payload bytes one script call carries (a larger single job
/// goes alone).
pub(super) const MAX_BYTES: usize = 1 << 20;

/// A call of a batched kind, waiting in its lane.
pub(super) struct Call<J: Batched> {
    pub(super) job: J,
    pub(super) reply: Reply<J::Answer>,
}

/// A kind of call that many callers can share one script call for.
pub(super) trait Batched: Sized + Send + 'static {
    type Answer: Send + 'static;
    /// Which lanes it waits in.
    const KIND: Kind;
    /// Whether its writes wait for the replicas the queue asks for
    /// ([`QueueBuilder::replicas`](super::QueueBuilder::replicas)).
    const REPLICATED: bool = false;
    /// The script.
    fn lua() -> &'static Lua;
    /// Payload bytes this call adds to a script call.
    fn bytes(&self) -> usize;
    /// The job's id, which names its partition.
    fn id(&self) -> &str;
    /// The script call for these jobs, in order, all of the partition
    /// whose keys are `keys`.
    fn command(jobs: &[Self], ctx: &Ctx, keys: &Keys) -> Cmd;
    /// One answer per job, in order, from the script's reply; counts them.
    fn answers(reply: Value, jobs: &[Self], ctx: &Ctx) -> Result<Vec<Self::Answer>, QueueError>;
    /// Its lanes, one per partition.
    fn lanes(lanes: &mut Lanes) -> &mut [Lane<Self>];
    /// One call of it, as a request to the serve loop.
    fn request(call: Call<Self>) -> Request;
}

#[derive(Clone, Copy, Debug)]
pub(super) enum Kind {
    Schedule,
    Cancel,
    Ack,
}

/// A lane: its kind and its partition.
#[derive(Clone, Copy, Debug)]
pub(super) struct LaneId {
    kind: Kind,
    part: usize,
}

/// Every lane, by kind, then by partition.
pub(super) struct Lanes {
    pub(super) schedule: Vec<Lane<ScheduleJob>>,
    pub(super) cancel: Vec<Lane<CancelJob>>,
    pub(super) ack: Vec<Lane<AckJob>>,
}

impl Lanes {
    pub(super) fn new(partitions: usize) -> Lanes {
        fn lanes<J: Batched>(n: usize) -> Vec<Lane<J>> {
            (0..n).map(|_| Lane::default()).collect()
        }
        Lanes {
            schedule: lanes(partitions),
            cancel: lanes(partitions),
            ack: lanes(partitions),
        }
    }

    /// Queues calls in the lanes of their jobs' partitions.
    /// Queues calls in the lanes of their jobs' partitions.
    pub(super) fn add<J: Batched>(&mut self, ctx: &Ctx, calls: impl IntoIterator<Item = Call<J>>) {
        let lanes = J::lanes(self);
        for call in calls {
            let part = ctx.parts().of(call.job.id());
            lanes[part].waiting.push_back(call);
        }
    }

    fn done(&mut self, lane: LaneId) -> bool {
        fn give_back<J: Batched>(lane: &mut Lane<J>) -> bool {
            lane.in_flight = lane.in_flight.saturating_sub(1);
            !lane.waiting.is_empty()
        }
        match lane.kind {
            Kind::Schedule => give_back(&mut self.schedule[lane.part]),
            Kind::Cancel => give_back(&mut self.cancel[lane.part]),
            Kind::Ack => give_back(&mut self.ack[lane.part]),
        }
    }
}

/// The lanes, shared by the serve loop and the callers that send their
/// own script calls, and the serve loop's wake-up for a lane whose slot
/// came back with calls waiting.
pub(super) struct LaneSet {
    lanes: Mutex<Lanes>,
    freed: Notify,
}

impl LaneSet {
    pub(super) fn new(partitions: usize) -> Arc<LaneSet> {
        Arc::new(LaneSet {
            lanes: Mutex::new(Lanes::new(partitions)),
            freed: Notify::new(),
        })
    }

    /// The lanes, for the serve loop to fill.
    pub(super) fn lock(&self) -> MutexGuard<'_, Lanes> {
        self.lanes.lock()
    }

    /// Resolves when a slot came back to a lane with calls waiting.
    pub(super) async fn freed(&self) {
        self.freed.notified().await;
    }

    /// A slot of partition `part`'s lane of `J`, for a caller to send its
    /// own call in, if the lane has one free and no call waits in it (a
    /// waiting call goes first). The slot comes back when the guard drops.
    pub(super) fn claim<J: Batched>(self: &Arc<Self>, part: usize) -> Option<Slot> {
        let mut lanes = self.lanes.lock();
        let lane = J::lanes(&mut lanes).get_mut(part)?;
        if lane.in_flight >= IN_FLIGHT || !lane.waiting.is_empty() {
            return None;
        }
        lane.in_flight += 1;
        Some(Slot {
            set: Arc::clone(self),
            lane: LaneId {
                kind: J::KIND,
                part,
            },
        })
    }

    /// Gives a slot back; wakes the serve loop if calls wait for it.
    fn give_back(&self, lane: LaneId) {
        if self.lanes.lock().done(lane) {
            self.freed.notify_one();
        }
    }

    /// Sends, as tasks in `tasks`, the script calls every lane has room for.
    pub(super) fn launch(self: &Arc<Self>, io: &Io, tasks: &mut JoinSet<()>) {
        let mut lanes = self.lanes.lock();
        let lanes = &mut *lanes;
        for (part, lane) in lanes.schedule.iter_mut().enumerate() {
            lane.launch(part, self, io, tasks);
        }
        for (part, lane) in lanes.cancel.iter_mut().enumerate() {
            lane.launch(part, self, io, tasks);
        }
        for (part, lane) in lanes.ack.iter_mut().enumerate() {
            lane.launch(part, self, io, tasks);
        }
    }
}

/// A lane's slot, held while its script call is out; given back on drop,
/// whether the call ended or its caller went away.
pub(super) struct Slot {
    set: Arc<LaneSet>,
    lane: LaneId,
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.set.give_back(self.lane);
    }
}

pub(super) struct Lane<J: Batched> {
    waiting: VecDeque<Call<J>>,
    in_flight: usize,
}

impl<J: Batched> Default for Lane<J> {
    fn default() -> Self {
        Lane {
            waiting: VecDeque::new(),
            in_flight: 0,
        }
    }
}

impl<J: Batched> Lane<J> {
    fn launch(&mut self, part: usize, set: &Arc<LaneSet>, io: &Io, tasks: &mut JoinSet<()>) {
        while self.in_flight < IN_FLIGHT {
            let mut calls = Vec::new();
            let mut bytes = 0;
            while let Some(call) = self.waiting.pop_front() {
                // A call whose caller has gone is sent all the same: it was
                // made, and its caller may have taken the drop for a lost
                // reply (the docs of `AsyncQueue` promise it finishes).
                let size = call.job.bytes();
                if !calls.is_empty() && (calls.len() >= MAX_CALLS || bytes + size > MAX_BYTES) {
                    self.waiting.push_front(call);
                    break;
                }
                bytes += size;
                calls.push(call);
            }
            if calls.is_empty() {
                return;
            }
            self.in_flight += 1;
            let (io, set) = (io.clone(), Arc::clone(set));
            let lane = LaneId {
                kind: J::KIND,
                part,
            };
            tasks.spawn(async move {
                let _slot = Slot { set, lane };
                run_batch(&io, part, calls).await;
            });
        }
    }
}

/// Runs `jobs` from the I/O thread itself, not through a lane (the job
/// schedulers' runs, `scheduler.rs`): one script call per partition, in
/// turn. Fails at the first call that fails (each is idempotent: a retry
/// of the whole set answers the same).
pub(super) async fn run_direct<J: Batched>(io: &Io, jobs: Vec<J>) -> Result<(), QueueError> {
    let parts = io.ctx.parts();
    let mut by_part: Vec<Vec<J>> = (0..parts.len()).map(|_| Vec::new()).collect();
    for job in jobs {
        by_part[parts.of(job.id())].push(job);
    }
    for (part, jobs) in by_part.into_iter().enumerate() {
        if jobs.is_empty() {
            continue;
        }
        let keys = parts.get(part);
        let cmd = J::command(&jobs, &io.ctx, keys);
        let reply = if J::REPLICATED {
            io.script_replicated(J::lua(), &cmd, keys).await?
        } else {
            io.script(J::lua(), &cmd).await?
        };
        J::answers(reply, &jobs, &io.ctx)?;
    }
    Ok(())
}

/// Sends `calls` (all of partition `part`) in one script call and answers
/// each.
pub(super) async fn run_batch<J: Batched>(io: &Io, part: usize, calls: Vec<Call<J>>) {
    let (jobs, replies): (Vec<J>, Vec<Reply<J::Answer>>) =
        calls.into_iter().map(|c| (c.job, c.reply)).unzip();
    let keys = io.ctx.parts().get(part);
    let cmd = J::command(&jobs, &io.ctx, keys);
    let reply = if J::REPLICATED {
        io.script_replicated(J::lua(), &cmd, keys).await
    } else {
        io.script(J::lua(), &cmd).await
    };
    let answers = reply.and_then(|reply| J::answers(reply, &jobs, &io.ctx));
    match answers {
        Ok(answers) => {
            for (reply, answer) in replies.into_iter().zip(answers) {
                let _ = reply.send(Ok(answer));
            }
        }
        Err(err) => {
            for reply in replies {
                let _ = reply.send(Err(err.clone()));
            }
        }
    }
}
