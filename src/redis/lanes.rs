//! Lanes: calls of the three busy kinds (schedule, cancel, ack) that many
//! callers share one script call for.
//!
//! Each kind waits in a lane on the I/O thread. A lane sends at most
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
    /// The script call for these jobs, in order.
    fn command(jobs: &[Self], ctx: &Ctx) -> Cmd;
    /// One answer per job, in order, from the script's reply; counts them.
    fn answers(reply: Value, jobs: &[Self], ctx: &Ctx) -> Result<Vec<Self::Answer>, QueueError>;
}

#[derive(Clone, Copy, Debug)]
pub(super) enum LaneId {
    Schedule,
    Cancel,
    Ack,
}

#[derive(Default)]
pub(super) struct Lanes {
    pub(super) schedule: Lane<ScheduleJob>,
    pub(super) cancel: Lane<CancelJob>,
    pub(super) ack: Lane<AckJob>,
}

impl Lanes {
    pub(super) fn done(&mut self, lane: LaneId) {
        let in_flight = match lane {
            LaneId::Schedule => &mut self.schedule.in_flight,
            LaneId::Cancel => &mut self.cancel.in_flight,
            LaneId::Ack => &mut self.ack.in_flight,
        };
        *in_flight = in_flight.saturating_sub(1);
    }

    pub(super) fn launch(
        &mut self,
        io: &Io,
        done: &mpsc::UnboundedSender<LaneId>,
        tasks: &mut JoinSet<()>,
    ) {
        self.schedule.launch(LaneId::Schedule, io, done, tasks);
        self.cancel.launch(LaneId::Cancel, io, done, tasks);
        self.ack.launch(LaneId::Ack, io, done, tasks);
    }
}

pub(super) struct Lane<J: Batched> {
    pub(super) waiting: VecDeque<Call<J>>,
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
                run_batch(&io, calls).await;
                let _ = done.send(id);
            });
        }
    }
}

async fn run_batch<J: Batched>(io: &Io, calls: Vec<Call<J>>) {
    let (jobs, replies): (Vec<J>, Vec<Reply<J::Answer>>) =
        calls.into_iter().map(|c| (c.job, c.reply)).unzip();
    let cmd = J::command(&jobs, &io.ctx);
    let reply = if J::REPLICATED {
        io.script_replicated(J::lua(), &cmd).await
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
