//! Jobs that fell due while every process was down: the misfire policy
//! decides, once, and the journal keeps what it decided.
//!
//! The job is scheduled on a `ManualClock` that never moves, so it cannot
//! run before its timer is dropped however slow the machine is. Before,
//! on the system clock, a 20 or 30 ms job could run in the first session
//! on a loaded machine, and the test then found an empty journal.

use alloc::sync::Arc;
use core::time::Duration;
use std::path::Path;
use std::time::SystemTime;

use tickwheel::persist::{DurableTimer, MisfirePolicy, OnMissed, Reschedule, SyncPolicy};

use crate::journals::open_frozen;
use crate::scratch::Scratch;

/// Journals job 7, due `delay_ms` from now, and closes the journal without
/// running it, then waits in real time until the job is `late_ms` overdue.
fn leave_missed(path: &Path, delay_ms: u64, late_ms: u64) {
    let (delay, late) = (
        Duration::from_millis(delay_ms),
        Duration::from_millis(late_ms),
    );
    let now = SystemTime::now();
    let (timer, _) = open_frozen(path, now);
    timer.schedule(delay, 7).unwrap();
    drop(timer);
    let due = now + delay;
    while SystemTime::now() < due + late {
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn open(path: &Path, policy: &MisfirePolicy<u64>) -> (DurableTimer<u64>, Vec<u64>) {
    let (timer, recovery) = DurableTimer::open(path, SyncPolicy::Always, policy, |_| {}).unwrap();
    let restored = recovery.outcomes.iter().map(|&(id, _)| id).collect();
    (timer, restored)
}

/// Jobs that fell due while the process was down follow the misfire
/// policy; dead letters come back and are written off.
#[test]
fn overdue_jobs_follow_the_misfire_policy() {
    let dir = Scratch::new("overdue");
    let path = dir.path("j");
    leave_missed(&path, 20, 40);
    let policy = MisfirePolicy::default()
        .threshold(Duration::from_millis(10))
        .on_missed(OnMissed::DeadLetter);
    let (timer, recovery) =
        DurableTimer::<u64>::open(&path, SyncPolicy::Always, &policy, |_| {}).unwrap();
    assert_eq!(recovery.dead_letters.len(), 1);
    assert_eq!(recovery.dead_letters[0].value, 7);
    assert_eq!(timer.pending(), 0);
    drop(timer);
    let (_, restored) = open(&path, &MisfirePolicy::default());
    assert!(restored.is_empty(), "a dead letter came back");
}

/// A missed job the misfire policy moves (`Reschedule`, `Spread`) is
/// journaled at its new time. Before, the journal kept the old one, so
/// every open took the job for missed again and moved it again from
/// "now": restarted more often than that delay, it never ran.
#[test]
fn a_missed_job_the_policy_moves_keeps_its_new_time_across_restarts() {
    let dir = Scratch::new("moved-kept");
    let path = dir.path("j");
    leave_missed(&path, 30, 90);
    let hour = Duration::from_secs(3600);
    let later: Reschedule<u64> = Arc::new(move |_job, now| now + hour);
    let policy = MisfirePolicy::default()
        .threshold(Duration::from_millis(50))
        .on_missed(OnMissed::Reschedule(later));
    let moved_at = SystemTime::now();
    let (timer, restored) = open(&path, &policy);
    assert_eq!(restored.len(), 1, "the missed job was not restored");
    let due = timer.journaled(None, 10)[0].due;
    assert!(due >= moved_at + hour - Duration::from_secs(1), "{due:?}");
    drop(timer);
    // Restarted at once: the job is not missed any more, and keeps its time.
    let (timer, _) = open(&path, &policy);
    assert_eq!(timer.journaled(None, 10)[0].due, due);
    assert_eq!(timer.pending(), 1);
}
