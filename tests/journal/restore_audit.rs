//! An adversarial pass over `restore` and its error (`src/persist/`):
//! what a caller gets back when a restore stops, whatever the payload.

use core::error::Error;
use core::time::Duration;
use std::time::SystemTime;

use crossbeam_channel::{Receiver, Sender};
use tickwheel::persist::{MisfirePolicy, Outcome, PendingJob, RestoreFailure, Snapshot};
use tickwheel::timer::ManualClock;
use tickwheel::timer::ScheduleErrorKind;
use tickwheel::Timer;

fn snapshot<T>(values: Vec<T>) -> Snapshot<T> {
    let due = SystemTime::now() + Duration::from_secs(3600);
    Snapshot {
        version: Snapshot::<T>::VERSION,
        taken_at: SystemTime::now(),
        jobs: values
            .into_iter()
            .map(|value| PendingJob {
                due,
                repeat: None,
                value,
            })
            .collect(),
    }
}

/// A payload with no `Debug`, as many are (a connection, a closure's
/// data, a type from another crate).
#[derive(Clone)]
struct Opaque(u32);

/// A restore refused by a shut-down timer is an error like any other,
/// whatever the payload: it goes into a `Box<dyn Error>` with `?`, and
/// its `Debug` says what went wrong without printing the values it hands
/// back, as `ScheduleError`, `Rejected` and `CapacityError` do. Before,
/// `Error` was implemented only for `T: Debug` (this did not compile) and
/// `Debug`, derived, printed every remaining job's value: a snapshot of
/// 10⁵ jobs printed 10⁵ values into a log line, secrets included.
#[test]
fn a_restore_error_is_an_error_for_any_payload_and_hides_the_values() {
    let (timer, _fired) = Timer::<Opaque, _>::with_channel().unwrap();
    timer.shutdown();
    let result = timer.restore(
        snapshot(vec![Opaque(1), Opaque(2)]),
        &MisfirePolicy::default(),
    );
    let Err(err) = result else {
        panic!("a shut-down timer restored jobs")
    };
    assert_eq!(
        err.reason,
        RestoreFailure::Schedule(ScheduleErrorKind::Shutdown)
    );
    let boxed: Box<dyn Error + Send + Sync> = Box::new(err);
    assert_eq!(
        boxed.to_string(),
        "restore stopped with 2 jobs left: timer is shut down"
    );
    let shown = format!("{boxed:?}");
    assert!(
        shown.contains("Shutdown") && shown.contains("remaining"),
        "{shown}"
    );

    let (timer, _fired) = Timer::<String, _>::with_channel().unwrap();
    timer.shutdown();
    let err = timer
        .restore(
            snapshot(vec![String::from("password=hunter2")]),
            &MisfirePolicy::default(),
        )
        .unwrap_err();
    let shown = format!("{err:?}");
    assert!(!shown.contains("hunter2"), "the payload leaked: {shown}");
    // The values are all still there, for the caller to take.
    assert_eq!(err.remaining[0].value, "password=hunter2");
}

impl tickwheel::persist::Payload for Opaque {
    fn encode(&self) -> Vec<u8> {
        self.0.to_le_bytes().to_vec()
    }
    fn decode(bytes: &[u8]) -> Option<Self> {
        Some(Opaque(u32::from_le_bytes(bytes.try_into().ok()?)))
    }
}

/// The same for what `DurableTimer::open` reports: before, a `Recovery`
/// of a payload without `Debug` could not be logged with `{:?}` at all,
/// and the `Debug` of one with it printed every dead letter's value (and
/// the raw bytes of every undecodable one).
#[test]
fn a_recovery_needs_no_debug_payload_and_hides_the_dead_letters() {
    use tickwheel::persist::{DurableTimer, OnMissed, SyncPolicy};
    use tickwheel::timer::ManualClock;

    let scratch = crate::scratch::Scratch::new("restore-audit-recovery");
    let path = scratch.path("j");
    let noon = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    let (jobs, recovery) = DurableTimer::<Opaque>::open_with_clock(
        &path,
        SyncPolicy::Never,
        &MisfirePolicy::default(),
        ManualClock::with_wall_time(noon),
        |_| {},
    )
    .unwrap();
    assert!(format!("{recovery:?}").contains("found: Nothing"));
    drop(jobs);

    let open = |wall: SystemTime| {
        let policy = MisfirePolicy::default().on_missed(OnMissed::DeadLetter);
        DurableTimer::<String>::open_with_clock(
            &path,
            SyncPolicy::Never,
            &policy,
            ManualClock::with_wall_time(wall),
            |_| {},
        )
        .unwrap()
    };
    let (jobs, _) = open(noon);
    jobs.schedule(Duration::from_secs(1), String::from("password=hunter2"))
        .unwrap();
    drop(jobs);
    let (jobs, recovery) = open(noon + Duration::from_secs(3600));
    assert_eq!(recovery.dead_letters[0].value, "password=hunter2");
    let shown = format!("{recovery:?}");
    assert!(!shown.contains("hunter2"), "the payload leaked: {shown}");
    assert!(shown.contains("dead_letters: [1 jobs]"), "{shown}");
    drop(jobs);
}

