//! Races between a `DurableTimer` call and the job firing, where the
//! journal's answer and the timer's must agree: a cancel that answers
//! `None` must leave the job in the journal until its handler returns.

use alloc::sync::Arc;
use core::time::Duration;
use std::sync::Mutex;
use std::time::Instant;

use tickwheel::persist::{DurableTimer, MisfirePolicy, SyncPolicy};

use crate::scratch;
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
    let started = Arc::new(Mutex::new(Vec::new()));
    let done = Arc::new(Mutex::new(Vec::new()));
    let (s, d) = (Arc::clone(&started), Arc::clone(&done));
    let (timer, _) = DurableTimer::open(
        dir.path("j"),
        SyncPolicy::Always,
        &MisfirePolicy::default(),
        move |job: u64| {
            s.lock().unwrap().push(job);
            std::thread::sleep(Duration::from_millis(40)); // a slow handler
            d.lock().unwrap().push(job);
        },
    )
    .unwrap();
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
        while started.lock().unwrap().len() != done.lock().unwrap().len() {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    assert!(
        lost_races > 0,
        "no cancel lost a race: the test proved nothing"
    );
}
