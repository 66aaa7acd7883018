//! The operations that `tests/wheel/against_model.rs` (proptest) and the fuzz target
//! (`fuzz/fuzz_targets/wheel_ops.rs`) generate, and the one interpreter,
//! [`Checker`], that applies them to a `Wheel<u32>` and to the reference
//! [`Model`] and compares every answer. One interpreter, so that an op or a
//! check added for one harness is exercised by both.
//!
//! Both crates include this file with `#[path]`, beside `mod model` (the
//! model is `super::model`), so it may use only `tickwheel`, `core`,
//! `alloc` and `std`: nothing of proptest or libfuzzer. Nor the file
//! system, so that it runs under miri.

use tickwheel::{Expired, Geometry, Tick, TimerKey, Wheel};

use super::model::Model;

/// A deadline or a time step, relative to the current time, chosen to hit
/// slot and level boundaries, the overflow list, the past and `u64::MAX`.
#[derive(Debug, Clone, Copy)]
pub(crate) enum When {
    Near(u64),
    Mid(u64),
    /// The next multiple of `2^bit` after now (`bit < 64`), nudged by
    /// -1, 0 or +1.
    Boundary(u32, i8),
    Far(u64),
    Absolute(u64),
    Past(u64),
    Max,
    /// A deadline or time used before, exactly (index mod the count; now if
    /// none yet): ties are where ordering bugs live.
    Repeat(usize),
}

impl When {
    /// The tick this stands for at `now`, given the ticks `used` so far.
    pub(crate) fn resolve(self, now: Tick, used: &[Tick]) -> Tick {
        match self {
            When::Repeat(i) if !used.is_empty() => used[i % used.len()],
            When::Repeat(_) => now,
            When::Near(d) | When::Mid(d) | When::Far(d) => now.saturating_add(d),
            When::Boundary(bit, offset) => {
                let step = 1u64 << bit;
                let boundary = (now | (step - 1)).saturating_add(1);
                boundary.saturating_add_signed(i64::from(offset))
            }
            When::Absolute(t) => t,
            When::Past(d) => now.saturating_sub(d),
            When::Max => u64::MAX,
        }
    }
}

/// One step of a test case. A key operand is an index, mod the count, into
/// every key ever issued, stale ones included (none issued: the op does
/// nothing).
#[derive(Debug, Clone)]
pub(crate) enum Op {
    Insert(When),
    Cancel(usize),
    /// Insert `n` timers at one deadline, then cancel them in order: more
    /// cancels in a row than a batch of deferred unlinks holds.
    InsertThenCancel(When, usize),
    Reset(usize, When),
    /// One `poll`.
    Poll(When),
    /// `advance`, consuming at most `limit` timers (partial iteration).
    Advance(When, Option<usize>),
    /// `contains`, `get` and `deadline` on one key.
    Inspect(usize),
    /// `set_now`, `peek`, then take the peeked timer (`true`) or re-arm it
    /// at a new deadline.
    Peek(When, bool, When),
    /// One step of a tickless driver: `poll` at `next_expiration`, which
    /// must fire a timer or move `now` forward.
    PollNext,
    Drain,
    Clear,
}

/// `Err(message)` unless `cond`.
macro_rules! ensure {
    ($cond:expr, $($msg:tt)+) => {
        if !$cond {
            return Err(format!($($msg)+));
        }
    };
}

/// `Err(message: got …, want …)` unless `got == want`.
macro_rules! ensure_eq {
    ($got:expr, $want:expr, $($msg:tt)+) => {{
        let (got, want) = (&$got, &$want);
        ensure!(got == want, "{}: got {:?}, want {:?}", format_args!($($msg)+), got, want);
    }};
}

/// A wheel and the model, driven in step, with what the ops refer to.
pub(crate) struct Checker {
    wheel: Wheel<u32>,
    model: Model,
    /// Value `v` is the `v`-th insert, made with `keys[v]`: a fired or
    /// peeked value names the key it must come with.
    keys: Vec<TimerKey>,
    /// Every deadline and time given so far, for `When::Repeat`.
    used: Vec<Tick>,
    /// Ops applied, to name the one that failed.
    applied: usize,
}

impl Checker {
    pub(crate) fn new(geometry: Geometry) -> Self {
        Checker {
            wheel: Wheel::with_geometry(geometry),
            model: Model::default(),
            keys: Vec::new(),
            used: Vec::new(),
            applied: 0,
        }
    }

