//! An audit's findings on `DurableTimer`, each a test that failed before
//! its fix: calls racing each other or a job's run, where the journal
//! and the answers must agree.

use alloc::sync::Arc;
use core::time::Duration;
use std::sync::Barrier;
use std::time::Instant;

use crate::journals::{open_slow, settle};
use crate::scratch::Scratch;

/// How long a handler takes to run.
const SLOW: Duration = Duration::from_millis(20);

/// A reset and a cancel of one job from two threads. The cancel held the
/// job while it wrote, but the reset moved the held job back into play
/// (to now), so it fired during the cancel's write: the cancel answered
/// `None` ("it was taken to run") while the journal said cancelled, and a
/// crash before its handler returned lost the job. Now the two take
/// turns: whenever a cancel answers `None` and the handler has not
/// returned, the journal still holds the job.
#[test]
fn a_reset_racing_a_cancel_never_leaves_a_running_job_cancelled_in_the_journal() {
    let dir = Scratch::new("cancel-reset");
    let (timer, started, done) = open_slow(&dir.path("j"), SLOW);
    let timer = Arc::new(timer);
    let began = Instant::now();
    let mut rounds = 0;
    while rounds < 300 && began.elapsed() < Duration::from_secs(8) {
        rounds += 1;
        let job = rounds;
        let handle = timer.schedule(Duration::from_secs(3600), job).unwrap();
        let go = Arc::new(Barrier::new(2));
        let resetter = {
            let (timer, go) = (Arc::clone(&timer), Arc::clone(&go));
            std::thread::spawn(move || {
                go.wait();
                timer.reset(handle, Duration::ZERO)
            })
        };
        go.wait();
        let cancelled = timer.cancel(handle);
        resetter.join().unwrap();
        if cancelled.is_some() {
            assert!(!started.lock().unwrap().contains(&job), "{job} ran");
        } else {
            let journaled = timer
                .journaled(None, 100)
                .iter()
                .any(|j| j.id == handle.id());
            let returned = done.lock().unwrap().contains(&job);
            assert!(
                journaled || returned,
                "job {job}: its cancel answered None, its handler has not returned, \
                 and the journal no longer holds it: a crash now would lose it"
            );
        }
        settle(&started, &done);
    }
}

/// Resets each job about when it falls due, so that the fire often lands
/// while the reset is being written. A reset that answers `false` (the job
/// was taken to run) must leave the journal as it was: the job at its own
/// due time until its handler returns. Before, the reset went into the
/// journal first and the fire won the race during the sync: `false`, yet
/// the journal had moved the job an hour on, and a crash before its
/// handler returned ran it again an hour late.
#[test]
fn a_reset_that_loses_to_the_fire_writes_nothing() {
    let dir = Scratch::new("reset-race");
    let (timer, started, done) = open_slow(&dir.path("j"), SLOW);
    let (mut lost_races, mut seed) = (0, 0x2545_F491_4F6C_DD1Du64);
    let began = Instant::now();
    for job in 0..400u64 {
        if began.elapsed() > Duration::from_secs(8) {
            break;
        }
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let delay = Duration::from_micros(200 + seed % 2_000);
        let handle = timer.schedule(delay, job).unwrap();
        let journaled_due = || {
            timer
                .journaled(None, 100)
                .into_iter()
                .find(|j| j.id == handle.id())
                .map(|j| j.due)
        };
        let due = journaled_due().unwrap();
        std::thread::sleep(delay.saturating_sub(Duration::from_micros(seed % 600)));
        if timer.reset(handle, Duration::from_secs(3600)) {
            assert_eq!(timer.cancel(handle), Some(job));
            continue;
        }
        lost_races += 1;
        let returned = done.lock().unwrap().contains(&job);
        let now_due = journaled_due();
        assert!(
            returned || now_due == Some(due),
            "job {job}: its reset answered false and its handler has not returned, \
             but the journal has it due at {now_due:?}, not {due:?}"
        );
        settle(&started, &done);
    }
    assert!(
        lost_races > 0,
        "no reset lost a race: the test proved nothing"
    );
}

/// A reset (or cancel) holds its job at the end of time while it writes;
/// a keyed job read meanwhile must still show its own due time, never
/// that hold, and never be missing.
#[test]
fn a_keyed_job_read_during_its_resets_shows_its_own_due_time() {
    use core::sync::atomic::{AtomicBool, Ordering};
    let dir = Scratch::new("keyed-due");
    let (timer, _, _) = open_slow(&dir.path("j"), SLOW);
    let timer = Arc::new(timer);
    timer
        .schedule_keyed("order", Duration::from_secs(3600), 1)
        .unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let resetter = {
        let (timer, stop) = (Arc::clone(&timer), Arc::clone(&stop));
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                assert!(timer.reset_key("order", Duration::from_secs(3600)));
            }
        })
    };
    for _ in 0..20_000 {
        let limit = std::time::SystemTime::now() + Duration::from_secs(7200);
        let job = timer.keyed_job("order");
        let listed = timer.keyed(None, 10);
        assert!(
            job.is_some_and(|job| job.due < limit) && listed.iter().all(|job| job.due < limit),
            "a keyed job read during a reset showed the hold, or was missing"
        );
        assert_eq!(listed.len(), 1);
    }
    stop.store(true, Ordering::Relaxed);
    resetter.join().unwrap();
}
