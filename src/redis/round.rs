//! A claim round: the script calls a consumer's claim loop makes at one
//! wake-up, over the partitions whose jobs are due (see `claimer.rs`).

use alloc::string::ToString;
use alloc::vec::Vec;
use core::time::Duration;
use std::time::Instant;

use super::batched::{acked, AckJob, ACK};
use super::counters::bump;
use super::keys::Token;
use super::knowledge::{Anchor, Knowledge};
use super::lanes::{Batched, MAX_CALLS};
use super::link::Io;
use super::lua::lua;
use super::ops::{array, delivery, int};
use super::options::micros;
use super::outcome::{Acked, Delivery};
use super::QueueError;
use crate::event::event;

lua!(CLAIM, "claim.lua", records);

/// What a claim saw.
pub(super) struct Claimed {
    /// The server's clock in the script, and when its reply arrived here.
    pub(super) anchor: Anchor,
    pub(super) next: Option<i64>,
    /// The answers to the acks it carried, in order.
    pub(super) acked: Vec<Acked>,
    pub(super) jobs: Vec<Delivery>,
}

/// Which partitions a claim takes from, and how many jobs from each:
/// `want` spread evenly over the `claimable` ones, the oldest due first
/// (unknown ones count as oldest), at most one partition per job wanted.
pub(super) fn spread(
    ks: &[Knowledge],
    mut claimable: Vec<usize>,
    want: usize,
) -> Vec<(usize, usize)> {
    claimable.sort_by_key(|&p| if ks[p].known { ks[p].next } else { None });
    claimable.truncate(want.max(1));
    let (each, extra) = (want / claimable.len(), want % claimable.len());
    claimable
        .into_iter()
        .enumerate()
        .map(|(i, p)| (p, (each + usize::from(i < extra)).max(1)))
        .collect()
}

/// What one partition's call of a round answered.
enum Answer {
    Claimed(Claimed),
    Acked(Vec<Acked>),
}

/// What a round answered: the claims by partition, each ack's answer in
/// `acks`' order, and the partitions whose call failed (their acks carry
/// the error; the other partitions' claims stand).
pub(super) struct Round {
    pub(super) claims: Vec<(usize, Claimed)>,
    pub(super) acked: Vec<Result<Acked, QueueError>>,
    pub(super) failed: Vec<(usize, QueueError)>,
    /// Claims given up on while their shard did not answer, by partition:
    /// one may still run once the shard does (`claimer.rs`).
    pub(super) abandoned: Vec<(usize, Token)>,
}

