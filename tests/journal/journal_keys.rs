//! Keyed durable jobs (`DurableTimer::schedule_keyed`, `cancel_key`,
//! `reset_key`): a key names one pending job, in this process and after a
//! restart, and a crash loop of keyed schedules and cancels from several
//! threads loses no acknowledged key, runs no key whose cancel returned
//! its value, and runs nothing early.

use alloc::sync::Arc;
use core::time::Duration;
use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Barrier, Mutex};
use std::time::{Instant, SystemTime};

use tickwheel::persist::{DurableTimer, SyncPolicy};
use tickwheel::timer::ScheduleErrorKind;

use crate::scratch;
use scratch::Scratch;

use crate::journals;
use journals::{open_recording, printer, wait_for, Ran};

fn open(path: &Path) -> (DurableTimer<u64>, Vec<(String, u64)>, Ran) {
    let (timer, recovery, ran) = open_recording(path).unwrap();
    (timer, recovery.keys, ran)
}

#[test]
fn a_key_names_one_pending_job_and_is_free_once_it_ends() {
    let dir = Scratch::new("keys-basic");
    let (timer, _, ran) = open(&dir.path("j"));
    let hour = Duration::from_secs(3600);
    timer.schedule_keyed("order 1", hour, 1).unwrap();
    let err = timer.schedule_keyed("order 1", hour, 2).unwrap_err();
    assert_eq!(err.kind(), ScheduleErrorKind::KeyExists);
    assert_eq!(err.into_inner(), 2, "the value comes back");
    assert_eq!(timer.pending(), 1);
    // Cancelled by key: free again.
    assert_eq!(timer.cancel_key("order 1"), Some(1));
    assert_eq!(timer.cancel_key("order 1"), None);
    let handle = timer.schedule_keyed("order 1", hour, 3).unwrap();
    // Cancelled by handle: free too.
    assert_eq!(timer.cancel(handle), Some(3));
    timer
        .schedule_keyed("order 1", Duration::from_millis(5), 4)
        .unwrap();
    wait_for(&ran, 4);
    // Ran: free, and nothing to cancel.
    assert_eq!(timer.cancel_key("order 1"), None);
    assert!(!timer.reset_key("order 1", hour));
    timer.schedule_keyed("order 1", hour, 5).unwrap();
    assert!(timer.reset_key("order 1", Duration::from_millis(5)));
    wait_for(&ran, 5);
    assert_eq!(timer.cancel_key("never scheduled"), None);
    let long = "k".repeat(tickwheel::persist::MAX_KEY + 1);
    assert_eq!(
        timer.schedule_keyed(&long, hour, 6).unwrap_err().kind(),
        ScheduleErrorKind::TooLarge
    );
}

/// The point of keys: the job scheduled before the restart is cancelled
/// by its key after it.
#[test]
fn keys_survive_a_restart() {
    let dir = Scratch::new("keys-restart");
    let path = dir.path("orders.journal");
    let hour = Duration::from_secs(3600);
    let (timer, _, _) = open(&path);
    timer.schedule_keyed("order 1017", hour, 1017).unwrap();
    timer.schedule_keyed("order 1018", hour, 1018).unwrap();
    timer.schedule(hour, 7).unwrap(); // no key
    drop(timer);

    let (timer, mut keys, ran) = open(&path);
    keys.sort();
    let names: Vec<&str> = keys.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(names, ["order 1017", "order 1018"]);
    assert_eq!(
        timer
            .schedule_keyed("order 1017", hour, 0)
            .unwrap_err()
            .kind(),
        ScheduleErrorKind::KeyExists
    );
    assert_eq!(timer.cancel_key("order 1017"), Some(1017));
    assert!(timer.reset_key("order 1018", Duration::from_millis(5)));
    wait_for(&ran, 1018);
    drop(timer);

    let (timer, keys, _) = open(&path);
    assert!(keys.is_empty(), "{keys:?}");
    assert_eq!(timer.pending(), 1, "only the unkeyed job");
}

