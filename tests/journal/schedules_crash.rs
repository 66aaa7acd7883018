//! A job scheduler on a `DurableTimer` through a crash loop: a child run
//! of this binary is SIGKILLed eight times; no instant of the timetable is
//! lost, none runs early, and one runs twice only when a kill cut its run
//! short.

use alloc::collections::{BTreeMap, BTreeSet};
use core::time::Duration;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::SystemTime;

use tickwheel::persist::{DurableTimer, ScheduledRun, SyncPolicy};
use tickwheel::schedule::{Missed, Schedule};

use crate::journal_schedules::micros;
use crate::journals::printer;
use crate::scratch::Scratch;

/// One life of the crash loop: opens the journal, upserts a scheduler
/// every 50 ms that makes up every missed run (unchanged after the first
/// life), and prints
/// `start <instant> <now>` (µs) as each run starts, then works for 15 ms,
/// until killed.
#[test]
#[ignore = "a child of a_crash_loop_loses_no_instant"]
fn schedules_crash_child() {
    let Some(path) = std::env::var_os("TICKWHEEL_SCHEDULES_JOURNAL") else {
        return;
    };
    let print = printer();
    let (timer, _) = DurableTimer::open(
        path,
        SyncPolicy::Always,
        &Default::default(),
        move |_: u64| {
            let run = ScheduledRun::current().unwrap();
            let instant = micros(run.instant);
            print(format!("start {instant} {}", micros(SystemTime::now())));
            std::thread::sleep(Duration::from_millis(15));
        },
    )
    .unwrap();
    timer
        .upsert_schedule(
            "beat",
            &Schedule::every(Duration::from_millis(50)).missed(Missed::RunAll),
            1,
        )
        .unwrap();
    std::thread::sleep(Duration::from_secs(60));
}

#[test]
fn a_crash_loop_loses_no_instant() {
    const KILLS: u64 = 8;
    let dir = Scratch::new("sched-crash");
    let path = dir.path("j");
    let exe = std::env::current_exe().unwrap();
    // Per life, the instants started, with the time each started, in
    // order.
    let mut lives: Vec<Vec<(i64, i64)>> = Vec::new();
    // Past KILLS only on a machine so loaded that its children barely ran.
    let instants = |lives: &[Vec<(i64, i64)>]| {
        let all: BTreeSet<i64> = lives.iter().flatten().map(|&(i, _)| i).collect();
        all.len()
    };
    for kill in 0.. {
        if kill >= KILLS && (instants(&lives) >= 20 || kill >= 5 * KILLS) {
            break;
        }
        let mut child = Command::new(&exe)
            .args([
                crate::children::test_name(module_path!(), "schedules_crash_child").as_str(),
                "--exact",
                "--ignored",
                "--nocapture",
            ])
            .env("TICKWHEEL_SCHEDULES_JOURNAL", &path)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let reader = std::thread::spawn(move || {
            BufReader::new(stdout)
                .lines()
                .map_while(Result::ok)
                .collect::<Vec<String>>()
        });
        std::thread::sleep(Duration::from_millis(300 + (kill * 37) % 100));
        child.kill().unwrap(); // SIGKILL on Unix
        child.wait().unwrap();
        let mut life = Vec::new();
        for line in reader.join().unwrap() {
            let words: Vec<&str> = line.split(' ').collect();
            if let ["start", instant, at] = words[..] {
                life.push((instant.parse().unwrap(), at.parse().unwrap()));
            }
        }
        lives.push(life);
    }
    let mut count: BTreeMap<i64, u32> = BTreeMap::new();
    for started in &lives {
        for &(instant, at) in started {
            assert!(at >= instant, "ran {} µs early", instant - at);
            *count.entry(instant).or_default() += 1;
        }
    }
    let first = *count.keys().next().expect("no run at all");
    let last = *count.keys().next_back().unwrap();
    assert!(
        count.len() >= 20,
        "too few runs to prove anything: {count:?}"
    );
    let mut t = first;
    while t <= last {
        assert!(count.contains_key(&t), "instant {t} never ran");
        t += 50_000;
    }
    assert_eq!(count.len() as i64, (last - first) / 50_000 + 1);
    // An instant runs twice only when a kill cut its first run short: it
    // was the last its life started.
    let mut twice = 0;
    for (i, started) in lives.iter().enumerate() {
        for (j, &(instant, _)) in started.iter().enumerate() {
            let later = lives[i + 1..]
                .iter()
                .any(|s| s.iter().any(|&(t, _)| t == instant));
            if later {
                twice += 1;
                assert_eq!(
                    j,
                    started.len() - 1,
                    "instant {instant} ran again, not cut short"
                );
            }
        }
    }
    assert!(count.values().all(|&n| n <= 2), "{count:?}");
    assert!(twice as u64 <= KILLS);
}