    /// The wheel under test, for harnesses that choose ops from its state.
    // Only the tickless-driver test reads it; the fuzz target does not.
    #[allow(dead_code)]
    pub(crate) fn wheel(&self) -> &Wheel<u32> {
        &self.wheel
    }

    /// Applies `op` to both, compares the answers, then the state every op
    /// must leave consistent.
    pub(crate) fn apply(&mut self, op: &Op) -> Result<(), String> {
        let i = self.applied;
        self.applied += 1;
        self.step(op)
            .and_then(|()| self.check())
            .map_err(|e| format!("op {i}: {op:?}: {e}"))
    }

    /// Lets time run out, compares everything that fires, and checks that
    /// nothing is left behind.
    pub(crate) fn finish(mut self) -> Result<(), String> {
        let got = self
            .wheel
            .advance(u64::MAX)
            .map(|e| fired(&self.keys, e))
            .collect::<Result<Vec<_>, _>>()?;
        let mut want = Vec::new();
        while let Some(x) = self.model.poll(u64::MAX) {
            want.push(x);
        }
        ensure_eq!(got, want, "final advance(u64::MAX)");
        ensure!(self.wheel.is_empty(), "not empty after advance(u64::MAX)");
        ensure_eq!(self.wheel.next_expiration(), None, "final next_expiration");
        ensure_eq!(self.wheel.iter().count(), 0, "final iter().count()");
        if let Some(key) = self.keys.iter().find(|&&key| self.wheel.contains(key)) {
            return Err(format!("{key:?} outlived its timer"));
        }
        Ok(())
    }

    /// Resolves `when` at the current time and remembers the tick.
    fn resolve(&mut self, when: When) -> Tick {
        let tick = when.resolve(self.model.now, &self.used);
        self.used.push(tick);
        tick
    }

    /// The value and key of the `k`-th operand, if any key was issued.
    fn pick(&self, k: usize) -> Option<(u32, TimerKey)> {
        let v = k.checked_rem(self.keys.len())?;
        Some((v as u32, self.keys[v]))
    }

    fn insert(&mut self, deadline: Tick) -> u32 {
        let value = self.keys.len() as u32;
        self.keys.push(self.wheel.insert(deadline, value));
        self.model.insert(deadline, value);
        value
    }