#[test]
fn racing_schedules_of_one_key_make_one_job() {
    let dir = Scratch::new("keys-race");
    let path = dir.path("j");
    let (timer, _, _) = open(&path);
    for round in 0..20 {
        let key = format!("order {round}");
        let start = Barrier::new(8);
        let won: Vec<bool> = std::thread::scope(|s| {
            let racers: Vec<_> = (0..8)
                .map(|v| {
                    let (timer, key, start) = (&timer, &key, &start);
                    s.spawn(move || {
                        start.wait();
                        timer
                            .schedule_keyed(key, Duration::from_secs(3600), v)
                            .is_ok()
                    })
                })
                .collect();
            racers.into_iter().map(|r| r.join().unwrap()).collect()
        });
        assert_eq!(won.iter().filter(|&&w| w).count(), 1, "round {round}");
    }
    assert_eq!(timer.pending(), 20);
    drop(timer);
    let (_, keys, _) = open(&path);
    assert_eq!(keys.len(), 20);
}

/// The child of the crash loop: three threads schedule keyed jobs (the
/// key is also the value, with the due time in it) and one cancels keys
/// at random; every completed call and every run is printed. Runs only
/// when started by `a_keyed_crash_loop_loses_no_key`.
#[test]
#[ignore = "started by `a_keyed_crash_loop_loses_no_key`"]
fn keyed_crash_child() {
    let Ok(path) = std::env::var("TICKWHEEL_KEYED_JOURNAL") else {
        return;
    };
    let say = printer();
    let runs = say.clone();
    let (timer, _) = DurableTimer::open(
        Path::new(&path),
        SyncPolicy::Every(Duration::from_millis(2)),
        &Default::default(),
        move |key: String| {
            let due_ms: u128 = key.rsplit('@').next().unwrap().parse().unwrap();
            let now_ms = SystemTime::now()
                .duration_since(SystemTime::UNIX_EPOCH)
                .unwrap()
                .as_millis();
            if now_ms < due_ms {
                runs(format!("EARLY {key}"));
            }
            runs(format!("R {key}"));
        },
    )
    .unwrap();
    timer.set_compaction_floor(4096);
    let known: Mutex<Vec<String>> = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for thread in 0..3u64 {
            let (timer, known, say) = (&timer, &known, say.clone());
            s.spawn(move || {
                for n in 0u64.. {
                    let delay = Duration::from_millis((n * 7 + thread * 3) % 40);
                    // Due in whole ms, rounded up: never later than the job.
                    let due = SystemTime::now() + delay;
                    let due_ms = due
                        .duration_since(SystemTime::UNIX_EPOCH)
                        .unwrap()
                        .as_millis();
                    let key = format!("k{}-{thread}-{n}@{}", std::process::id(), due_ms);
                    // The job is due at `due` or later: `schedule_keyed`
                    // reads the clock after `due` was computed.
                    if timer.schedule_keyed(&key, delay, key.clone()).is_ok() {
                        say(format!("S {key}"));
                        known.lock().unwrap().push(key);
                    }
                    std::thread::sleep(Duration::from_micros(300));
                }
            });
        }
        let (timer, known, say) = (&timer, &known, say.clone());
        s.spawn(move || {
            let mut seed = u64::from(std::process::id()) | 1;
            loop {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                let victim = {
                    let known = known.lock().unwrap();
                    if known.is_empty() {
                        None
                    } else {
                        Some(known[(seed % known.len() as u64) as usize].clone())
                    }
                };
                if let Some(key) = victim {
                    say(format!("X {key}"));
                    if timer.cancel_key(&key).is_some() {
                        say(format!("C {key}"));
                    }
                }
                std::thread::sleep(Duration::from_micros(700));
            }
        });
    });
}

