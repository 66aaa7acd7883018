//! The journal's promises that need no crash: one owner per file (a second
//! `open`, from another thread or another process, is refused until the
//! owner goes, however it goes); values too large to read back, and delays
//! that overflow the clock, refused with the value handed back; a failed
//! compaction that fails nothing else; compaction files that never
//! overwrite anyone's; sync intervals at their extremes; and errors and
//! reports that say which file and what was there. A full disk:
//! `journal_full_disk.rs`.

use alloc::sync::Arc;
use core::time::Duration;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::Instant;

use tickwheel::persist::{DurableTimer, Found, JournalError, SyncPolicy, MAX_PAYLOAD};
use tickwheel::timer::ScheduleErrorKind;

use crate::scratch;
use scratch::Scratch;

use crate::journals;
use journals::{open_recording, wait_for, Ran};

fn open(path: &Path) -> Result<(DurableTimer<u64>, usize, Ran), JournalError> {
    let (timer, recovery, ran) = open_recording(path)?;
    Ok((timer, recovery.outcomes.len(), ran))
}

/// Today's bug: the second open succeeded, rewrote the file, and the first
/// opener kept writing to an unlinked file.
#[test]
fn a_second_open_in_this_process_is_refused_while_the_first_keeps_working() {
    let dir = Scratch::new("lock-threads");
    let path = dir.path("orders.journal");
    let (first, _, ran) = open(&path).unwrap();
    let second = std::thread::scope(|s| s.spawn(|| open(&path).map(|_| ())).join().unwrap());
    match second {
        Err(JournalError::Locked { path: p, owner }) => {
            assert_eq!(p, path);
            assert_eq!(owner, Some(std::process::id()));
        }
        other => panic!("a second open while the first is open: {other:?}"),
    }
    let message = open(&path).map(|_| ()).unwrap_err().to_string();
    assert!(
        message.contains("orders.journal") && message.contains("in this process"),
        "{message}"
    );
    // The first owner is untouched: it schedules, runs and journals.
    first.schedule(Duration::from_millis(1), 1).unwrap();
    wait_for(&ran, 1);
    first.schedule(Duration::from_secs(3600), 2).unwrap();
    drop(first);
    // Gone with its owner: the next open gets the file, and the job.
    let (again, restored, _) = open(&path).unwrap();
    assert_eq!(restored, 1);
    assert_eq!(again.pending(), 1);
}

/// The child side of the two-process test: opens the journal named by
/// `TICKWHEEL_LOCK_JOURNAL`, schedules one job an hour out, says so, and
/// waits to be killed.
#[test]
#[ignore = "started by `another_process_is_refused_until_the_owner_is_killed`"]
fn lock_holder_child() {
    let Ok(path) = std::env::var("TICKWHEEL_LOCK_JOURNAL") else {
        return;
    };
    let (timer, _, _) = open(Path::new(&path)).unwrap();
    timer.schedule(Duration::from_secs(3600), 7).unwrap();
    println!("\nready");
    loop {
        std::thread::sleep(Duration::from_secs(1));
    }
}

#[test]
fn another_process_is_refused_until_the_owner_is_killed() {
    let dir = Scratch::new("lock-processes");
    let path = dir.path("orders.journal");
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            crate::children::test_name(module_path!(), "lock_holder_child").as_str(),
            "--exact",
            "--ignored",
            "--nocapture",
        ])
        .env("TICKWHEEL_LOCK_JOURNAL", &path)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    assert!(
        lines.any(|line| line.is_ok_and(|l| l == "ready")),
        "the child never opened the journal"
    );
    match open(&path).map(|_| ()) {
        Err(JournalError::Locked { owner, .. }) => assert_eq!(owner, Some(child.id())),
        other => {
            let _ = child.kill();
            panic!("an open while another process owns the journal: {other:?}");
        }
    }
    child.kill().unwrap(); // SIGKILL on Unix: no chance to unlock
    child.wait().unwrap();
    let (timer, restored, _) = open(&path).unwrap();
    assert_eq!(restored, 1, "the killed owner's job");
    assert_eq!(timer.pending(), 1);
}

