//! The server-loop workloads (issue 25): time driven as an event loop
//! drives it, over [`Timers`], so that peers whose handles cannot be copied
//! (nexus-timer, bitwheel) run them too.
//!
//! | workload           | group                               | one operation    | timed part |
//! |--------------------|-------------------------------------|------------------|------------|
//! | [`W1InsertHeld`]   | `w1_insert_held/1M`                 | one insert       | `n` inserts, each handle kept in a reserved `Vec` |
//! | [`W1TickByTick`]   | `w1_tick_by_tick/1M`                | one fired timer  | `advance(now)` once per tick for every tick up to the longest delay + 64, whatever fires (65,600 polls; about 15 fires each) |
//! | [`W4ServerLoop`]   | `w4_server_loop/1M_live_1M_steps`   | one step         | insert + cancel of a random connection's timer, one tick per 1,000 steps, every fired timer re-armed |
//!
//! How they differ from `w1_insert`, `w1_expire` and `w4_churn`:
//!
//! - Handles are kept and handed back as a server would: one per
//!   connection, cancelled at most once, given back when the timer fires
//!   ([`Timers::release_fired`]). No stale key is ever passed in.
//! - `w1_tick_by_tick` polls every tick to the end (a loop does not know
//!   when the last timer has gone), checks each fired value's deadline
//!   against `now`, and schedules with [`Timers::schedule_forget`].
//! - `w4_server_loop` keeps every connection armed: a timer that fires is
//!   re-armed at once (`now` + a delay drawn from its value and `now`, so
//!   the outcome does not depend on the order of ties), collected from the
//!   poll first, as a loop that must not call back into the wheel from
//!   inside its poll does. The live count stays at `live`.
//!
//! Each fired value carries its deadline, its connection and that
//! connection's arm count ([`encode`]), so the workloads count, at no
//! extra memory access, fires before the deadline (early), after it
//! (late), and fires of a timer that had been cancelled (zombies).

use core::mem;
use core::time::Duration;
use std::time::Instant;

use super::{Outcome, Shape, Shaped, OPS_PER_TICK};
use crate::peers::{Rng, Timers, MAX_DELAY};

/// Bits of a value that name the connection (or the W1 timer).
const ID_BITS: u32 = 24;
/// Bits of a value that count the connection's arms, above the id.
const GEN_BITS: u32 = 16;
const DEADLINE_SHIFT: u32 = ID_BITS + GEN_BITS;

/// A fired value as `deadline << 40 | arms << 24 | id`: the deadline it was
/// asked for (up to 2^24 ticks), how many times its connection had been
/// armed (mod 2^16) and the connection (up to 2^24).
#[inline]
fn encode(deadline: u64, arms: u64, id: usize) -> u64 {
    debug_assert!(deadline < 1 << (64 - DEADLINE_SHIFT) && (id as u64) < 1 << ID_BITS);
    (deadline << DEADLINE_SHIFT) | ((arms & ((1 << GEN_BITS) - 1)) << ID_BITS) | id as u64
}

#[inline]
fn deadline_of(value: u64) -> u64 {
    value >> DEADLINE_SHIFT
}

#[inline]
fn id_of(value: u64) -> usize {
    (value & ((1 << ID_BITS) - 1)) as usize
}

#[inline]
fn arms_of(value: u64) -> u64 {
    (value >> ID_BITS) & ((1 << GEN_BITS) - 1)
}

/// What a server-loop run saw: the outcome every exact peer agrees on, and
/// the faults counted on the way.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub(crate) struct Tally {
    pub(crate) outcome: Outcome,
    /// Fires before the deadline asked for, and the most ticks early.
    pub(crate) early: u64,
    pub(crate) max_early: u64,
    /// Fires after it (every workload here polls every tick, so an exact
    /// peer has none).
    pub(crate) late: u64,
    /// Fires of a timer that had been cancelled.
    pub(crate) zombies: u64,
    /// Cancels of a pending timer that answered `None`.
    pub(crate) lost: u64,
    /// Minor page faults during the timed part (`w1_insert_held` only; 0
    /// where `/proc/self/stat` cannot be read). Not part of the outcome.
    /// They include the faults of the handles' `Vec` (about 1,950 for 10^6
    /// handles of 8 bytes), the same for every peer with 8-byte handles.
    pub(crate) faults: u64,
}