#[test]
fn a_keyed_crash_loop_loses_no_key() {
    const KILLS: u64 = 25;
    let dir = Scratch::new("keys-crash");
    let path = dir.path("orders.journal");
    let exe = std::env::current_exe().unwrap();
    let mut line = 0u64; // every line, in order across children
    let mut scheduled: HashSet<String> = HashSet::new();
    let mut cancel_called: HashSet<String> = HashSet::new();
    let mut cancelled_at: HashMap<String, u64> = HashMap::new();
    let mut runs: HashMap<String, Vec<u64>> = HashMap::new();
    let mut early: Vec<String> = Vec::new();
    let mut read = |text: &str,
                    line: &mut u64,
                    runs: &mut HashMap<String, Vec<u64>>,
                    early: &mut Vec<String>| {
        for l in text.lines() {
            *line += 1;
            let Some((what, key)) = l.split_once(' ') else {
                continue;
            };
            let key = key.to_string();
            match what {
                "S" => {
                    scheduled.insert(key);
                }
                "X" => {
                    cancel_called.insert(key);
                }
                "C" => {
                    cancelled_at.insert(key, *line);
                }
                "R" => runs.entry(key).or_default().push(*line),
                "EARLY" => early.push(key),
                _ => {}
            }
        }
    };
    // Past KILLS only on a machine so loaded that its children barely got
    // to schedule or cancel: the kill points stay as they were.
    let (mut schedules, mut cancels) = (0, 0);
    for kill in 0.. {
        if kill >= KILLS && ((schedules > 100 && cancels > 0) || kill >= 5 * KILLS) {
            break;
        }
        let mut child = Command::new(&exe)
            .args([
                crate::children::test_name(module_path!(), "keyed_crash_child").as_str(),
                "--exact",
                "--ignored",
                "--nocapture",
            ])
            .env("TICKWHEEL_KEYED_JOURNAL", &path)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(40 + (kill * 37) % 60));
        child.kill().unwrap(); // SIGKILL on Unix
        child.wait().unwrap();
        let mut text = String::new();
        for l in BufReader::new(child.stdout.take().unwrap()).lines() {
            match l {
                Ok(l) => {
                    text.push_str(&l);
                    text.push('\n');
                }
                Err(_) => break,
            }
        }
        // A line cut by the kill has no newline and proves nothing.
        read(&text, &mut line, &mut runs, &mut early);
        schedules += text.lines().filter(|l| l.starts_with("S ")).count();
        cancels += text.lines().filter(|l| l.starts_with("C ")).count();
    }
    // The last open: whatever is pending is due within 40 ms.
    let out: Arc<Mutex<String>> = Arc::default();
    let sink = Arc::clone(&out);
    let (timer, _) = DurableTimer::open(
        &path,
        SyncPolicy::Always,
        &Default::default(),
        move |key: String| sink.lock().unwrap().push_str(&format!("R {key}\n")),
    )
    .unwrap();
    // Until every key that must run has: `pending()` reads 0 while the
    // driver still hands the last jobs over, and a drop then stops it
    // between two hand-offs (those jobs stay in the journal).
    let owed: Vec<&String> = scheduled
        .iter()
        .filter(|key| !runs.contains_key(*key) && !cancel_called.contains(*key))
        .collect();
    let give_up = Instant::now() + Duration::from_secs(10);
    while timer.pending() > 0
        || owed
            .iter()
            .any(|key| !out.lock().unwrap().contains(&format!("R {key}\n")))
    {
        assert!(Instant::now() < give_up, "jobs still pending");
        std::thread::sleep(Duration::from_millis(5));
    }
    drop(timer);
    let last = out.lock().unwrap().clone();
    // The last open prints only runs (and `read` is done with `scheduled`).
    for l in last.lines() {
        line += 1;
        if let Some(key) = l.strip_prefix("R ") {
            runs.entry(key.to_string()).or_default().push(line);
        }
    }

    eprintln!(
        "keyed crash loop: {} keys scheduled, {} cancels called, {} won, {} keys ran, {} lines",
        scheduled.len(),
        cancel_called.len(),
        cancelled_at.len(),
        runs.len(),
        line
    );
    assert!(
        scheduled.len() > 100,
        "the children barely ran: {}",
        scheduled.len()
    );
    assert!(!cancelled_at.is_empty(), "no cancel ever won");
    assert!(early.is_empty(), "ran early: {early:?}");
    for key in &scheduled {
        assert!(
            runs.contains_key(key) || cancel_called.contains(key),
            "acknowledged key {key} was lost"
        );
    }
    for (key, &at) in &cancelled_at {
        // A run before the cancel is a job that ran and was restored
        // because the kill came before its `done` (at least once).
        if let Some(after) = runs.get(key).and_then(|r| r.iter().find(|&&l| l > at)) {
            panic!("{key}: cancel returned the value (line {at}), and it ran at line {after}");
        }
    }
}