/// Today's bug: a link to the journal locked `link.lock`, so the journal
/// had two owners; and compaction renamed its new file over the link.
#[test]
fn a_journal_has_one_owner_whichever_link_names_it() {
    let dir = Scratch::new("lock-links");
    let path = dir.path("orders.journal");
    let link = dir.path("link");
    let chain = dir.path("chain");
    // Made before the journal: a dangling link names the file it creates.
    std::os::unix::fs::symlink("orders.journal", &link).unwrap();
    std::os::unix::fs::symlink(&link, &chain).unwrap();
    let (owner, _, _) = open(&chain).unwrap();
    assert!(path.is_file(), "the journal is the links' target");
    for other in [&path, &link, &chain] {
        match open(other) {
            Err(JournalError::Locked { path: p, .. }) => assert_eq!(p, path),
            result => panic!("{}: {:?}", other.display(), result.map(|_| ())),
        }
    }
    owner.schedule(Duration::from_secs(3600), 1).unwrap();
    owner.compact().unwrap();
    drop(owner);
    let kind = std::fs::symlink_metadata(&link).unwrap().file_type();
    assert!(kind.is_symlink(), "compaction replaced the link");
    let (timer, restored, _) = open(&path).unwrap();
    assert_eq!((restored, timer.pending()), (1, 1));
}

/// CRC-32 (IEEE), as the journal frames records, to forge one below.
fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &byte in bytes {
        crc ^= u32::from(byte);
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                0xEDB8_8320 ^ (crc >> 1)
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

/// A well-formed cancel record for job `id`, as the journal writes one.
fn forged_cancel(id: u64) -> Vec<u8> {
    let mut body = vec![2u8];
    body.extend_from_slice(&id.to_le_bytes());
    let mut record = vec![0xA5, 0x7E, 0x1D, 0xC3];
    record.extend_from_slice(&(body.len() as u32).to_le_bytes());
    record.extend_from_slice(&crc32(&body).to_le_bytes());
    record.extend_from_slice(&body);
    record
}

/// Today's bugs: a 16 MiB payload returned `Ok` and was gone after a clean
/// reopen; a 17 MiB one holding a cancel record's bytes cancelled another
/// job.
#[test]
fn values_too_large_to_read_back_are_refused_and_handed_back() {
    let dir = Scratch::new("payload-limit");
    let path = dir.path("orders.journal");
    let open = || {
        DurableTimer::<Vec<u8>>::open(&path, SyncPolicy::Never, &Default::default(), |_| {})
            .unwrap()
    };
    let (timer, _) = open();
    let victim = timer
        .schedule(Duration::from_secs(3600), b"order 17".to_vec())
        .unwrap();
    let mut forged = vec![0u8; 17 << 20];
    let record = forged_cancel(victim.id());
    for at in (0..forged.len() - 64).step_by(1 << 20) {
        forged[at..at + record.len()].copy_from_slice(&record);
    }
    let err = timer
        .schedule(Duration::from_secs(3600), forged)
        .unwrap_err();
    assert_eq!(err.kind(), ScheduleErrorKind::TooLarge);
    assert_eq!(
        err.into_inner().len(),
        17 << 20,
        "the value comes back whole"
    );
    let err = timer
        .schedule(Duration::from_secs(3600), vec![1; MAX_PAYLOAD + 1])
        .unwrap_err();
    assert_eq!(err.kind(), ScheduleErrorKind::TooLarge);
    // The largest value accepted comes back from the file, whole.
    timer
        .schedule(Duration::from_secs(3600), vec![1; MAX_PAYLOAD])
        .unwrap();
    assert_eq!(timer.pending(), 2);
    drop(timer);
    let (timer, recovery) = open();
    assert!(recovery.damage.is_empty(), "{:?}", recovery.damage);
    assert_eq!(recovery.outcomes.len(), 2, "both jobs, the victim included");
    assert_eq!(timer.pending(), 2);
}

/// Today's bug: `Duration::MAX` (any delay that overflows the clock) ran
/// the job at once, in `schedule` and in `reset`.
#[test]
fn a_delay_that_overflows_the_clock_never_runs_the_job() {
    let dir = Scratch::new("overflow");
    let path = dir.path("orders.journal");
    let (timer, _, ran) = open(&path).unwrap();
    for delay in [Duration::MAX, Duration::from_secs(u64::MAX / 2)] {
        let err = timer.schedule(delay, 5).unwrap_err();
        assert_eq!(err.kind(), ScheduleErrorKind::OutOfRange);
        assert_eq!(err.into_inner(), 5);
    }
    let scheduled = Instant::now();
    let job = timer.schedule(Duration::from_millis(300), 6).unwrap();
    assert!(!timer.reset(job, Duration::MAX), "refused");
    std::thread::sleep(Duration::from_millis(100));
    let ran_early = !ran.lock().unwrap().is_empty();
    // A loaded machine may oversleep past the due time: only a run seen
    // before it is early.
    assert!(
        !ran_early || scheduled.elapsed() >= Duration::from_millis(300),
        "ran early: {:?}",
        ran.lock().unwrap()
    );
    // The job kept its time.
    wait_for(&ran, 6);
    assert_eq!(*ran.lock().unwrap(), vec![6]);
    drop(timer);
    let (_, restored, _) = open(&path).unwrap();
    assert_eq!(restored, 0, "nothing refused was journaled");
}

/// Today's bug: when compaction failed, `schedule` returned `Err(Journal)`
/// and handed the value back although its record was written (so the job
/// ran after the next restart), and every later schedule failed the same
/// way. The rename over the journal is made to fail by putting a
/// non-empty directory where the journal was (the timer keeps appending
/// to its open file).
#[test]
fn a_failed_compaction_fails_no_call() {
    let dir = Scratch::new("compaction-fails");
    let path = dir.path("orders.journal");
    let (timer, _, _) = open(&path).unwrap();
    timer.set_compaction_floor(4096);
    let mut kept = Vec::new();
    for value in 0..10 {
        kept.push(timer.schedule(Duration::from_secs(3600), value).unwrap());
    }
    std::fs::remove_file(&path).unwrap();
    std::fs::create_dir(&path).unwrap();
    std::fs::write(path.join("in the way"), b"x").unwrap();
    for value in 100..1100 {
        let job = timer.schedule(Duration::from_secs(3600), value).unwrap();
        assert_eq!(timer.cancel(job), Some(value));
    }
    let failures = timer.compaction_failures();
    assert!(failures > 0, "the rename never failed");
    assert!(failures < 10, "retried on every append: {failures}");
    // Nothing of ours is left behind, and what was in the way is intact.
    let names: Vec<String> = std::fs::read_dir(dir.path(""))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        names
            .iter()
            .all(|n| n == "orders.journal" || n == "orders.journal.lock"),
        "{names:?}"
    );
    assert_eq!(std::fs::read(path.join("in the way")).unwrap(), b"x");
    // Out of the way, compaction works again and writes every pending job.
    std::fs::remove_dir_all(&path).unwrap();
    timer.compact().unwrap();
    drop(timer);
    let (timer, restored, _) = open(&path).unwrap();
    assert_eq!(restored, kept.len());
    assert_eq!(timer.pending(), kept.len());
}

