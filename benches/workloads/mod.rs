//! The workloads W1–W4, written once over [`Peer`], and what every bench
//! that plays them shares: their sizes and inputs, the order in which the
//! interleaved peers take turns, and the machine line.
//!
//! Included with `mod workloads;` by `compare.rs` (criterion and interleaved
//! rounds), `tail.rs` (per-batch latency) and `instructions.rs` (callgrind
//! counts). Each bench is its own crate, so each also has `mod peers;`.
//!
//! | workload          | file    | one operation       | timed part                                        | capacity hint |
//! |-------------------|---------|---------------------|---------------------------------------------------|---------------|
//! | [`W1Insert`]      | `w1.rs` | one insert          | `n` inserts into an empty structure               | `n`           |
//! | [`W1Expire`]      | `w1.rs` | one fired timer     | tick-by-tick advance until all `n` have fired     | `n`           |
//! | [`W2CancelAll`]   | `w2.rs` | one insert + cancel | `n` inserts, then `n` cancels in a shuffled order | `n`           |
//! | [`W3ResetHeavy`]  | `w3.rs` | one reset           | resets of random live timers, a tick per 1,000    | `live`        |
//! | [`W4Churn`]       | `w4.rs` | one step            | insert + cancel a random key, a tick per 1,000    | `live + 1`    |
//!
//! `server.rs` holds the server-loop workloads (`w1_insert_held`,
//! `w1_tick_by_tick`, `w4_server_loop`), written over
//! [`Timers`](crate::peers::Timers) so that peers with move-only handles
//! run them too; see there.
//!
//! `shape.rs` holds what a bench group states about either kind of
//! workload ([`Shape`]): its name and size, its operations per iteration,
//! its capacity hint and its measurement time.
//!
//! `machine.rs` holds what a run records beside its numbers: the machine
//! line, the load average and criterion's directory.
//!
//! The capacity hint is the most timers the workload holds live at once (a
//! W4 step inserts before it cancels, hence the `+ 1`). [`Workload::run`]
//! hands it to the `make` closure, so every peer that can reserve gets the
//! same number.
//!
//! A run is split in three: [`Workload::setup`] (untimed: pre-fill the
//! fresh structure), [`Workload::play`] (the measured operations) and
//! [`Workload::check`] (untimed: the outcome is right). `play` calls its
//! `op_done` hook after each of its [`elements`](Shape::elements)
//! operations: a no-op that compiles away for criterion and callgrind, and
//! the batch clock of `tail.rs`. The ticks (`advance`) sit between
//! operations, so a caller that times by operation counts times them too.

pub(crate) mod machine;
#[allow(
    dead_code,
    reason = "compare.rs plays the server loops; tail.rs and instructions.rs do not"
)]
pub(crate) mod server;
mod shape;
mod w1;
mod w2;
mod w3;
mod w4;

use core::hint::black_box;
use core::time::Duration;
use std::time::Instant;

use crate::peers::{self, Peer};

pub(crate) use shape::{Shape, Shaped};
pub(crate) use w1::{W1Expire, W1Insert};
pub(crate) use w2::W2CancelAll;
pub(crate) use w3::W3ResetHeavy;
pub(crate) use w4::W4Churn;

/// Time moves one tick after this many operations in W3 and W4.
pub(crate) const OPS_PER_TICK: usize = 1_000;
/// W3: timers start (and are reset to) this many ticks ahead.
pub(crate) const W3_TIMEOUT: u64 = 30_000;

/// The sizes of every workload.
pub(crate) struct Sizes {
    /// W1 and W2: timers inserted.
    pub(crate) n: usize,
    /// W3: live timers, and resets over them.
    pub(crate) w3_live: usize,
    pub(crate) w3_resets: usize,
    /// W4: pre-filled timers, and steps.
    pub(crate) w4_live: usize,
    pub(crate) w4_steps: usize,
}

impl Sizes {
    pub(crate) const FULL: Sizes = Sizes {
        n: 1_000_000,
        w3_live: 100_000,
        w3_resets: 5_000_000,
        w4_live: 1_000_000,
        w4_steps: 1_000_000,
    };

    /// A smoke test: everything divided by 100.
    pub(crate) const QUICK: Sizes = Sizes {
        n: 10_000,
        w3_live: 1_000,
        w3_resets: 50_000,
        w4_live: 10_000,
        w4_steps: 10_000,
    };
}

/// All random inputs, generated once, before anything is measured.
pub(crate) struct Inputs {
    /// W1, W2, and the W4 pre-fill: delays from tick 0.
    delays: Vec<u64>,
    /// W2: the order of the cancels (a permutation of `0..n`).
    cancel_order: Vec<u32>,
    /// W3: which live timer each reset hits.
    reset_targets: Vec<u32>,
    /// W4: each step's insert delay and the position of its victim in the
    /// key list.
    step_delays: Vec<u64>,
    step_victims: Vec<u32>,
    /// The sizes these were made for.
    n: usize,
    w3_live: usize,
    w4_live: usize,
}

