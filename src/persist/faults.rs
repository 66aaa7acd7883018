//! Faults a unit test injects into the journal, and the tests that need
//! them. An fsync that fails while writes succeed cannot be made on a
//! real file here (`ulimit -f` fails writes, never an fsync), so these
//! stand in for a disk that fails one fsync, then the next write.

use core::sync::atomic::AtomicBool;

/// What the journal fails next.
#[derive(Default)]
pub(super) struct Faults {
    /// The next fsync fails, and then the next write.
    pub(super) sync_then_write: AtomicBool,
    /// The next write fails.
    pub(super) write: AtomicBool,
}

#[cfg(test)]
mod tests {
    use alloc::format;
    use alloc::vec;
    use alloc::vec::Vec;
    use core::sync::atomic::Ordering;
    use core::time::Duration;
    use std::path::{Path, PathBuf};
    use std::time::SystemTime;

    use super::super::format::Record;
    use super::super::{DurableTimer, MisfirePolicy, Payload, SyncPolicy};
    use crate::timer::ScheduleErrorKind;

    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("tickwheel-faults-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir.join("journal")
    }

    fn open(path: &Path) -> (DurableTimer<u64>, Vec<u64>) {
        let (timer, recovery) =
            DurableTimer::open(path, SyncPolicy::Always, &MisfirePolicy::default(), |_| {})
                .unwrap();
        let ids = recovery.outcomes.iter().map(|(id, _)| *id).collect();
        (timer, ids)
    }

    /// A schedule whose record was written but not synced is refused and
    /// written off; when the cancel record cannot be written either, the
    /// schedule record (the file's last) is cut off. It stayed, and the
    /// next open ran the job whose call had been refused.
    #[test]
    fn a_refused_schedule_whose_write_off_fails_does_not_come_back() {
        let path = scratch("tail");
        let (timer, _) = open(&path);
        let kept = timer.schedule(Duration::from_secs(3600), 1).unwrap();
        timer
            .log
            .faults
            .sync_then_write
            .store(true, Ordering::Release);
        let refused = timer.schedule(Duration::from_secs(3600), 2).unwrap_err();
        assert_eq!(refused.kind(), ScheduleErrorKind::Journal);
        assert_eq!(refused.into_inner(), 2);
        assert_eq!(timer.write_errors(), 1);
        let after = timer.schedule(Duration::from_secs(3600), 3).unwrap();
        drop(timer);
        let (_timer, restored) = open(&path);
        assert_eq!(restored, vec![kept.id(), after.id()]);
        let _ = std::fs::remove_dir_all(path.parent().unwrap());
    }

    /// A job written off whose record is not the file's last (here, as
    /// when the timer refuses a written job) leaves the file by a
    /// compaction when its cancel cannot be written.
    #[test]
    fn a_write_off_that_cannot_be_written_compacts_the_job_away() {
        let path = scratch("middle");
        let (timer, _) = open(&path);
        let log = &timer.log;
        let due = SystemTime::now() + Duration::from_secs(3600);
        let record = |id| Record::Schedule {
            id,
            due,
            payload: 7u64.encode(),
        };
        log.append(record(1_000)).unwrap();
        log.append(record(1_001)).unwrap();
        log.faults.write.store(true, Ordering::Release);
        log.write_off(1_000);
        assert_eq!(timer.write_errors(), 1);
        assert_eq!(timer.compaction_failures(), 0);
        drop(timer);
        let (_timer, restored) = open(&path);
        assert_eq!(restored, vec![1_001]);
        let _ = std::fs::remove_dir_all(path.parent().unwrap());
    }
}