/// Today's bugs: compaction wrote to the fixed name `<path>.compacting`,
/// destroying an unrelated file of that name, and `open("")` left a stray
/// file in the working directory.
#[test]
fn compaction_never_overwrites_a_file_it_did_not_create() {
    let dir = Scratch::new("temp-names");
    let path = dir.path("j");
    let bystander = dir.path("j.compacting");
    std::fs::write(&bystander, b"someone else's").unwrap();
    let stale = dir.path("j.compacting-1-2"); // a crashed owner's leftover
    std::fs::write(&stale, b"half a journal").unwrap();
    // A journal whose name looks like a leftover (it has its `.lock`).
    let lookalike = dir.path("j.compacting-3-4");
    let (other, _, _) = open(&lookalike).unwrap();
    other.schedule(Duration::from_secs(3600), 9).unwrap();
    drop(other);
    let (timer, _, _) = open(&path).unwrap();
    timer.schedule(Duration::from_secs(3600), 1).unwrap();
    timer.compact().unwrap();
    drop(timer);
    assert_eq!(std::fs::read(&bystander).unwrap(), b"someone else's");
    assert!(!stale.exists(), "the crashed owner's compaction file stays");
    let (_, restored, _) = open(&lookalike).unwrap();
    assert_eq!(restored, 1, "a journal named like a leftover was removed");
    let (_, restored, _) = open(&path).unwrap();
    assert_eq!(restored, 1);

    // Nor the lock's name: a `k.lock` of somebody's is refused, kept whole.
    let theirs = dir.path("k.lock");
    std::fs::write(&theirs, b"deploy notes").unwrap();
    let err = open(&dir.path("k")).map(|_| ()).unwrap_err();
    assert!(err.to_string().contains("k.lock"), "{err}");
    assert_eq!(std::fs::read(&theirs).unwrap(), b"deploy notes");

    let err = open(Path::new("")).map(|_| ()).unwrap_err();
    assert!(matches!(err, JournalError::Io(_)), "{err}");
    for stray in [".lock", ".compacting"] {
        assert!(!Path::new(stray).exists(), "open(\"\") left {stray}");
    }
}

