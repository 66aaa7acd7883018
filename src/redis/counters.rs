//! The counters behind [`Metrics`](super::Metrics): atomics bumped by the
//! I/O thread and the handles, read as one snapshot.

use core::sync::atomic::{AtomicU64, Ordering};

use crate::timer::stats::LatenessCounter;

#[derive(Debug, Default)]
pub(super) struct Counters {
    pub(super) scheduled: AtomicU64,
    pub(super) duplicates: AtomicU64,
    pub(super) cancelled: AtomicU64,
    pub(super) rescheduled: AtomicU64,
    pub(super) delivered: AtomicU64,
    pub(super) redelivered: AtomicU64,
    pub(super) acked: AtomicU64,
    pub(super) retried: AtomicU64,
    pub(super) dead_lettered: AtomicU64,
    pub(super) discarded: AtomicU64,
    pub(super) spread: AtomicU64,
    pub(super) lease_lost: AtomicU64,
    pub(super) released: AtomicU64,
    pub(super) trimmed: AtomicU64,
    pub(super) round_trips: AtomicU64,
    pub(super) failures: AtomicU64,
    pub(super) dials: AtomicU64,
    pub(super) polls: AtomicU64,
    pub(super) claims: AtomicU64,
    pub(super) hints: AtomicU64,
    pub(super) lateness: LatenessCounter,
}

pub(super) fn bump(counter: &AtomicU64, by: u64) {
    counter.fetch_add(by, Ordering::Relaxed);
}
