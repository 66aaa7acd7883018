//! A consumer's claim loop: one task on the queue's I/O thread takes due
//! jobs for every `fetch` waiting on the consumer, and sleeps on a
//! tickwheel [`Timer`] until the next job is due.
//!
//! # Waking exactly, without polling storms
//!
//! Every claim's reply carries the server's time and the earliest time
//! anything is next due (a job's due time, or a lease running out). The
//! loop sleeps until that moment on a `Timer`'s sleep, translated to this
//! process's monotonic clock by a lower bound: the server's clock read in
//! the script is at most the reply's arrival, so waking `next - now` after
//! the arrival is never early by the server's clock. Three things shorten
//! the sleep: a hint (a producer published that it scheduled a job earlier
//! than any other), a new fetch, and a claim that filled its batch (more
//! may be due). Hints can be lost (a dropped connection, a restarted
//! server), so while a fetch waits the loop also polls, every poll
//! interval plus up to a quarter (1 s by default), with one `ZRANGE`: a
//! lost hint costs at most that, never a stall. However many threads fetch, and whatever
//! their timeouts, an idle consumer sends one command per poll interval.
//!
//! # Partitions
//!
//! A queue of several partitions (see `keys.rs`) is several queues to the
//! loop: it knows each one's next due time and clock, sleeps until the
//! earliest, and at a wake-up claims from every partition whose time has
//! come (or of which it knows nothing), all at once, the batch spread
//! evenly over them, oldest first, so that one busy partition cannot
//! starve the others. Acks ride with the claim of their job's partition,
//! or go alone to partitions not claimed from. An idle consumer polls
//! each partition once per poll interval: `partitions` commands. A
//! partition whose shard is down leaves the rounds until a probe finds it
//! back (`outage.rs`).
//!
//! # Nothing leased to nobody
//!
//! A claim carries a request token: a retry after a lost reply gets the
//! same jobs back, still held, without another attempt spent. Jobs that
//! arrive for a fetch that has gone (its future dropped, its timeout
//! passed) go to the next waiting fetch, or are handed back at once
//! (`release.lua`), not counted as an attempt; those that reached a future
//! dropped before it read them are handed back (their lease may have run
//! out meanwhile: the release checks the fence). A claim given up on
//! while its shard stalled may still run when the shard resumes: once a
//! probe finds the shard back, what it leased is handed back too, read
//! from its replay record (`release.rs`).

use alloc::collections::VecDeque;
use alloc::vec::Vec;
use core::time::Duration;
use std::time::Instant;

use tokio::sync::{broadcast, mpsc};
use tokio::task::JoinSet;

use super::batched::AckJob;
use super::counters::bump;
use super::knowledge::{far_future, heard, poll_gap, Knowledge};
use super::link::{Hint, Io};
use super::ops::{array, int};
use super::outage::{all_down, downs, failed};
use super::outcome::{Acked, Delivery};
use super::pending::Reply;
use super::release::{release, release_abandoned};
use super::round::{claim_round, spread};
use super::QueueError;
use crate::event::event;
use crate::timer::{Inline, Task, Timer};

/// A waiting `fetch`, and the acks it carries (`ack_and_fetch`).
pub(super) struct Fetch {
    pub(super) max: usize,
    /// `None`: no deadline (a timeout too long to represent).
    pub(super) deadline: Option<Instant>,
    /// Acks to send with the next claim, or alone before the loop sleeps.
    pub(super) acks: Vec<AckJob>,
    /// How many: `acks` is emptied when they are sent.
    pub(super) ack_count: usize,
    /// Their answers, once sent.
    pub(super) acked: Option<Vec<Acked>>,
    /// A claim round ran while this fetch waited.
    pub(super) claimed: bool,
    pub(super) reply: Reply<Fetched>,
    /// Set by the loop for a fetch that arrives while every shard is down:
    /// when it answers `Unavailable` if they still are (a retry window
    /// later), whatever its own timeout.
    pub(super) outage_ends: Option<Instant>,
}

