//! An adversarial pass over `restore` and its error (`src/persist/`):
//! what a caller gets back when a restore stops, whatever the payload.

use core::error::Error;
use core::time::Duration;
use std::time::SystemTime;

use tickwheel::persist::{MisfirePolicy, PendingJob, RestoreFailure, Snapshot};
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
