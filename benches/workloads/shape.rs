//! What a bench group states about its workload, whichever trait plays it:
//! [`Workload`](super::Workload) over [`Peer`](crate::peers::Peer), or
//! [`LoopWorkload`](super::server::LoopWorkload) over
//! [`Timers`](crate::peers::Timers). Both extend [`Shaped`], so the group's
//! name, size and timing are worked out here once.

use core::time::Duration;

/// A workload as its bench group states it.
pub(crate) struct Shape {
    /// `workload/size`.
    pub(crate) group: String,
    /// Operations per iteration: criterion's throughput, the divisor of ns
    /// per operation, and how many times
    /// [`Workload::play`](super::Workload::play) calls `op_done`.
    pub(crate) elements: u64,
    /// The most timers live at once: the capacity every peer that can
    /// reserve is created with.
    pub(crate) capacity: usize,
    /// Criterion's measurement time for the group.
    pub(crate) measurement_time: Duration,
}

impl Shape {
    /// `n` timers, one operation each, all live at once: `name/1M`.
    pub(crate) fn timers(name: &str, n: usize, seconds: u64) -> Self {
        Shape {
            group: format!("{name}/{}", label(n)),
            elements: n as u64,
            capacity: n,
            measurement_time: Duration::from_secs(seconds),
        }
    }

    /// `ops` operations (each one of `unit`: `resets`, `steps`) over `live`
    /// timers held throughout, at most `capacity` live at once:
    /// `name/1M_live_1M_steps`.
    pub(crate) fn held(
        name: &str,
        live: usize,
        ops: usize,
        unit: &str,
        capacity: usize,
        seconds: u64,
    ) -> Self {
        Shape {
            group: format!("{name}/{}_live_{}_{unit}", label(live), label(ops)),
            elements: ops as u64,
            capacity,
            measurement_time: Duration::from_secs(seconds),
        }
    }
}

/// A workload of either kind, by its [`Shape`].
pub(crate) trait Shaped {
    fn shape(&self) -> Shape;
}

/// `1_000_000` → `1M`, `100_000` → `100k`.
fn label(n: usize) -> String {
    match n {
        n if n >= 1_000_000 && n % 1_000_000 == 0 => format!("{}M", n / 1_000_000),
        n if n >= 1_000 && n % 1_000 == 0 => format!("{}k", n / 1_000),
        n => n.to_string(),
    }
}