/// What a fetch answers: its acks' answers, and the jobs it got.
pub(super) type Fetched = (Vec<Acked>, Vec<Delivery>);

impl Fetch {
    fn unsent(&self) -> bool {
        self.acked.is_none() && !self.acks.is_empty()
    }

    /// The first of its deadline and, while every shard is down, the end
    /// of its wait for one.
    fn gives_up(&self) -> Option<Instant> {
        match (self.deadline, self.outage_ends) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Answers the fetch with `jobs`; hands them back if it has gone.
    fn answer(self, jobs: Vec<Delivery>) -> Result<(), Vec<Delivery>> {
        let acked = self.acked.unwrap_or_default();
        match self.reply.send(Ok((acked, jobs))) {
            Ok(()) => Ok(()),
            Err(Ok((_, jobs))) => Err(jobs),
            Err(Err(_)) => Ok(()),
        }
    }
}

pub(super) enum ToClaimer {
    Fetch(Fetch),
    /// Jobs answered to a fetch whose future was dropped unread.
    Return(Vec<Delivery>),
    Close,
}

/// The loop. Ends on `Close`, or when every consumer handle is gone.
pub(super) async fn run(
    io: Io,
    mut rx: mpsc::UnboundedReceiver<ToClaimer>,
    mut hints: Option<broadcast::Receiver<Hint>>,
    timer: Timer<Task, Inline>,
) {
    let poll = io.ctx.options.poll;
    let mut waiting: VecDeque<Fetch> = VecDeque::new();
    let slack = i64::try_from(io.ctx.options.wake_slack.as_micros()).unwrap_or(i64::MAX);
    let mut ks: Vec<Knowledge> = (0..io.ctx.parts().len())
        .map(|_| Knowledge::unknown(slack))
        .collect();
    let mut sleep = timer.sleep_until(far_future());
    let mut sleep_at = far_future();
    // The sleep fired: something is due, by the timer's window.
    let mut woke = false;
    // How long acks may wait for a claim to carry them: a small part of
    // the lease, which they must beat.
    let ack_hold = (io.ctx.options.lease / 8).min(Duration::from_millis(20));
    // Acks of fetches that went before their acks were sent: sent anyway.
    let mut orphans: Vec<AckJob> = Vec::new();
    // Probes of partitions whose shard is down: each answers when the
    // shard does.
    let mut probes: JoinSet<(usize, Option<i64>)> = JoinSet::new();
    loop {
        waiting.retain_mut(|fetch| {
            if !fetch.reply.is_closed() {
                return true;
            }
            if fetch.acked.is_none() {
                orphans.append(&mut fetch.acks);
            }
            false
        });
        // A fetch claims if anything may be due (a fetch with no time left
        // to wait included); only then does its deadline count. Acks ride
        // along.
        let now = Instant::now();
        // A fetch with no time left to wait, that no claim has served yet,
        // claims what is due now: the slack window is for a sleeping
        // consumer, and this one will not sleep.
        let hurried = waiting
            .iter()
            .any(|f| f.max > 0 && !f.claimed && f.deadline.is_some_and(|d| d <= now));
        // Fetches that take nothing (`ack_and_fetch(done, 0, _)`) claim
        // nothing: a claim asks for at least one job, which nobody would
        // receive. Their acks go alone, below.
        let mut claimable: Vec<usize> = if waiting.iter().all(|f| f.max == 0) {
            Vec::new()
        } else {
            (0..ks.len())
                .filter(|&p| ks[p].claimable(woke || hurried, hurried, now))
                .collect()
        };
        if !claimable.is_empty() {
            // A round goes anyway: partitions due a poll join it, so that
            // busy partitions, always claimable, cannot keep a quiet one
            // from its poll (the claim reads its head as a poll would).
            let polls: Vec<usize> = (0..ks.len())
                .filter(|p| ks[*p].poll_due(now) && !claimable.contains(p))
                .collect();
            claimable.extend(polls);
        }
        if !claimable.is_empty() {
            woke = false;
            waiting.iter_mut().for_each(|f| f.claimed = true);
            let want = waiting
                .iter()
                .map(|f| f.max)
                .sum::<usize>()
                .min(io.ctx.options.batch);
            let plan = spread(&ks, claimable, want);
            let acks = take_acks(&mut waiting, &mut orphans);
            let round = claim_round(&io, &plan, acks, &downs(&ks)).await;
            let several = round.claims.len() > 1;
            let mut jobs = Vec::new();
            for (part, claimed) in round.claims {
                let k = &mut ks[part];
                k.backlog = claimed
                    .next
                    .is_some_and(|next| next <= claimed.anchor.server);
                k.anchor = Some(claimed.anchor);
                k.learn(claimed.next);
                k.poll_at = Instant::now() + poll_gap(poll);
                jobs.extend(claimed.jobs);
            }
            give_acks(&mut waiting, round.acked);
            for (part, token) in round.abandoned {
                ks[part].abandoned.push(token);
            }
            failed(&io, &mut ks, &mut probes, &mut waiting, round.failed);
            if several {
                // Oldest first across partitions (a claim's own order,
                // ties by priority, holds within each).
                jobs.sort_by_key(|job| job.due);
            }
            if jobs
                .iter()
                .any(|job| job.id.starts_with(super::scheduler::RUN_PREFIX))
            {
                // A job scheduler's run: its scheduler may be new to this
                // process, or changed; the task that makes runs looks now.
                io.ctx.schedules_wake.notify_one();
            }
            hand_out(&io, &mut waiting, jobs).await;
            continue;
        }
        if waiting.iter().any(|f| f.max > 0) && ks.iter().any(|k| k.poll_due(now)) {
            for (part, k) in ks.iter_mut().enumerate() {
                if !k.poll_due(now) {
                    continue;
                }
                bump(&io.ctx.counters.polls, 1);
                match head(&io, part).await {
                    Ok(next) => k.learn(next),
                    Err(_) => k.known = false,
                }
                k.poll_at = Instant::now() + poll_gap(poll);
            }
            continue;
        }
        // No claim now. Acks wait for the next claim if it comes soon, and
        // no fetch gives up first; otherwise they go alone, now.
        let wake = ks.iter().filter_map(Knowledge::wake_at).min();
        let soon = wake.is_some_and(|at| at <= now + ack_hold);
        let expiring = waiting
            .iter()
            .any(|f| f.deadline.is_some_and(|d| d <= now + ack_hold));
        if (waiting.iter().any(Fetch::unsent) && (!soon || expiring)) || !orphans.is_empty() {
            let acks = take_acks(&mut waiting, &mut orphans);
            let round = claim_round(&io, &[], acks, &downs(&ks)).await;
            give_acks(&mut waiting, round.acked);
            failed(&io, &mut ks, &mut probes, &mut waiting, round.failed);
            continue;
        }
        while let Some(pos) = waiting
            .iter()
            .position(|f| f.gives_up().is_some_and(|d| d <= now))
        {
            if let Some(fetch) = waiting.remove(pos) {
                // Nothing came; with every shard down, say why.
                match all_down(&ks) {
                    Some(err) => drop(fetch.reply.send(Err(err))),
                    None => drop(fetch.answer(Vec::new())),
                }
            }
        }
        // Sleep until something may be due, a fetch's deadline, a poll,
        // or news.
        let wake = if waiting.is_empty() { None } else { wake };
        let target = wake.unwrap_or_else(far_future);
        if target != sleep_at {
            sleep.reset(target);
            sleep_at = target;
        }
        let other = waiting
            .iter()
            .filter_map(Fetch::gives_up)
            .chain(
                ks.iter()
                    .filter(|k| k.down.is_none())
                    .map(|k| k.poll_at)
                    .min()
                    .filter(|_| !waiting.is_empty()),
            )
            .min()
            .unwrap_or_else(far_future);
        tokio::select! {
            message = rx.recv() => match message {
                Some(ToClaimer::Fetch(mut fetch)) => {
                    // Every shard is down: the loop knows it (a round
                    // failed for the retry window) and probes in the
                    // background. A fetch that waits for good would wait
                    // out the outage too; it waits one more window.
                    if all_down(&ks).is_some() {
                        fetch.outage_ends = Instant::now().checked_add(io.ctx.options.retry_for);
                    }
                    waiting.push_back(fetch);
                    // The hints already sent, before this fetch was made:
                    // a job this process made due is then known to be due
                    // (a fetch that does not wait once missed it).
                    while let Some(hint) = hints.as_mut().and_then(|rx| match rx.try_recv() {
                        Ok(hint) => Some(Some(hint)),
                        Err(broadcast::error::TryRecvError::Lagged(_)) => Some(None),
                        Err(_) => None,
                    }) {
                        if heard(&mut ks, hint) {
                            bump(&io.ctx.counters.hints, 1);
                        }
                    }
                }
                // Released, not handed on: their lease may have run out
                // and the job gone to another consumer meanwhile, and
                // `release.lua` checks the fence.
                Some(ToClaimer::Return(jobs)) => release(&io, &jobs).await,
                Some(ToClaimer::Close) | None => break,
            },
            () = &mut sleep, if wake.is_some() => {
                woke = true;
                sleep_at = far_future();
                sleep.reset(sleep_at);
            }
            () = tokio::time::sleep_until(other.into()) => {}
            Some(probed) = probes.join_next(), if !probes.is_empty() => {
                if let Ok((part, next)) = probed {
                    event!(
                        info,
                        "a partition's shard answers again",
                        queue = io.ctx.identity,
                        partition = part
                    );
                    // Its shard answers again: back in the rounds, and
                    // the fetches wait for their jobs again.
                    waiting.iter_mut().for_each(|f| f.outage_ends = None);
                    let k = &mut ks[part];
                    release_abandoned(&io, part, core::mem::take(&mut k.abandoned));
                    k.down = None;
                    k.learn(next);
                    k.poll_at = Instant::now() + poll_gap(poll);
                }
            }
            hint = recv_hint(&mut hints) => {
                if heard(&mut ks, hint) {
                    bump(&io.ctx.counters.hints, 1);
                }
            }
        }
    }
    // Fetches that raced the close get the same answer; acks they carry
    // that were not sent yet are sent (a fetch's error says they may or
    // may not have been).
    rx.close();
    let mut returned = Vec::new();
    while let Some(message) = rx.recv().await {
        match message {
            ToClaimer::Fetch(fetch) => waiting.push_back(fetch),
            ToClaimer::Return(mut jobs) => returned.append(&mut jobs),
            ToClaimer::Close => {}
        }
    }
    if !returned.is_empty() {
        release(&io, &returned).await;
    }
    let acks = take_acks(&mut waiting, &mut orphans);
    if !acks.is_empty() {
        let _ = claim_round(&io, &[], acks, &downs(&ks)).await;
    }
    for fetch in waiting {
        let _ = fetch.reply.send(Err(QueueError::Closed));
    }
}

async fn recv_hint(hints: &mut Option<broadcast::Receiver<Hint>>) -> Option<Hint> {
    match hints {
        Some(rx) => match rx.recv().await {
            Ok(hint) => Some(hint),
            // Missed some: treat as a resync.
            Err(broadcast::error::RecvError::Lagged(_)) => None,
            Err(broadcast::error::RecvError::Closed) => core::future::pending().await,
        },
        None => core::future::pending().await,
    }
}

/// The acks not yet sent, of every waiting fetch (in order) and of fetches
/// that went; each waiting fetch's are marked as sent.
fn take_acks(waiting: &mut VecDeque<Fetch>, orphans: &mut Vec<AckJob>) -> Vec<AckJob> {
    let mut acks = core::mem::take(orphans);
    let orphaned = acks.len();
    for fetch in waiting.iter_mut().filter(|f| f.acked.is_none()) {
        acks.append(&mut fetch.acks);
        fetch.acked = Some(Vec::new());
    }
    // The orphans' answers lead; `give_acks` skips them.
    acks.rotate_left(orphaned);
    acks
}

/// Hands the answers back to the fetches whose acks `take_acks` took, in
/// the same order (the orphans' answers, last, have no one to go to). A
/// fetch one of whose acks failed fails with that error: it cannot tell
/// which of its acks were made (a retried ack answers the same).
fn give_acks(waiting: &mut VecDeque<Fetch>, answers: Vec<Result<Acked, QueueError>>) {
    let mut answers = answers.into_iter();
    let mut i = 0;
    while i < waiting.len() {
        let fetch = &mut waiting[i];
        if let Some(acked) = fetch.acked.as_mut().filter(|a| a.is_empty()) {
            let mut failure = None;
            for answer in answers.by_ref().take(fetch.ack_count) {
                match answer {
                    Ok(answer) => acked.push(answer),
                    Err(err) => failure = Some(err),
                }
            }
            if let Some(err) = failure {
                if let Some(fetch) = waiting.remove(i) {
                    let _ = fetch.reply.send(Err(err));
                }
                continue;
            }
        }
        i += 1;
    }
}

/// Gives claimed jobs to the waiting fetches, oldest first, each up to its
/// `max`; jobs no fetch can take any more are handed back.
async fn hand_out(io: &Io, waiting: &mut VecDeque<Fetch>, jobs: Vec<Delivery>) {
    let mut jobs = jobs.into_iter().peekable();
    let mut i = 0;
    while jobs.peek().is_some() && i < waiting.len() {
        // One that has gone is left for the loop (which keeps its unsent
        // acks); one whose acks are not sent yet waits for the claim that
        // carries them, since its answer must hold theirs.
        if waiting[i].reply.is_closed() || waiting[i].unsent() {
            i += 1;
            continue;
        }
        let Some(fetch) = waiting.remove(i) else {
            break;
        };
        let mine: Vec<Delivery> = jobs.by_ref().take(fetch.max).collect();
        if let Err(mine) = fetch.answer(mine) {
            // It went between the check and the send: keep the jobs for
            // the next fetch.
            let rest: Vec<Delivery> = mine.into_iter().chain(jobs).collect();
            jobs = rest.into_iter().peekable();
        }
    }
    let orphans: Vec<Delivery> = jobs.collect();
    if !orphans.is_empty() {
        release(io, &orphans).await;
    }
}

/// The earliest score in partition `part`: the reconciliation poll, one
/// command.
pub(super) async fn head(io: &Io, part: usize) -> Result<Option<i64>, QueueError> {
    let mut cmd = redis::cmd("ZRANGE");
    cmd.arg(io.ctx.parts().get(part).due())
        .arg(0)
        .arg(0)
        .arg("WITHSCORES");
    let reply = io.query(&cmd).await?;
    // RESP2: [member, score]; RESP3: [[member, score]].
    let mut items = array(reply)?;
    if let Some(redis::Value::Array(pair)) = items.first() {
        items = pair.clone();
    }
    Ok(items.get(1).and_then(score))
}

/// A score as a whole number of microseconds: a double in RESP3, text in
/// RESP2.
pub(super) fn score(value: &redis::Value) -> Option<i64> {
    match value {
        redis::Value::Double(f) => Some(*f as i64),
        redis::Value::BulkString(b) => core::str::from_utf8(b)
            .ok()?
            .parse::<f64>()
            .ok()
            .map(|f| f as i64),
        other => int(other),
    }
}