/// This process's minor page faults so far (field 10 of `/proc/self/stat`),
/// or 0 off Linux.
fn minor_faults() -> u64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name, which is in parentheses, start at 3.
    stat.rsplit_once(')')
        .and_then(|(_, rest)| rest.split_whitespace().nth(7))
        .and_then(|field| field.parse().ok())
        .unwrap_or(0)
}

impl Tally {
    #[inline]
    fn fired(&mut self, value: u64, now: u64) {
        self.outcome.fired += 1;
        self.outcome.value_sum = self.outcome.value_sum.wrapping_add(value);
        let deadline = deadline_of(value);
        if deadline > now {
            self.early += 1;
            self.max_early = self.max_early.max(deadline - now);
        } else if deadline < now {
            self.late += 1;
        }
    }

    /// True if nothing fired early, late or after its cancel, and no cancel
    /// lost its timer.
    pub(crate) fn exact(&self) -> bool {
        self.early == 0 && self.late == 0 && self.zombies == 0 && self.lost == 0
    }

    /// What every exact peer must agree on (the page faults may differ).
    pub(crate) fn seen(&self) -> (Outcome, u64, u64, u64, u64) {
        (self.outcome, self.early, self.late, self.zombies, self.lost)
    }
}

/// A server-loop workload: like [`Workload`](super::Workload), but over
/// [`Timers`], whose handles may be move-only.
pub(crate) trait LoopWorkload: Shaped {
    /// One iteration on a fresh structure: its timed part, and what it saw.
    fn once<T: Timers>(&self, timers: &mut T) -> (Duration, Tally);

    /// `iters` iterations, each on a fresh structure from `make(capacity)`
    /// (the [`Shape`]'s); structures are made and dropped untimed.
    fn run<T: Timers>(&self, iters: u64, make: &mut impl FnMut(usize) -> T) -> (Duration, Tally) {
        let capacity = self.shape().capacity;
        let mut total = Duration::ZERO;
        let mut tally = Tally::default();
        for _ in 0..iters {
            let mut timers = make(capacity);
            let (time, seen) = self.once(&mut timers);
            total += time;
            tally = seen;
            drop(core::hint::black_box(timers));
        }
        (total, tally)
    }
}

/// W1, insert half, with handles kept: `n` inserts into a structure made
/// for `n`, each handle pushed to a `Vec` reserved for `n`. The handles are
/// cancelled afterwards, untimed (nexus-timer's must go back).
pub(crate) struct W1InsertHeld<'a> {
    pub(super) delays: &'a [u64],
}

impl Shaped for W1InsertHeld<'_> {
    fn shape(&self) -> Shape {
        Shape::timers("w1_insert_held", self.delays.len(), 3)
    }
}

impl LoopWorkload for W1InsertHeld<'_> {
    fn once<T: Timers>(&self, timers: &mut T) -> (Duration, Tally) {
        let mut handles = Vec::with_capacity(self.delays.len());
        let faults = minor_faults();
        let start = Instant::now();
        for (id, &delay) in self.delays.iter().enumerate() {
            handles.push(timers.schedule(delay, encode(delay, 0, id)));
        }
        let time = start.elapsed();
        let mut tally = Tally {
            faults: minor_faults() - faults,
            ..Tally::default()
        };
        for handle in handles {
            match timers.cancel_pending(handle) {
                Some(value) => {
                    tally.outcome.cancelled += 1;
                    tally.outcome.value_sum = tally.outcome.value_sum.wrapping_add(value);
                }
                None => tally.lost += 1,
            }
        }
        (time, tally)
    }
}

/// W1, expire half, as a server loop: `n` timers scheduled (untimed), then
/// `advance(now)` for every tick from 1 to the longest delay + 64.
pub(crate) struct W1TickByTick<'a> {
    pub(super) delays: &'a [u64],
}

impl Shaped for W1TickByTick<'_> {
    fn shape(&self) -> Shape {
        Shape::timers("w1_tick_by_tick", self.delays.len(), 5)
    }
}

