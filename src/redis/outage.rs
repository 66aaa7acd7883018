//! A partition whose shard is down: a consumer's claim loop takes it out
//! of its rounds and polls once it has failed for the retry window, and a
//! background probe polls its head until the shard answers (see
//! `claimer.rs`). One dead shard so holds the other partitions up once, for
//! the retry window and one attempt more: a call gives up at its first
//! failure past the window (see `QueueBuilder::retry`).

use alloc::collections::VecDeque;
use alloc::vec::Vec;
use core::time::Duration;

use tokio::task::JoinSet;

use super::claimer::{head, Fetch};
use super::knowledge::Knowledge;
use super::link::{jitter, Io};
use super::QueueError;
use crate::event::event;

/// Each partition's outage, for a round; empty (no allocation) while
/// every shard answers.
pub(super) fn downs(ks: &[Knowledge]) -> Vec<Option<QueueError>> {
    if ks.iter().all(|k| k.down.is_none()) {
        return Vec::new();
    }
    ks.iter().map(|k| k.down.clone()).collect()
}

/// The error to answer a fetch with when every partition is down.
pub(super) fn all_down(ks: &[Knowledge]) -> Option<QueueError> {
    if ks.iter().all(|k| k.down.is_some()) {
        ks.iter().find_map(|k| k.down.clone())
    } else {
        None
    }
}

/// Settles a round's failed partitions. A shard unreachable for the retry
/// window (`Unavailable`) takes its partition out of the rounds, and a
/// probe polls it in the background: the other partitions carry on, and
/// waiting fetches fail only once every partition is down. Any other
/// error fails the waiting fetches, and the loop forgets what it knew.
pub(super) fn failed(
    io: &Io,
    ks: &mut [Knowledge],
    probes: &mut JoinSet<(usize, Option<i64>)>,
    waiting: &mut VecDeque<Fetch>,
    failures: Vec<(usize, QueueError)>,
) {
    for (part, err) in failures {
        if !matches!(err, QueueError::Unavailable(_)) {
            for fetch in waiting.drain(..) {
                let _ = fetch.reply.send(Err(err.clone()));
            }
            for k in ks.iter_mut() {
                k.known = false;
                k.backlog = false;
            }
            continue;
        }
        let k = &mut ks[part];
        k.known = false;
        k.backlog = false;
        if k.down.is_none() {
            event!(
                warn,
                "a partition's shard is unreachable: its jobs wait until it answers",
                queue = io.ctx.identity,
                partition = part
            );
            probes.spawn(probe(io.clone(), part));
        }
        k.down = Some(err);
    }
    if let Some(err) = all_down(ks) {
        for fetch in waiting.drain(..) {
            let _ = fetch.reply.send(Err(err.clone()));
        }
    }
}

/// Polls partition `part`'s head until its shard answers (each poll
/// retries for the retry window; between them, a second or so).
async fn probe(io: Io, part: usize) -> (usize, Option<i64>) {
    loop {
        if let Ok(next) = head(&io, part).await {
            return (part, next);
        }
        tokio::time::sleep(jitter(Duration::from_secs(1))).await;
    }
}