/// One round: claims from each partition of `plan` (partition, most jobs),
/// each carrying the acks of its partition; the acks of other partitions
/// go alone, at the same time. Acks of a partition in `down` (its shard
/// unreachable past the retry window) are not sent: they fail at once
/// with its error, so that one dead shard does not hold up the others.
pub(super) async fn claim_round(
    io: &Io,
    plan: &[(usize, usize)],
    acks: Vec<AckJob>,
    down: &[Option<QueueError>],
) -> Round {
    let n = acks.len();
    let parts = io.ctx.parts();
    let mut by_part: Vec<(Vec<usize>, Vec<AckJob>)> =
        (0..parts.len()).map(|_| (Vec::new(), Vec::new())).collect();
    for (i, ack) in acks.into_iter().enumerate() {
        let (at, jobs) = &mut by_part[parts.of(ack.id())];
        at.push(i);
        jobs.push(ack);
    }
    let mut answers: Vec<(usize, Vec<usize>, Called)> = Vec::new();
    // A script call carries at most `MAX_CALLS` acks: Lua unpacks at most
    // about 8,000 values into a command, and each ack adds two to a write
    // (an `ack_and_fetch` of several batches once failed with "too many
    // results to unpack", acking none). The rest go first, alone, so that
    // a claim of the same round still finds them acked.
    for (part, (at, jobs)) in by_part.iter_mut().enumerate() {
        if down.get(part).and_then(Option::as_ref).is_some() {
            continue;
        }
        while jobs.len() > MAX_CALLS {
            let chunk: Vec<AckJob> = jobs.drain(..MAX_CALLS).collect();
            let chunk_at: Vec<usize> = at.drain(..MAX_CALLS).collect();
            let answer = call(io, part, None, &chunk).await;
            let failed = answer.0.as_ref().err().cloned();
            answers.push((part, chunk_at, answer));
            if let Some(err) = failed {
                // Its shard failed for the retry window: the rest fail
                // alike, unsent.
                jobs.clear();
                answers.push((part, core::mem::take(at), (Err(err), None)));
            }
        }
    }
    let mut calls: Vec<PartCall> = Vec::new();
    for &(part, max) in plan {
        let (at, jobs) = &mut by_part[part];
        calls.push((part, Some(max), core::mem::take(at), core::mem::take(jobs)));
    }
    for (part, (at, jobs)) in by_part.iter_mut().enumerate() {
        if jobs.is_empty() {
            continue;
        }
        let at = core::mem::take(at);
        match down.get(part).and_then(Option::as_ref) {
            Some(err) => answers.push((part, at, (Err(err.clone()), None))),
            None => calls.push((part, None, at, core::mem::take(jobs))),
        }
    }
    if calls.len() == 1 {
        // One partition (the usual case): no task of its own.
        let (part, max, at, jobs) = calls.remove(0);
        answers.push((part, at, call(io, part, max, &jobs).await));
    } else if !calls.is_empty() {
        let mut set = tokio::task::JoinSet::new();
        let mut part_of = Vec::new();
        for (part, max, at, jobs) in calls {
            let io = io.clone();
            let task = set.spawn(async move { call(&io, part, max, &jobs).await });
            part_of.push((task.id(), part, at));
        }
        while let Some(done) = set.join_next_with_id().await {
            let (id, answer) = match done {
                Ok((id, answer)) => (id, answer),
                // A call that panicked: its partition failed.
                Err(e) => (e.id(), (Err(QueueError::Server(e.to_string())), None)),
            };
            if let Some(pos) = part_of.iter().position(|(task, _, _)| *task == id) {
                let (_, part, at) = part_of.swap_remove(pos);
                answers.push((part, at, answer));
            }
        }
    }
    let mut round = Round {
        claims: Vec::new(),
        acked: Vec::new(),
        failed: Vec::new(),
        abandoned: Vec::new(),
    };
    let mut acked: Vec<Option<Result<Acked, QueueError>>> = alloc::vec![None; n];
    for (part, at, (answer, token)) in answers {
        if let (Err(QueueError::Unavailable(_)), Some(token)) = (&answer, token) {
            round.abandoned.push((part, token));
        }
        match answer {
            Ok(answer) => {
                let answers = match answer {
                    Answer::Claimed(mut claimed) => {
                        let answers = core::mem::take(&mut claimed.acked);
                        round.claims.push((part, claimed));
                        answers
                    }
                    Answer::Acked(answers) => answers,
                };
                for (&i, answer) in at.iter().zip(answers) {
                    acked[i] = Some(Ok(answer));
                }
            }
            Err(err) => {
                for &i in &at {
                    acked[i] = Some(Err(err.clone()));
                }
                round.failed.push((part, err));
            }
        }
    }
    round.acked = acked
        .into_iter()
        .map(|answer| {
            answer.unwrap_or_else(|| {
                Err(QueueError::Server(alloc::string::String::from(
                    "an ack went unanswered",
                )))
            })
        })
        .collect();
    round
}

/// A partition's call in a round: the partition, the most jobs to claim
/// (`None`: acks only), and its acks with their places in the round's.
type PartCall = (usize, Option<usize>, Vec<usize>, Vec<AckJob>);

/// What one partition's call answered, and a claim's token.
type Called = (Result<Answer, QueueError>, Option<Token>);

/// A claim of up to `max` jobs from partition `part` carrying `acks`, or
/// (`max` none) the acks alone.
async fn call(io: &Io, part: usize, max: Option<usize>, acks: &[AckJob]) -> Called {
    match max {
        Some(max) => {
            let token = Token::new();
            let claimed = claim(io, part, max, acks, token).await;
            (claimed.map(Answer::Claimed), Some(token))
        }
        None => (ack(io, part, acks).await.map(Answer::Acked), None),
    }
}