/// A timer on a manual clock at wall time `wall`, with one shard (order
/// is kept within a shard) and no slack, whose fired values come down a
/// channel.
fn one_shard(wall: SystemTime, max_pending: usize) -> (Timer<u32, Sender<u32>>, Receiver<u32>) {
    let (tx, rx) = crossbeam_channel::unbounded();
    let timer = Timer::builder()
        .clock(ManualClock::with_wall_time(wall))
        .shards(1)
        .slack(Duration::ZERO)
        .max_pending(max_pending)
        .executor(tx)
        .build()
        .unwrap();
    (timer, rx)
}

/// Jobs scheduled 30, 10 and 20 ms ahead, in that order, then snapshotted.
fn thirty_ten_twenty(noon: SystemTime) -> Snapshot<u32> {
    let (before, _) = one_shard(noon, usize::MAX);
    for (value, ms) in [(30, 30), (10, 10), (20, 20)] {
        before.schedule(ms * MS, value).unwrap();
    }
    let snapshot = before.shutdown_snapshot();
    // The snapshot lists them as stored: not in due order.
    let listed: Vec<u32> = snapshot.jobs.iter().map(|job| job.value).collect();
    assert_eq!(listed, [30, 10, 20]);
    snapshot
}

const MS: Duration = Duration::from_millis(1);

/// Jobs overdue at the restart all fall due at once, late within the
/// threshold or missed and fired now; they run in due order, as the
/// original timer would have run them had it been late. Before, they ran
/// in the snapshot's order (the order the shard stored them in, here 30,
/// 10, 20), so a job due an hour after another could run before it, and
/// a `DurableTimer` ran its overdue jobs in id order after a reset.
#[test]
fn overdue_jobs_run_in_due_order_whatever_the_snapshots_order() {
    let noon = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    let snapshot = thirty_ten_twenty(noon);
    for down in [Duration::from_secs(1), Duration::from_secs(3600)] {
        let (after, fired) = one_shard(noon + down, usize::MAX);
        after
            .restore(snapshot.clone(), &MisfirePolicy::default())
            .unwrap();
        after.sync();
        assert_eq!(
            fired.try_iter().collect::<Vec<_>>(),
            [10, 20, 30],
            "{down:?}"
        );
    }
    // The outcomes stay in the snapshot's order (30, 10, 20): 25 ms after
    // noon with a 12 ms threshold, 10 was missed and 20 is only late.
    let (after, fired) = one_shard(noon + 25 * MS, usize::MAX);
    let policy = MisfirePolicy::default().threshold(12 * MS);
    let report = after.restore(snapshot, &policy).unwrap();
    assert!(matches!(
        report.outcomes[..],
        [
            Outcome::Scheduled(_),
            Outcome::FiredNow(_),
            Outcome::Scheduled(_)
        ]
    ));
    after.sync();
    assert_eq!(fired.try_iter().collect::<Vec<_>>(), [10, 20]);
}

/// The same order decides what a refused restore leaves out: the earliest
/// jobs are restored, and both lists keep the snapshot's order.
#[test]
fn a_full_timer_restores_the_earliest_jobs_and_hands_back_the_rest() {
    let noon = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    let snapshot = thirty_ten_twenty(noon);
    let (after, fired) = one_shard(noon, 2);
    let err = after
        .restore(snapshot, &MisfirePolicy::default())
        .unwrap_err();
    assert_eq!(
        err.reason,
        RestoreFailure::Schedule(ScheduleErrorKind::Full)
    );
    let left: Vec<u32> = err.remaining.iter().map(|job| job.value).collect();
    assert_eq!(left, [30]);
    assert_eq!(err.restored.outcomes.len(), 2);
    assert!(fired.try_iter().next().is_none());
}

/// `DurableTimer::open` restores its jobs through `restore`: its overdue
/// jobs run in due order too. Before, they ran in id order (the journal's
/// order), wrong once a reset had moved a job past a later one: here
/// job 17, reset from 10 s to 30 s, ran before job 18, due at 20 s.
#[test]
fn a_durable_timer_runs_its_overdue_jobs_in_due_order_after_a_reset() {
    use alloc::sync::Arc;
    use std::sync::Mutex;
    use tickwheel::persist::{DurableTimer, SyncPolicy};

    let scratch = crate::scratch::Scratch::new("restore-audit-durable-order");
    let path = scratch.path("j");
    let noon = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    let (jobs, _) = crate::journals::open_frozen(&path, noon);
    let seventeen = jobs.schedule(Duration::from_secs(10), 17).unwrap();
    jobs.schedule(Duration::from_secs(20), 18).unwrap();
    assert!(jobs.reset(seventeen, Duration::from_secs(30)));
    drop(jobs);

    let ran: Arc<Mutex<Vec<u64>>> = Arc::default();
    let sink = Arc::clone(&ran);
    let (jobs, recovery) = DurableTimer::open_with_clock(
        &path,
        SyncPolicy::Always,
        &MisfirePolicy::default(),
        ManualClock::with_wall_time(noon + Duration::from_secs(3600)),
        move |value: u64| sink.lock().unwrap().push(value),
    )
    .unwrap();
    assert_eq!(recovery.outcomes.len(), 2);
    let give_up = std::time::Instant::now() + Duration::from_secs(10);
    while ran.lock().unwrap().len() < 2 {
        assert!(std::time::Instant::now() < give_up, "{ran:?}");
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(*ran.lock().unwrap(), [18, 17]);
    drop(jobs);
}
