//! Lanes: calls of the three busy kinds (schedule, cancel, ack) that many
//! callers share one script call for.
//!
//! Each kind waits in a lane on the I/O thread, one lane per kind and
//! partition (a script call runs on one partition's keys). A lane sends at most
//! [`IN_FLIGHT`] script calls at a time, each carrying every call that
//! waited (up to [`MAX_CALLS`] calls or [`MAX_BYTES`] of payload): alone, a
//! call goes out at once; under load, calls that arrive while the lane is
//! busy share the next script call, so Redis runs one script and a handful
//! of commands for many jobs. A call whose caller has gone before it was
//! sent is dropped unsent.

use alloc::collections::VecDeque;
use alloc::vec::Vec;

use redis::{Cmd, Value};
use tokio::sync::mpsc;
use tokio::task::JoinSet;

use super::batched::{AckJob, CancelJob, ScheduleJob};
use super::keys::Keys;
use super::link::{Ctx, Io};
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
    schedule: Vec<Lane<ScheduleJob>>,
    cancel: Vec<Lane<CancelJob>>,
    ack: Vec<Lane<AckJob>>,
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
    pub(super) fn add_schedules(&mut self, ctx: &Ctx, calls: Vec<Call<ScheduleJob>>) {
        route(&mut self.schedule, ctx, calls);
    }

    pub(super) fn add_cancel(&mut self, ctx: &Ctx, call: Call<CancelJob>) {
        route(&mut self.cancel, ctx, [call]);
    }

    pub(super) fn add_acks(&mut self, ctx: &Ctx, calls: Vec<Call<AckJob>>) {
        route(&mut self.ack, ctx, calls);
    }

    pub(super) fn done(&mut self, lane: LaneId) {
        let in_flight = match lane.kind {
            Kind::Schedule => &mut self.schedule[lane.part].in_flight,
            Kind::Cancel => &mut self.cancel[lane.part].in_flight,
            Kind::Ack => &mut self.ack[lane.part].in_flight,
        };
        *in_flight = in_flight.saturating_sub(1);
    }

    pub(super) fn launch(
        &mut self,
        io: &Io,
        done: &mpsc::UnboundedSender<LaneId>,
        tasks: &mut JoinSet<()>,
    ) {
        for (part, lane) in self.schedule.iter_mut().enumerate() {
            lane.launch(
                LaneId {
                    kind: Kind::Schedule,
                    part,
                },
                io,
                done,
                tasks,
            );
        }
        for (part, lane) in self.cancel.iter_mut().enumerate() {
            lane.launch(
                LaneId {
                    kind: Kind::Cancel,
                    part,
                },
                io,
                done,
                tasks,
            );
        }
        for (part, lane) in self.ack.iter_mut().enumerate() {
            lane.launch(
                LaneId {
                    kind: Kind::Ack,
                    part,
                },
                io,
                done,
                tasks,
            );
        }
    }
}

fn route<J: Batched>(lanes: &mut [Lane<J>], ctx: &Ctx, calls: impl IntoIterator<Item = Call<J>>) {
    for call in calls {
        let part = ctx.parts().of(call.job.id());
        lanes[part].waiting.push_back(call);
    }
}

struct Lane<J: Batched> {
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
    fn launch(
        &mut self,
        id: LaneId,
        io: &Io,
        done: &mpsc::UnboundedSender<LaneId>,
        tasks: &mut JoinSet<()>,
    ) {
        while self.in_flight < IN_FLIGHT {
            let mut calls = Vec::new();
            let mut bytes = 0;
            while let Some(call) = self.waiting.pop_front() {
                // A call whose caller has gone was never sent: skip it.
                if call.reply.is_closed() {
                    continue;
                }
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
            let (io, done) = (io.clone(), done.clone());
            tasks.spawn(async move {
                run_batch(&io, id.part, calls).await;
                let _ = done.send(id);
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

async fn run_batch<J: Batched>(io: &Io, part: usize, calls: Vec<Call<J>>) {
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