/// `keyed` pages through the pending keyed jobs in key order, each once,
/// with its due time, in this process and after a restart; cancelled and
/// run jobs are not listed.
#[test]
fn keyed_jobs_list_in_pages_across_a_restart() {
    let dir = Scratch::new("keys-list");
    let path = dir.path("j");
    let hour = Duration::from_secs(3600);
    let (timer, _, ran) = open(&path);
    let scheduled_at = SystemTime::now();
    for i in 0..250u64 {
        timer
            .schedule_keyed(&format!("order {i:03}"), hour + Duration::from_secs(i), i)
            .unwrap();
    }
    for i in (0..250u64).step_by(10) {
        assert_eq!(timer.cancel_key(&format!("order {i:03}")), Some(i));
    }
    timer
        .schedule_keyed("order soon", Duration::from_millis(5), 999)
        .unwrap();
    wait_for(&ran, 999);
    let walk = |timer: &DurableTimer<u64>| {
        let mut all = Vec::new();
        loop {
            let page = timer.keyed(
                all.last()
                    .map(|j: &tickwheel::persist::KeyedJob| j.key.as_str()),
                40,
            );
            let last = page.len() < 40;
            all.extend(page);
            if last {
                return all;
            }
        }
    };
    let want: Vec<String> = (0..250u64)
        .filter(|i| i % 10 != 0)
        .map(|i| format!("order {i:03}"))
        .collect();
    let listed = walk(&timer);
    assert_eq!(
        listed.iter().map(|j| j.key.clone()).collect::<Vec<_>>(),
        want
    );
    for job in &listed {
        let i: u64 = job.key[6..].parse().unwrap();
        let due = scheduled_at + hour + Duration::from_secs(i);
        let off = job.due.duration_since(due).unwrap_or_else(|e| e.duration());
        assert!(
            off < Duration::from_secs(2),
            "{} due {:?}, {off:?} off",
            job.key,
            job.due
        );
    }
    assert_eq!(
        timer.cancel(listed[0].handle),
        Some(1),
        "the handle names the job"
    );
    drop(timer);
    let (timer, _, _) = open(&path);
    let listed = walk(&timer);
    assert_eq!(
        listed.len(),
        want.len() - 1,
        "the one cancelled by handle is gone"
    );
    assert_eq!(
        listed.iter().map(|j| j.key.clone()).collect::<Vec<_>>(),
        want[1..]
    );
}

/// `journaled` pages through every pending job as the journal holds it,
/// keyed or not, in schedule order: a cancelled job and one that ran are
/// gone, due times are the ones asked for, and the same jobs list after a
/// restart.
#[test]
fn every_journaled_job_lists_in_pages_keyed_or_not() {
    let dir = Scratch::new("journaled-list");
    let path = dir.path("j");
    let hour = Duration::from_secs(3600);
    let (timer, _, ran) = open(&path);
    let scheduled_at = SystemTime::now();
    let mut want = Vec::new();
    for i in 0..120u64 {
        let delay = hour + Duration::from_secs(i);
        let handle = if i % 3 == 0 {
            timer
                .schedule_keyed(&format!("order {i:03}"), delay, i)
                .unwrap()
        } else {
            timer.schedule(delay, i).unwrap()
        };
        want.push((handle, (i % 3 == 0).then(|| format!("order {i:03}")), i));
    }
    // Gone from the listing: a cancelled job, a keyed one cancelled by
    // key, and one that ran.
    let (handle, _, value) = want.remove(7);
    assert_eq!(timer.cancel(handle), Some(value));
    assert_eq!(timer.cancel_key("order 030"), Some(30));
    want.retain(|(_, key, _)| key.as_deref() != Some("order 030"));
    timer.schedule(Duration::from_millis(5), 999).unwrap();
    wait_for(&ran, 999);
    let walk = |timer: &DurableTimer<u64>| {
        let mut all: Vec<tickwheel::persist::JournaledJob> = Vec::new();
        loop {
            let page = timer.journaled(all.last().map(|j| j.id), 25);
            let last = page.len() < 25;
            all.extend(page);
            if last {
                return all;
            }
        }
    };
    let check = |listed: &[tickwheel::persist::JournaledJob]| {
        let got: Vec<(u64, Option<String>)> =
            listed.iter().map(|j| (j.id, j.key.clone())).collect();
        let expected: Vec<(u64, Option<String>)> = want
            .iter()
            .map(|(h, key, _)| (h.id(), key.clone()))
            .collect();
        assert_eq!(got, expected);
        for (job, (_, _, i)) in listed.iter().zip(&want) {
            let due = scheduled_at + hour + Duration::from_secs(*i);
            let off = job.due.duration_since(due).unwrap_or_else(|e| e.duration());
            assert!(off < Duration::from_secs(2), "#{} {off:?} off", job.id);
        }
    };
    check(&walk(&timer));
    drop(timer);
    let (timer, _, _) = open(&path);
    check(&walk(&timer));
}