/// The sync thread for `Every(interval)`, found by name among this
/// process's threads (Linux): its CPU time so far, in clock ticks.
#[cfg(target_os = "linux")]
fn sync_thread_cpu() -> Option<u64> {
    for task in std::fs::read_dir("/proc/self/task").ok()? {
        let task = task.ok()?.path();
        let comm = std::fs::read_to_string(task.join("comm")).unwrap_or_default();
        if comm.trim() == "tickwheel-journ" {
            let stat = std::fs::read_to_string(task.join("stat")).ok()?;
            let fields: Vec<&str> = stat.rsplit_once(") ")?.1.split(' ').collect();
            let utime: u64 = fields.get(11)?.parse().ok()?;
            let stime: u64 = fields.get(12)?.parse().ok()?;
            return Some(utime + stime);
        }
    }
    None
}

/// Today's bugs: `Every(Duration::MAX)` panicked the sync thread while
/// `open` returned `Ok`; `Every(Duration::ZERO)` spun a core while the
/// journal was idle.
#[test]
fn sync_intervals_at_their_extremes_neither_panic_nor_spin() {
    let panicked = Arc::new(Mutex::new(Vec::<String>::new()));
    let seen = Arc::clone(&panicked);
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let name = std::thread::current().name().unwrap_or("").to_string();
        if name.starts_with("tickwheel-journal") {
            seen.lock().unwrap().push(info.to_string());
        }
        previous(info);
    }));
    for every in [Duration::MAX, Duration::ZERO, Duration::from_nanos(1)] {
        let dir = Scratch::new("sync-every");
        let path = dir.path("j");
        let (timer, _) =
            DurableTimer::<u64>::open(&path, SyncPolicy::Every(every), &Default::default(), |_| {})
                .unwrap();
        timer.schedule(Duration::from_secs(3600), 1).unwrap();
        std::thread::sleep(Duration::from_millis(50));
        #[cfg(target_os = "linux")]
        {
            // Idle: the sync thread must sleep, not poll. (It takes its
            // name once it runs: a loaded machine may start it late.)
            let began = Instant::now();
            let before = loop {
                if let Some(cpu) = sync_thread_cpu() {
                    break cpu;
                }
                assert!(began.elapsed() < Duration::from_secs(10), "no sync thread");
                std::thread::sleep(Duration::from_millis(5));
            };
            std::thread::sleep(Duration::from_millis(400));
            let used = sync_thread_cpu().unwrap() - before;
            assert!(
                used <= 2,
                "Every({every:?}): the idle sync thread used {used} ticks in 400 ms"
            );
        }
        timer.schedule(Duration::from_secs(3600), 2).unwrap();
        drop(timer);
        let (timer, _) =
            DurableTimer::<u64>::open(&path, SyncPolicy::Never, &Default::default(), |_| {})
                .unwrap();
        assert_eq!(timer.pending(), 2, "Every({every:?})");
    }
    assert!(
        panicked.lock().unwrap().is_empty(),
        "{:?}",
        panicked.lock().unwrap()
    );
}

/// Today's bugs: an I/O error did not say which file; an existing empty
/// file was silently taken as a new journal.
#[test]
fn errors_name_the_file_and_the_report_says_what_was_there() {
    let dir = Scratch::new("reports");
    let missing = dir.path("no such dir").join("j");
    let err = open(&missing).map(|_| ()).unwrap_err();
    assert!(matches!(err, JournalError::Io(_)), "{err}");
    assert!(err.to_string().contains("no such dir"), "{err}");

    let report = |path: &Path| {
        let (_, recovery) =
            DurableTimer::<u64>::open(path, SyncPolicy::Never, &Default::default(), |_| {})
                .unwrap();
        recovery.found
    };
    let new = dir.path("new");
    assert_eq!(report(&new), Found::Nothing);
    assert_eq!(
        report(&new),
        Found::Journal,
        "the first open wrote a journal"
    );
    let empty = dir.path("empty");
    std::fs::write(&empty, b"").unwrap();
    assert_eq!(report(&empty), Found::EmptyFile);

    // A directory is refused, and nothing appears beside it.
    let err = open(&dir.path("")).map(|_| ()).unwrap_err();
    assert!(matches!(err, JournalError::Io(_)), "{err}");
}
