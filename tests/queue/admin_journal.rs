//! The `tickwheel-admin` binary on journal files: a held journal is
//! refused and a free one served; `watch` reads a journal while its owner
//! runs, and writes nothing.

use core::time::Duration;
use std::process::Command;
use std::time::SystemTime;

use serde_json::Value;
use tickwheel::persist::{DurableTimer, SyncPolicy};

use crate::admin_tool::{ok, run, walk, BIN};
use crate::scratch::Scratch;

/// A journal a process holds is refused with the library's lock error,
/// naming the path and the owner, and left as it was; once the owner has
/// gone, the tool lists every pending job (keyed or not, in id order) and
/// shows and cancels by key.
#[test]
fn a_held_journal_is_refused_and_a_free_one_is_served() {
    let dir = Scratch::new("admin");
    let path = dir.path("orders.journal");
    let (held, _) =
        DurableTimer::<Vec<u8>>::open(&path, SyncPolicy::Always, &Default::default(), |_| {})
            .unwrap();
    for i in 0..3 {
        held.schedule_keyed(
            &format!("order {i}"),
            Duration::from_secs(900 + i),
            b"close\x01".to_vec(),
        )
        .unwrap();
    }
    // A job without a key lists too (it cannot be shown or cancelled by
    // the tool: those go by key).
    held.schedule(Duration::from_secs(950), b"remind".to_vec())
        .unwrap();
    let before = std::fs::read(&path).unwrap();
    let target = ["--journal", path.to_str().unwrap()];
    let refused = run(&target, &["ls", "pending"]);
    assert_eq!(refused.code, 1);
    assert!(refused.lines.is_empty());
    let message = refused.stderr.trim_end();
    assert_eq!(message.lines().count(), 1);
    let owner = format!("(process {})", std::process::id());
    assert!(
        message.contains(path.to_str().unwrap()) && message.contains(&owner),
        "{message}"
    );
    assert_eq!(std::fs::read(&path).unwrap(), before);
    drop(held);

    let (listed, _) = walk(&target, "pending", 2);
    let keys: Vec<Option<&str>> = listed.iter().map(|j| j["key"].as_str()).collect();
    assert_eq!(
        keys,
        [Some("order 0"), Some("order 1"), Some("order 2"), None]
    );
    let ids: Vec<u64> = listed.iter().map(|j| j["id"].as_u64().unwrap()).collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
    assert_eq!(
        run(&target, &["ls", "pending", "--after", "order 0"]).code,
        1
    );
    let shown = ok(&target, &["show", "order 0"]);
    assert_eq!(shown.one("job")["id"], listed[0]["id"]);
    // `ls` reads the due time the journal recorded, `show` the timer's
    // deadline for it: the same instant, each rounded to the microsecond.
    let (shown_at, listed_at) = (
        seconds_of_day(shown.one("job")["due"].as_str().unwrap()),
        seconds_of_day(listed[0]["due"].as_str().unwrap()),
    );
    assert!(
        (shown_at - listed_at).abs() < 0.001,
        "{shown_at} against {listed_at}"
    );
    assert_eq!(shown.one("job")["state"], "pending");
    let cancelled = ok(&target, &["cancel", "order 1"]);
    assert_eq!(
        cancelled.one("cancel"),
        &serde_json::json!({"type": "cancel", "key": "order 1", "outcome": "cancelled", "payload": "close\\x01"})
    );
    assert_eq!(ok(&target, &["stats"]).one("stats")["pending"], 3);
    let (left, _) = walk(&target, "pending", 10);
    let keys: Vec<Option<&str>> = left.iter().map(|j| j["key"].as_str()).collect();
    assert_eq!(keys, [Some("order 0"), Some("order 2"), None]);
    assert_eq!(run(&target, &["show", "order 1"]).code, 1);
}