impl LoopWorkload for W1TickByTick<'_> {
    fn once<T: Timers>(&self, timers: &mut T) -> (Duration, Tally) {
        for (id, &delay) in self.delays.iter().enumerate() {
            timers.schedule_forget(delay, encode(delay, 0, id));
        }
        let mut tally = Tally::default();
        let start = Instant::now();
        for now in 1..=MAX_DELAY + 64 {
            timers.poll(now, |value| tally.fired(value, now));
        }
        (start.elapsed(), tally)
    }
}

/// W4 as a server loop: `live` connections, each with one armed timer.
/// Each step inserts a timer for a random connection and cancels the one
/// it had; every 1,000 steps time moves one tick, and each fired timer's
/// connection is armed again.
pub(crate) struct W4ServerLoop<'a> {
    pub(super) prefill: &'a [u64],
    pub(super) step_delays: &'a [u64],
    pub(super) victims: &'a [u32],
}

/// A connection: its timer's handle and the value that timer carries.
struct Conn<H> {
    handle: Option<H>,
    value: u64,
}

impl W4ServerLoop<'_> {
    /// Ticks of the re-armed timer of `value` fired at `now`: uniform in
    /// `1..=MAX_DELAY`, a function of both, so the same on every peer
    /// whatever order its ties come out in.
    #[inline]
    fn rearm_delay(value: u64, now: u64) -> u64 {
        Rng::new(value ^ now.rotate_left(32)).delay()
    }
}

impl Shaped for W4ServerLoop<'_> {
    fn shape(&self) -> Shape {
        let (live, steps) = (self.prefill.len(), self.victims.len());
        Shape::held("w4_server_loop", live, steps, "steps", live + 1, 4)
    }
}

impl LoopWorkload for W4ServerLoop<'_> {
    fn once<T: Timers>(&self, timers: &mut T) -> (Duration, Tally) {
        assert!(self.prefill.len() < 1 << ID_BITS);
        let mut conns: Vec<Conn<T::Handle>> = Vec::with_capacity(self.prefill.len());
        for (id, &delay) in self.prefill.iter().enumerate() {
            let value = encode(delay, 0, id);
            let handle = Some(timers.schedule(delay, value));
            conns.push(Conn { handle, value });
        }
        let mut due = Vec::with_capacity(4096);
        let mut tally = Tally::default();
        let mut now = 0;

        let start = Instant::now();
        let chunks = self.step_delays.chunks(OPS_PER_TICK);
        for (delays, victims) in chunks.zip(self.victims.chunks(OPS_PER_TICK)) {
            for (&delay, &victim) in delays.iter().zip(victims) {
                let id = victim as usize;
                let conn = &mut conns[id];
                let value = encode(now + delay, arms_of(conn.value) + 1, id);
                let handle = timers.schedule(now + delay, value);
                let old = conn.handle.replace(handle);
                let old_value = mem::replace(&mut conn.value, value);
                match old.and_then(|old| timers.cancel_pending(old)) {
                    Some(cancelled) => {
                        tally.outcome.cancelled += 1;
                        tally.outcome.value_sum = tally.outcome.value_sum.wrapping_add(cancelled);
                        if cancelled != old_value {
                            tally.lost += 1;
                        }
                    }
                    None => tally.lost += 1,
                }
            }
            now += 1;
            timers.poll(now, |value| due.push(value));
            for value in due.drain(..) {
                tally.fired(value, now);
                let conn = &mut conns[id_of(value)];
                if conn.value != value {
                    tally.zombies += 1;
                    continue;
                }
                if let Some(handle) = conn.handle.take() {
                    timers.release_fired(handle);
                }
                let deadline = now + Self::rearm_delay(value, now);
                conn.value = encode(deadline, arms_of(value) + 1, id_of(value));
                conn.handle = Some(timers.schedule(deadline, conn.value));
            }
        }
        let time = start.elapsed();

        // Untimed: hand every pending handle back.
        for conn in conns {
            if let Some(handle) = conn.handle {
                timers.cancel_pending(handle);
            }
        }
        (time, tally)
    }
}