impl Inputs {
    pub(crate) fn new(sizes: &Sizes) -> Self {
        Inputs {
            delays: peers::delays(0x5EED_0001, sizes.n.max(sizes.w4_live)),
            cancel_order: peers::permutation(0x5EED_0002, sizes.n),
            reset_targets: peers::indices(0x5EED_0003, sizes.w3_resets, sizes.w3_live),
            step_delays: peers::delays(0x5EED_0004, sizes.w4_steps),
            step_victims: peers::indices(0x5EED_0005, sizes.w4_steps, sizes.w4_live),
            n: sizes.n,
            w3_live: sizes.w3_live,
            w4_live: sizes.w4_live,
        }
    }

    pub(crate) fn w1_insert(&self) -> W1Insert<'_> {
        W1Insert {
            delays: &self.delays[..self.n],
        }
    }

    pub(crate) fn w1_expire(&self) -> W1Expire<'_> {
        W1Expire {
            delays: &self.delays[..self.n],
        }
    }

    pub(crate) fn w2(&self) -> W2CancelAll<'_> {
        W2CancelAll {
            delays: &self.delays[..self.n],
            order: &self.cancel_order,
        }
    }

    pub(crate) fn w3(&self) -> W3ResetHeavy<'_> {
        W3ResetHeavy {
            live: self.w3_live,
            targets: &self.reset_targets,
        }
    }

    #[allow(
        dead_code,
        reason = "compare.rs plays the server loops; tail.rs and instructions.rs do not"
    )]
    pub(crate) fn w1_insert_held(&self) -> server::W1InsertHeld<'_> {
        server::W1InsertHeld {
            delays: &self.delays[..self.n],
        }
    }

    #[allow(
        dead_code,
        reason = "compare.rs plays the server loops; tail.rs and instructions.rs do not"
    )]
    pub(crate) fn w1_tick_by_tick(&self) -> server::W1TickByTick<'_> {
        server::W1TickByTick {
            delays: &self.delays[..self.n],
        }
    }

    #[allow(
        dead_code,
        reason = "compare.rs plays the server loops; tail.rs and instructions.rs do not"
    )]
    pub(crate) fn w4_server_loop(&self) -> server::W4ServerLoop<'_> {
        server::W4ServerLoop {
            prefill: &self.delays[..self.w4_live],
            step_delays: &self.step_delays,
            victims: &self.step_victims,
        }
    }

    pub(crate) fn w4(&self) -> W4Churn<'_> {
        W4Churn {
            prefill: &self.delays[..self.w4_live],
            step_delays: &self.step_delays,
            victims: &self.step_victims,
        }
    }
}

/// What a run observed; every peer must agree on it.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub(crate) struct Outcome {
    pub(crate) fired: u64,
    pub(crate) cancelled: u64,
    /// Wrapping sum of every value fired or returned by a cancel.
    pub(crate) value_sum: u64,
}

/// One workload: a group of benchmarks, one per peer.
pub(crate) trait Workload: Shaped {
    /// Untimed: fills a fresh structure and returns the keys
    /// [`play`](Workload::play) needs (with room for any it adds).
    fn setup<P: Peer>(&self, peer: &mut P) -> Vec<P::Key>;

    /// The measured operations, calling `op_done` after each one.
    fn play<P: Peer>(
        &self,
        peer: &mut P,
        keys: &mut Vec<P::Key>,
        op_done: &mut impl FnMut(),
    ) -> Outcome;

    /// Untimed: panics unless `outcome` is what every correct peer sees.
    fn check(&self, outcome: &Outcome) {
        let _ = outcome;
    }

    /// Runs `iters` iterations, each on a fresh structure from
    /// `make(capacity)` (the [`Shape`]'s), and returns the time spent in
    /// [`play`](Workload::play) only.
    fn run<P: Peer>(&self, iters: u64, make: &mut impl FnMut(usize) -> P) -> (Duration, Outcome) {
        let capacity = self.shape().capacity;
        let mut total = Duration::ZERO;
        let mut outcome = Outcome::default();
        for _ in 0..iters {
            let mut peer = make(capacity);
            let mut keys = self.setup(&mut peer);
            let start = Instant::now();
            outcome = self.play(&mut peer, &mut keys, &mut || {});
            total += start.elapsed();
            self.check(&outcome);
            drop(black_box((peer, keys)));
        }
        (total, outcome)
    }
}

/// The interleaved peers, by index: tickwheel, binary_heap, lean_heap.
pub(crate) const WHEEL: usize = 0;
pub(crate) const HEAP: usize = 1;
pub(crate) const LEAN: usize = 2;

/// Every order of the three interleaved peers, cycled through round by
/// round: each peer moves first, second and last equally often, and each
/// goes before each other equally often. The first three alone are a Latin
/// square: each peer moves first, second and last once.
pub(crate) const TURN_ORDERS: [[usize; 3]; 6] = [
    [WHEEL, HEAP, LEAN],
    [HEAP, LEAN, WHEEL],
    [LEAN, WHEEL, HEAP],
    [WHEEL, LEAN, HEAP],
    [LEAN, HEAP, WHEEL],
    [HEAP, WHEEL, LEAN],
];
