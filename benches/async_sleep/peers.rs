//! The four timers, behind one trait: how each makes a sleep, makes one
//! for a deadline, and resets one.

use core::future::Future;
use core::pin::Pin;
use core::time::Duration;
use std::time::Instant;

/// A timer whose sleeps are measured.
pub(crate) trait Peer {
    /// Its sleep future.
    type Sleep: Future + Send + 'static;

    /// Runs `f` where this peer's sleeps can be made: inside the runtime's
    /// context for tokio, as is for the others.
    fn enter<R>(&self, f: impl FnOnce() -> R) -> R {
        f()
    }

    /// A sleep of `after` from now, the way its users write one.
    fn sleep(&self, after: Duration) -> Self::Sleep;

    /// A sleep due at `at`, or as soon after it as the API allows.
    fn sleep_until(&self, at: Instant) -> Self::Sleep;

    /// Resets `sleep` to `base + after` (`after` from now, for the peer
    /// whose reset takes a duration).
    fn reset(&self, sleep: Pin<&mut Self::Sleep>, base: Instant, after: Duration);
}

/// tickwheel: `Timer::sleep`, `sleep_until`, `Sleep::reset`, through a
/// handle with some slack.
pub(crate) struct Wheel(pub(crate) tickwheel::Timer);

impl Peer for Wheel {
    type Sleep = tickwheel::timer::Sleep;

    fn sleep(&self, after: Duration) -> Self::Sleep {
        self.0.sleep(after)
    }

    fn sleep_until(&self, at: Instant) -> Self::Sleep {
        self.0.sleep_until(at)
    }

    fn reset(&self, mut sleep: Pin<&mut Self::Sleep>, base: Instant, after: Duration) {
        sleep.as_mut().reset(base + after);
    }
}

/// tokio: `tokio::time::sleep`, `sleep_until`, `Sleep::reset`, on a
/// current-thread runtime with its time driver.
pub(crate) struct Tokio(pub(crate) tokio::runtime::Runtime);

impl Peer for Tokio {
    type Sleep = tokio::time::Sleep;

    fn enter<R>(&self, f: impl FnOnce() -> R) -> R {
        let _context = self.0.enter();
        f()
    }

    fn sleep(&self, after: Duration) -> Self::Sleep {
        tokio::time::sleep(after)
    }

    fn sleep_until(&self, at: Instant) -> Self::Sleep {
        tokio::time::sleep_until(at.into())
    }

    fn reset(&self, sleep: Pin<&mut Self::Sleep>, base: Instant, after: Duration) {
        sleep.reset((base + after).into());
    }
}

/// futures-timer: `Delay::new`, `Delay::reset`, on its global helper
/// thread. Both take a duration from now; a deadline is turned into one.
pub(crate) struct FuturesTimer;

impl Peer for FuturesTimer {
    type Sleep = futures_timer::Delay;

    fn sleep(&self, after: Duration) -> Self::Sleep {
        futures_timer::Delay::new(after)
    }

    fn sleep_until(&self, at: Instant) -> Self::Sleep {
        // `Delay` adds the duration to its own, later, `Instant::now()`: it
        // is due at `at` or a little after, never before.
        futures_timer::Delay::new(at.saturating_duration_since(Instant::now()))
    }

    fn reset(&self, mut sleep: Pin<&mut Self::Sleep>, _base: Instant, after: Duration) {
        sleep.as_mut().reset(after);
    }
}

/// async-io: `Timer::after`, `Timer::at`, `Timer::set_at`, on its global
/// reactor (the `async-io` thread, as nothing here calls its `block_on`).
pub(crate) struct AsyncIo;

impl Peer for AsyncIo {
    type Sleep = async_io::Timer;

    fn sleep(&self, after: Duration) -> Self::Sleep {
        async_io::Timer::after(after)
    }

    fn sleep_until(&self, at: Instant) -> Self::Sleep {
        async_io::Timer::at(at)
    }

    fn reset(&self, mut sleep: Pin<&mut Self::Sleep>, base: Instant, after: Duration) {
        sleep.as_mut().set_at(base + after);
    }
}

/// Which peer a row belongs to.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// tickwheel with its default slack, 1 ms.
    Tickwheel,
    /// tickwheel through `with_slack(Duration::ZERO)`.
    TickwheelExact,
    Tokio,
    FuturesTimer,
    AsyncIo,
}

impl Kind {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Kind::Tickwheel => "tickwheel (slack 1 ms, default)",
            Kind::TickwheelExact => "tickwheel (slack 0)",
            Kind::Tokio => "tokio",
            Kind::FuturesTimer => "futures-timer",
            Kind::AsyncIo => "async-io",
        }
    }

    /// The size of its sleep future, in bytes (what a task stores inline).
    pub(crate) fn future_size(self) -> usize {
        match self {
            Kind::Tickwheel | Kind::TickwheelExact => size_of::<tickwheel::timer::Sleep>(),
            Kind::Tokio => size_of::<tokio::time::Sleep>(),
            Kind::FuturesTimer => size_of::<futures_timer::Delay>(),
            Kind::AsyncIo => size_of::<async_io::Timer>(),
        }
    }
}

/// The peers of create + drop and of reset.
pub(crate) const OPS_PEERS: [Kind; 4] = [
    Kind::Tickwheel,
    Kind::Tokio,
    Kind::FuturesTimer,
    Kind::AsyncIo,
];

/// The peers of lateness.
pub(crate) const LATENESS_PEERS: [Kind; 5] = [
    Kind::Tickwheel,
    Kind::TickwheelExact,
    Kind::Tokio,
    Kind::FuturesTimer,
    Kind::AsyncIo,
];

/// A current-thread tokio runtime with its time driver: the executor of
/// every lateness run, and tokio's timer in create + drop and reset.
pub(crate) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("build a tokio runtime")
}

/// One of each peer, kept for a whole section, so that each timer is as
/// warm in its later repetitions as futures-timer's and async-io's global
/// ones are.
pub(crate) struct Peers {
    pub(crate) wheel: Wheel,
    pub(crate) exact: Wheel,
    pub(crate) tokio: Tokio,
    pub(crate) futures_timer: FuturesTimer,
    pub(crate) async_io: AsyncIo,
}

impl Peers {
    pub(crate) fn new() -> Self {
        let timer = tickwheel::Timer::new().expect("build a tickwheel timer");
        Peers {
            exact: Wheel(timer.with_slack(Duration::ZERO)),
            wheel: Wheel(timer),
            tokio: Tokio(runtime()),
            futures_timer: FuturesTimer,
            async_io: AsyncIo,
        }
    }
}

/// `on_peer!(peers, kind, |peer| body)`: `body` with `peer` bound to the
/// peer of `kind` in `peers`, whatever its type.
macro_rules! on_peer {
    ($peers:expr, $kind:expr, |$peer:ident| $body:expr) => {
        match $kind {
            $crate::peers::Kind::Tickwheel => {
                let $peer = &$peers.wheel;
                $body
            }
            $crate::peers::Kind::TickwheelExact => {
                let $peer = &$peers.exact;
                $body
            }
            $crate::peers::Kind::Tokio => {
                let $peer = &$peers.tokio;
                $body
            }
            $crate::peers::Kind::FuturesTimer => {
                let $peer = &$peers.futures_timer;
                $body
            }
            $crate::peers::Kind::AsyncIo => {
                let $peer = &$peers.async_io;
                $body
            }
        }
    };
}
pub(crate) use on_peer;
