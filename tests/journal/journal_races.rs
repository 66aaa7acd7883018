//! Races between a `DurableTimer` call and a job running, where the
//! journal and the timer must agree: a cancel that answers `None` leaves
//! the job in the journal until its handler returns, and a key taken again
//! by a job's own handler names that new job after a crash.

use alloc::sync::Arc;
use core::time::Duration;
use std::time::Instant;

use alloc::sync::Weak;
use std::sync::OnceLock;

use tickwheel::persist::{DurableTimer, JournalError, MisfirePolicy, SyncPolicy};

use crate::journals;
use crate::scratch;
use journals::{open_recording, open_slow, settle, wait_for};
use scratch::Scratch;

/// Cancels each job about when it falls due, with every record synced, so
/// that the fire often lands while the cancel is being written. Whenever
/// the cancel answers `None` (the job was taken to run) and the handler
/// has not returned, the journal must still hold the job: a crash then
/// runs it again. Before, the cancel went into the journal first and the
/// fire could win the race during the sync: `None`, yet the journal said
/// cancelled, and a crash before the handler returned lost the job.
#[test]
fn a_cancel_that_loses_to_the_fire_writes_nothing() {
    let dir = Scratch::new("cancel-race");
    // A slow handler.
    let (timer, started, done) = open_slow(&dir.path("j"), Duration::from_millis(40));
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
        std::thread::sleep(delay.saturating_sub(Duration::from_micros(seed % 600)));
        if timer.cancel(handle).is_some() {
            assert!(!started.lock().unwrap().contains(&job), "{job} ran");
            continue;
        }
        lost_races += 1;
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
        // Let the handler finish before the next round.
        settle(&started, &done);
    }
    assert!(
        lost_races > 0,
        "no cancel lost a race: the test proved nothing"
    );
}

/// A keyed job's handler schedules the next job under its own key (a
/// retry), then the process dies before the first's `done`: after the
/// restart both are in the journal under one key. The key names the later
/// one, as it did before the crash, and the earlier runs again without it.
/// Before, the earlier took the key and released it when it ran, leaving
/// the later pending but unreachable by key, and a new schedule under the
/// key then made two pending jobs share it.
#[test]
fn a_key_taken_again_by_its_own_handler_names_the_new_job_after_a_crash() {
    let dir = Scratch::new("key-retaken");
    let path = dir.path("j");
    let me: Arc<OnceLock<Weak<DurableTimer<u64>>>> = Arc::default();
    let handle = Arc::clone(&me);
    let (timer, _) = DurableTimer::open(
        &path,
        SyncPolicy::Always,
        &MisfirePolicy::default(),
        move |job: u64| {
            if job == 1 {
                let timer = handle.get().and_then(Weak::upgrade).unwrap();
                timer
                    .schedule_keyed("order", Duration::from_secs(3600), 2)
                    .unwrap();
                panic!("the process dies before this job's `done`");
            }
        },
    )
    .unwrap();
    let timer = Arc::new(timer);
    me.set(Arc::downgrade(&timer)).unwrap();
    let first = timer
        .schedule_keyed("order", Duration::from_millis(5), 1)
        .unwrap();
    let began = Instant::now();
    while timer
        .keyed_job("order")
        .is_none_or(|job| job.handle.id() == first.id())
    {
        assert!(
            began.elapsed() < Duration::from_secs(10),
            "no retry scheduled"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    let retry = timer.keyed_job("order").unwrap().handle.id();
    drop(timer);
    // The handler still held the timer when it scheduled: the last handle
    // goes on the driver thread, and the lock with it.
    let reopened = loop {
        match open_recording(&path) {
            Err(JournalError::Locked { .. }) if began.elapsed() < Duration::from_secs(10) => {
                std::thread::sleep(Duration::from_millis(1));
            }
            other => break other.unwrap(),
        }
    };
    let (timer, recovery, ran) = reopened;
    assert_eq!(recovery.keys, [(String::from("order"), retry)]);
    wait_for(&ran, 1); // the interrupted run, again
    assert_eq!(
        timer.keyed_job("order").map(|job| job.handle.id()),
        Some(retry)
    );
    assert_eq!(timer.cancel_key("order"), Some(2));
    assert_eq!(timer.pending(), 0);
    timer
        .schedule_keyed("order", Duration::from_secs(3600), 3)
        .unwrap();
    assert_eq!(timer.keyed(None, 10).len(), 1);
}
