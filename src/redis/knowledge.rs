//! What a claim loop knows of the queue between claims: a lower bound of
//! the server's clock, the earliest due time, whether it can be trusted,
//! and when to poll.

use core::time::Duration;
use std::time::Instant;

use super::link::{jitter, Hint};
use super::QueueError;

/// A lower bound of the server's clock: at `local`, it read at least
/// `server` microseconds.
#[derive(Clone, Copy)]
pub(super) struct Anchor {
    pub(super) local: Instant,
    pub(super) server: i64,
}

/// How far the server's clock may drift from ours while we sleep on an
/// old anchor: woken this much early, a claim finds nothing and re-anchors.
const DRIFT_PPM: u64 = 100;

impl Anchor {
    /// The server's clock now, at least.
    pub(super) fn now(&self) -> i64 {
        let elapsed = i64::try_from(self.local.elapsed().as_micros()).unwrap_or(i64::MAX);
        self.server.saturating_add(elapsed)
    }

    /// The first local instant at which the server's clock has reached `at`
    /// (less the drift allowance).
    pub(super) fn instant_of(&self, at: i64) -> Instant {
        let ahead = u64::try_from(at.saturating_sub(self.server)).unwrap_or(0);
        let drift = (ahead.saturating_mul(DRIFT_PPM) / 1_000_000).min(ahead);
        let wait = Duration::from_micros(ahead - drift);
        self.local.checked_add(wait).unwrap_or_else(far_future)
    }
}

/// The gap before the next reconciliation poll: the poll interval plus up
/// to a quarter more, at random, so consumers do not poll in step and an
/// idle one sends at most one command per interval.
pub(super) fn poll_gap(poll: Duration) -> Duration {
    poll + jitter(poll / 8) // jitter: [0.5, 1.5) of its argument
}

pub(super) fn far_future() -> Instant {
    Instant::now() + Duration::from_secs(86_400 * 365)
}

/// The loop's knowledge of the queue.
pub(super) struct Knowledge {
    pub(super) anchor: Option<Anchor>,
    /// The earliest due time known (server microseconds); `None`: nothing.
    pub(super) next: Option<i64>,
    /// Whether `next` can be trusted without asking: false at the start
    /// and after hints may have been missed.
    pub(super) known: bool,
    /// The last claim filled its batch: more was due then.
    pub(super) backlog: bool,
    /// How late past `next` a claim may come (the wake-up slack, µs).
    pub(super) slack: i64,
    /// When to poll the head, in case hints were lost: pushed back by
    /// every claim and poll of this partition (of this one only, so that
    /// claims of busy partitions never put off a quiet one's poll).
    pub(super) poll_at: Instant,
    /// Its shard did not answer for the retry window (the error): out of
    /// the rounds and polls until a background probe gets an answer.
    pub(super) down: Option<QueueError>,
    /// Claims given up on while it was down: once its shard answers, the
    /// jobs any of them leased are handed back (`claimer.rs`).
    pub(super) abandoned: alloc::vec::Vec<super::keys::Token>,
    /// A call of this process made a job due by then (`Hint::Local`): a
    /// fetch that does not wait claims, though the server's clock as
    /// known here, a lower bound, may not show it due yet.
    pub(super) due_by: Option<Instant>,
}

impl Knowledge {
    /// Nothing known yet: the first fetch claims.
    pub(super) fn unknown(slack: i64) -> Knowledge {
        Knowledge {
            anchor: None,
            next: None,
            known: false,
            backlog: false,
            slack,
            poll_at: Instant::now(),
            down: None,
            abandoned: alloc::vec::Vec::new(),
            due_by: None,
        }
    }

    /// Whether a fetch should claim from this partition now: nothing is
    /// known of it, its jobs' window has closed, (`woke`: the sleep
    /// fired) its wake-up time has come, or (`hurried`: a fetch will not
    /// wait) this process made a job due.
    pub(super) fn claimable(&self, woke: bool, hurried: bool, now: Instant) -> bool {
        if self.down.is_some() {
            return false;
        }
        !self.known
            || self.due_now()
            || (woke && self.wake_at().is_some_and(|at| at <= now))
            || (hurried && self.due_by.is_some_and(|by| by <= now))
    }

    /// Whether a fetch that arrives now should claim: jobs wait for their
    /// window to close (`next + slack`) so that a claim takes together
    /// the jobs due close together, as the sleep does; a backlog goes at
    /// once.
    pub(super) fn due_now(&self) -> bool {
        match (self.next, self.anchor) {
            _ if self.backlog => true,
            (Some(next), Some(anchor)) => next.saturating_add(self.slack) <= anchor.now(),
            (Some(_), None) => true,
            (None, _) => false,
        }
    }

    pub(super) fn wake_at(&self) -> Option<Instant> {
        let next = self.next.filter(|_| self.down.is_none())?;
        Some(match self.anchor {
            Some(anchor) => anchor.instant_of(next),
            None => Instant::now(),
        })
    }

    /// Whether a poll of the head is due: never while down (the probe
    /// polls).
    pub(super) fn poll_due(&self, now: Instant) -> bool {
        self.down.is_none() && now >= self.poll_at
    }

    pub(super) fn learn(&mut self, next: Option<i64>) {
        self.next = next;
        self.known = true;
        self.due_by = None;
    }

    pub(super) fn hint(&mut self, at: i64) {
        if self.next.is_none_or(|next| at < next) {
            self.next = Some(at);
        }
    }
}

/// What a hint tells the loop (`None`: some were missed); whether it
/// counts as a hint received (a local one does not).
pub(super) fn heard(ks: &mut [Knowledge], hint: Option<Hint>) -> bool {
    match hint {
        Some(Hint::At { part, at }) => {
            if let Some(k) = ks.get_mut(part) {
                k.hint(at);
            }
            true
        }
        Some(Hint::Local { part, at, due_by }) => {
            if let Some(k) = ks.get_mut(part) {
                k.hint(at);
                k.due_by = k.due_by.or(due_by);
            }
            false
        }
        Some(Hint::Resync) | None => {
            ks.iter_mut().for_each(|k| k.known = false);
            true
        }
    }
}