/// Seconds since midnight of an RFC 3339 time the tool printed
/// (`2026-11-26T13:34:05.661878Z`).
fn seconds_of_day(rfc3339: &str) -> f64 {
    let time = &rfc3339[rfc3339.find('T').expect("a date and a time") + 1..];
    let mut parts = time.trim_end_matches('Z').split(':');
    let mut field = || parts.next().expect("h:m:s").parse::<f64>().unwrap();
    let (h, m, s) = (field(), field(), field());
    h * 3600.0 + m * 60.0 + s
}

// ---- `watch` on a journal: read without its lock ----------------------

/// The tool's `watch` frames on `path`, `count` of them.
fn watch_journal(path: &std::path::Path, count: u32) -> Vec<Value> {
    let output = Command::new(BIN)
        .args(["--journal", path.to_str().unwrap(), "--json", "watch"])
        .args(["--every", "50ms", "--count", &count.to_string()])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

#[test]
fn watch_reads_a_journal_its_owner_holds_and_writes_nothing() {
    let dir = Scratch::new("admin-watch");
    let path = dir.path("orders.journal");
    let (owner, _) =
        DurableTimer::<u64>::open(&path, SyncPolicy::Always, &Default::default(), |_| {}).unwrap();
    let hour = Duration::from_secs(3600);
    owner.schedule_keyed("order 1017", hour, 1017).unwrap();
    owner.schedule(hour, 1018).unwrap();
    owner
        .upsert_schedule("sweep", &tickwheel::schedule::Schedule::every(hour), 1)
        .unwrap();
    let before = std::fs::read(&path).unwrap();
    let frames = watch_journal(&path, 2);
    assert_eq!(frames.len(), 2, "{frames:?}");
    for frame in &frames {
        assert_eq!(frame["type"], "watch");
        assert_eq!(frame["pending"], 3, "{frame}");
        assert_eq!(frame["keyed"], 1, "{frame}");
        assert_eq!(frame["schedulers"], 1, "{frame}");
        assert_eq!(frame["due"], 0, "{frame}");
        assert_eq!(frame["damaged"], 0, "{frame}");
        assert!(frame["next_due"].is_string(), "{frame}");
        assert!(frame["overdue_max_ms"].is_null(), "{frame}");
        assert_eq!(frame["journal_bytes"], before.len() as u64, "{frame}");
    }
    assert_eq!(frames[1]["pending_per_s"], 0.0);
    assert_eq!(std::fs::read(&path).unwrap(), before, "the tool wrote");
    // The owner still owns it, and goes on.
    owner.schedule(hour, 1019).unwrap();
    assert_eq!(watch_journal(&path, 1)[0]["pending"], 4);
}

/// A journal closed with a job 50 minutes overdue: `due` counts it and
/// `overdue_max_ms` says how late it is.
#[test]
fn watch_shows_jobs_missed_while_the_owner_is_down() {
    let dir = Scratch::new("admin-watch-missed");
    let path = dir.path("j");
    let hour_ago = SystemTime::now() - Duration::from_secs(3600);
    let (owner, _) = DurableTimer::<u64>::open_with_clock(
        &path,
        SyncPolicy::Always,
        &Default::default(),
        tickwheel::timer::ManualClock::with_wall_time(hour_ago),
        |_| {},
    )
    .unwrap();
    owner.schedule(Duration::from_secs(600), 1).unwrap();
    owner.schedule(Duration::from_secs(7200), 2).unwrap();
    drop(owner);
    let frame = &watch_journal(&path, 1)[0];
    assert_eq!(frame["pending"], 2, "{frame}");
    assert_eq!(frame["due"], 1, "{frame}");
    let late_ms = frame["overdue_max_ms"].as_f64().unwrap();
    assert!((2_990_000.0..3_100_000.0).contains(&late_ms), "{late_ms}");
    let summary = tickwheel::persist::JournalSummary::read(&path, SystemTime::now()).unwrap();
    assert_eq!(
        summary.oldest_due,
        Some(hour_ago + Duration::from_secs(600))
    );
    assert_eq!(summary.next_due, Some(hour_ago + Duration::from_secs(7200)));
    assert!(tickwheel::persist::JournalSummary::read(dir.path("none"), SystemTime::now()).is_err());
}
