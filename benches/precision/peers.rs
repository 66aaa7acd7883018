//! The peers of `precision.rs`: how each is built, and which play each
//! workload (the module docs of `precision.rs` say what each one is).

use core::time::Duration;

/// tickwheel's default tick.
pub(crate) const MICRO: Duration = Duration::from_micros(1);
/// The old default tick.
pub(crate) const MILLI: Duration = Duration::from_millis(1);
/// `SpinningClock`'s spin before each deadline.
pub(crate) const SPIN: Duration = Duration::from_micros(200);

/// How a tickwheel peer's `Timer` is built and used.
#[derive(Clone, Copy)]
pub(crate) struct Wheel {
    pub(crate) tick: Duration,
    /// `SpinningClock`'s spin, or `None` for `SystemClock`.
    pub(crate) spin: Option<Duration>,
    /// The builder's slack, and the slack of coarse timers (every timer of
    /// `uniform`).
    pub(crate) coarse: Duration,
    /// The slack of `mixed`'s precise timers.
    pub(crate) precise: Duration,
}

#[derive(Clone, Copy)]
pub(crate) enum Engine {
    PreciseHeap,
    /// The JDK's `ScheduledThreadPoolExecutor`, in a process of its own.
    Jdk,
    Tickwheel(Wheel),
}

#[derive(Clone, Copy)]
pub(crate) struct Peer {
    pub(crate) name: &'static str,
    pub(crate) engine: Engine,
}

impl Peer {
    const HEAP: Peer = Peer {
        name: "precise heap",
        engine: Engine::PreciseHeap,
    };

    const JDK: Peer = Peer {
        name: "JDK STPE (1 thread)",
        engine: Engine::Jdk,
    };

    const fn wheel(name: &'static str, tick: Duration, slack: Duration) -> Peer {
        Peer::wheel_with(name, tick, None, slack, slack)
    }

    const fn wheel_with(
        name: &'static str,
        tick: Duration,
        spin: Option<Duration>,
        coarse: Duration,
        precise: Duration,
    ) -> Peer {
        Peer {
            name,
            engine: Engine::Tickwheel(Wheel {
                tick,
                spin,
                coarse,
                precise,
            }),
        }
    }

    /// Tick + slack of this peer's coarse or precise timers: how late after
    /// its requested deadline a timer is still inside its window. `None`
    /// for the heap.
    pub(crate) fn window(self, precise: bool) -> Option<Duration> {
        match self.engine {
            Engine::PreciseHeap | Engine::Jdk => None,
            Engine::Tickwheel(wheel) => {
                Some(wheel.tick + if precise { wheel.precise } else { wheel.coarse })
            }
        }
    }
}

pub(crate) const UNIFORM_PEERS: [Peer; 12] = [
    Peer::HEAP,
    Peer::JDK,
    Peer::wheel("tickwheel slack 0", MICRO, Duration::ZERO),
    Peer::wheel("tickwheel slack 50 µs", MICRO, Duration::from_micros(50)),
    Peer::wheel("tickwheel slack 100 µs", MICRO, Duration::from_micros(100)),
    Peer::wheel("tickwheel slack 120 µs", MICRO, Duration::from_micros(120)),
    Peer::wheel("tickwheel slack 130 µs", MICRO, Duration::from_micros(130)),
    Peer::wheel("tickwheel slack 140 µs", MICRO, Duration::from_micros(140)),
    Peer::wheel(
        "tickwheel slack 1 ms (default)",
        MICRO,
        tickwheel::timer::DEFAULT_SLACK,
    ),
    Peer::wheel("tickwheel slack 10 ms", MICRO, Duration::from_millis(10)),
    Peer::wheel(
        "tickwheel 1 ms tick, slack 0 (old default)",
        MILLI,
        Duration::ZERO,
    ),
    Peer::wheel_with(
        "tickwheel slack 0 + spin 200 µs",
        MICRO,
        Some(SPIN),
        Duration::ZERO,
        Duration::ZERO,
    ),
];

pub(crate) const MIXED_PEERS: [Peer; 2] = [
    Peer::HEAP,
    Peer::wheel_with(
        "tickwheel slack 10 ms / 0",
        MICRO,
        None,
        Duration::from_millis(10),
        Duration::ZERO,
    ),
];