    fn step(&mut self, op: &Op) -> Result<(), String> {
        match *op {
            Op::Insert(when) => {
                let deadline = self.resolve(when);
                self.insert(deadline);
            }
            Op::Cancel(k) => {
                if let Some((v, key)) = self.pick(k) {
                    ensure_eq!(self.wheel.cancel(key), self.model.cancel(v), "cancel");
                }
            }
            Op::InsertThenCancel(when, n) => {
                let deadline = self.resolve(when);
                let first = self.keys.len();
                for _ in 0..n {
                    self.insert(deadline);
                }
                for v in first..self.keys.len() {
                    let got = self.wheel.cancel(self.keys[v]);
                    ensure_eq!(got, self.model.cancel(v as u32), "cancel of value {v}");
                }
            }
            Op::Reset(k, when) => {
                if let Some((v, key)) = self.pick(k) {
                    let deadline = self.resolve(when);
                    let got = self.wheel.reset(key, deadline);
                    ensure_eq!(got, self.model.reset(v, deadline), "reset to {deadline}");
                }
            }
            Op::Poll(step) => {
                let now = self.resolve(step);
                let got = self.wheel.poll(now).map(|e| fired(&self.keys, e));
                ensure_eq!(got.transpose()?, self.model.poll(now), "poll({now})");
            }
            Op::Advance(step, limit) => {
                let now = self.resolve(step);
                let limit = limit.unwrap_or(usize::MAX);
                let got = self
                    .wheel
                    .advance(now)
                    .take(limit)
                    .map(|e| fired(&self.keys, e))
                    .collect::<Result<Vec<_>, _>>()?;
                self.model.now = self.model.now.max(now);
                let mut want = Vec::new();
                while want.len() < limit {
                    match self.model.poll(now) {
                        Some(x) => want.push(x),
                        None => break,
                    }
                }
                ensure_eq!(got, want, "advance({now}) limit {limit}");
            }
            Op::Inspect(k) => {
                if let Some((v, key)) = self.pick(k) {
                    let pending = self.model.pending.get(&v);
                    ensure_eq!(self.wheel.contains(key), pending.is_some(), "contains");
                    ensure_eq!(self.wheel.get(key).copied(), pending.map(|_| v), "get");
                    ensure_eq!(self.wheel.deadline(key), pending.map(|p| p.1), "deadline");
                }
            }
            Op::Peek(step, take, rearm) => {
                let now = self.resolve(step);
                self.wheel.set_now(now);
                let peeked = self.wheel.peek();
                self.model.now = self.model.now.max(now);
                let want = self
                    .model
                    .queue
                    .iter()
                    .next()
                    .filter(|(at, _)| at.0 <= self.model.now)
                    .map(|(_, &v)| (self.model.pending[&v].1, v));
                let Some((key, deadline)) = peeked else {
                    ensure_eq!(None::<(Tick, u32)>, want, "peek() after set_now({now})");
                    return Ok(());
                };
                let Some(&value) = self.wheel.get(key) else {
                    return Err(format!("peeked {key:?} is not pending"));
                };
                ensure_eq!(
                    key,
                    self.keys[value as usize],
                    "peeked key of value {value}"
                );
                ensure_eq!(Some((deadline, value)), want, "peek() after set_now({now})");
                if take {
                    ensure_eq!(self.wheel.cancel(key), self.model.cancel(value), "take");
                } else {
                    let deadline = self.resolve(rearm);
                    let got = self.wheel.reset(key, deadline);
                    ensure_eq!(
                        got,
                        self.model.reset(value, deadline),
                        "re-arm at {deadline}"
                    );
                }
            }
            Op::PollNext => {
                if let Some(next) = self.wheel.next_expiration() {
                    // Remembered for `When::Repeat`: a later deadline exactly
                    // at a cascade point the wheel reported.
                    self.used.push(next);
                    let before = self.wheel.now();
                    let got = self.wheel.poll(next).map(|e| fired(&self.keys, e));
                    let got = got.transpose()?;
                    ensure_eq!(
                        got,
                        self.model.poll(next),
                        "poll({next}) at next_expiration"
                    );
                    // Tickless progress: a driver that sleeps until
                    // `next_expiration` and polls never spins in place.
                    ensure!(
                        got.is_some() || self.wheel.now() > before,
                        "poll({next}) at next_expiration neither fired nor moved now from {before}"
                    );
                }
            }
            Op::Drain => {
                let mut got: Vec<_> = self.wheel.drain().collect();
                let mut want: Vec<_> = self
                    .model
                    .pending
                    .iter()
                    .map(|(&v, &(_, deadline))| (deadline, v))
                    .collect();
                got.sort_unstable();
                want.sort_unstable();
                ensure_eq!(got, want, "drain (sorted)");
                self.model.clear();
            }
            Op::Clear => {
                self.wheel.clear();
                self.model.clear();
            }
        }
        Ok(())
    }

    /// What must hold between any two ops.
    fn check(&self) -> Result<(), String> {
        let (wheel, model) = (&self.wheel, &self.model);
        ensure_eq!(wheel.len(), model.pending.len(), "len");
        ensure_eq!(wheel.is_empty(), model.pending.is_empty(), "is_empty");
        ensure_eq!(wheel.now(), model.now, "now");
        let now = model.now;
        let next = wheel.next_expiration();
        let earliest = model.earliest();
        // A value at or before `now` promises a due timer: otherwise polling
        // there would neither fire nor move time, and a driver would spin.
        if let Some(next) = next.filter(|&next| next <= now) {
            ensure!(
                earliest.is_some_and(|e| e <= now),
                "next_expiration {next} <= now {now} but nothing is due (earliest {earliest:?})"
            );
        }
        // A lower bound, so that a driver sleeping until then is never late.
        match (next, earliest) {
            (None, None) => {}
            (Some(next), Some(earliest)) => ensure!(
                next <= earliest,
                "next_expiration {next} > earliest effective deadline {earliest}"
            ),
            (next, earliest) => {
                return Err(format!(
                    "next_expiration {next:?} but earliest {earliest:?}"
                ))
            }
        }
        Ok(())
    }
}

/// A fired timer as `(deadline, value)`, once its key is checked: value `v`
/// was inserted with `keys[v]`.
fn fired(keys: &[TimerKey], e: Expired<u32>) -> Result<(Tick, u32), String> {
    match keys.get(e.value as usize) {
        Some(&key) if key == e.key => Ok((e.deadline, e.value)),
        _ => Err(format!("fired {e:?} under the wrong key")),
    }
}