/// Runs the ack script alone: for acks that cannot wait for a claim.
async fn ack(io: &Io, part: usize, acks: &[AckJob]) -> Result<Vec<Acked>, QueueError> {
    let keys = io.ctx.parts().get(part);
    let reply = io
        .script(&ACK, &AckJob::command(acks, &io.ctx, keys))
        .await?;
    Ok(acked(&array(reply)?, acks, &io.ctx))
}

/// Runs the claim script on partition `part` for up to `max` jobs,
/// acking `acks` (of that partition) first.
async fn claim(
    io: &Io,
    part: usize,
    max: usize,
    acks: &[AckJob],
    token: Token,
) -> Result<Claimed, QueueError> {
    let ctx = &io.ctx;
    let o = &ctx.options;
    let part_keys = ctx.parts().get(part);
    let mut keys: Vec<alloc::string::String> = part_keys.fixed.to_vec();
    keys.push(part_keys.of_token("claim", &token));
    // The replay record lives as long as a retry can come (a lease can be
    // shorter), and a lease at least (`release.rs` reads it when a shard
    // comes back).
    let ttl_ms = u64::try_from(o.lease.as_millis())
        .unwrap_or(u64::MAX)
        .max(o.answer_ttl_ms());
    bump(&ctx.counters.claims, 1);
    let reply = io
        .retry(|conn, again| {
            let mut cmd = CLAIM.command(&keys);
            cmd.arg(max).arg(micros(o.lease)).arg(o.max_attempts);
            cmd.arg(micros(o.threshold))
                .arg(o.on_missed)
                .arg(micros(o.window));
            cmd.arg(token.bytes()).arg(u8::from(again)).arg(ttl_ms);
            for ack in acks {
                ack.args(&mut cmd);
            }
            async move { CLAIM.run(conn, &cmd).await }
        })
        .await?;
    let received = Instant::now();
    let mut items = array(reply)?.into_iter();
    let mut head = [0i64; 5];
    for slot in &mut head {
        *slot = items.next().as_ref().and_then(int).ok_or_else(|| {
            QueueError::Server(alloc::string::String::from("unexpected claim reply"))
        })?;
    }
    let [now, next, dead, discarded, spread] = head;
    let answered = items.next().as_ref().and_then(int).unwrap_or(0);
    let answers: Vec<redis::Value> = items.by_ref().take(answered.max(0) as usize).collect();
    if answers.len() != acks.len() {
        return Err(QueueError::Server(alloc::string::String::from(
            "a claim answered the wrong number of acks",
        )));
    }
    let acked = acked(&answers, acks, ctx);
    let c = &ctx.counters;
    bump(&c.dead_lettered, dead as u64);
    bump(&c.discarded, discarded as u64);
    if discarded > 0 {
        // Ended: a retention later, the trimmer (which may sleep, nothing
        // ended) forgets them.
        ctx.job_ended();
    }
    bump(&c.spread, spread as u64);
    if dead > 0 {
        event!(
            warn,
            "jobs dead-lettered (out of attempts, or missed under the dead-letter policy)",
            queue = ctx.identity,
            count = dead
        );
    }
    if discarded > 0 {
        event!(
            warn,
            "missed jobs discarded by the misfire policy",
            queue = ctx.identity,
            count = discarded
        );
    }
    if spread > 0 {
        event!(
            info,
            "missed jobs spread by the misfire policy",
            queue = ctx.identity,
            count = spread
        );
    }
    let mut jobs = Vec::new();
    while let Some(job) = delivery(&ctx.identity, &mut items) {
        let late = now.saturating_sub(micros_of(job.due));
        c.lateness.record(Duration::from_micros(late.max(0) as u64));
        bump(&c.delivered, 1);
        if job.attempt > 1 {
            bump(&c.redelivered, 1);
        }
        c.held.take(&job.id, job.fence, o.lease);
        jobs.push(job);
    }
    if jobs.is_empty() {
        c.held.refresh();
    }
    Ok(Claimed {
        anchor: Anchor {
            local: received,
            server: now,
        },
        next: (next >= 0).then_some(next),
        acked,
        jobs,
    })
}

fn micros_of(t: std::time::SystemTime) -> i64 {
    t.duration_since(std::time::SystemTime::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX))
}
