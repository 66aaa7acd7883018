//! This process's CPU time, for benches that report CPU beside their
//! timings (`precision`, `redis_queue`).

use core::time::Duration;

/// CPU time of the whole process so far, user + system, every thread
/// (including ones that have exited): `getrusage(RUSAGE_SELF)`. Linux
/// derives the total from the scheduler's nanosecond run times, so it
/// resolves microseconds (`/proc/self/stat` counts in 10 ms ticks).
pub(crate) fn process_cpu() -> Duration {
    // SAFETY: `rusage` is plain integers, for which all zeroes is a valid
    // value, and `getrusage` writes only into the struct it is given.
    let usage = unsafe {
        let mut usage: libc::rusage = core::mem::zeroed();
        assert_eq!(
            libc::getrusage(libc::RUSAGE_SELF, &mut usage),
            0,
            "getrusage"
        );
        usage
    };
    let time = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
    };
    time(usage.ru_utime) + time(usage.ru_stime)
}
