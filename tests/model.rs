//! Random operation sequences on `Wheel` against a reference model, a
//! `BTreeMap<(effective deadline, seq), _>`, on geometries from 2 slots × 1
//! level to the default. Asserts exact equality of what fires, in what order,
//! with what deadline, and of `len`, `get`, `deadline` and `iter` throughout.

extern crate alloc;

use proptest::prelude::*;
use tickwheel::{Geometry, Tick, TimerKey, Wheel};

#[path = "support/model.rs"]
mod support_model;
use support_model::Model;

/// A deadline or a time step, relative to the current time, chosen to hit
/// slot and level boundaries, the overflow list, the past and `u64::MAX`.
#[derive(Debug, Clone)]
enum When {
    Near(u64),
    Mid(u64),
    Boundary(u32, i8),
    Far(u64),
    Absolute(u64),
    Past(u64),
    Max,
    /// A deadline used before, exactly: ties are where ordering bugs live.
    Repeat(usize),
}

impl When {
    fn resolve(&self, now: Tick, used: &[Tick]) -> Tick {
        match *self {
            When::Repeat(i) if !used.is_empty() => used[i % used.len()],
            When::Repeat(_) => now,
            When::Near(d) | When::Mid(d) | When::Far(d) => now.saturating_add(d),
            When::Boundary(bit, offset) => {
                let step = 1u64 << bit;
                // The next multiple of 2^bit, nudged by -1, 0 or +1.
                let boundary = (now | (step - 1)).saturating_add(1);
                boundary.saturating_add_signed(offset as i64)
            }
            When::Absolute(t) => t,
            When::Past(d) => now.saturating_sub(d),
            When::Max => u64::MAX,
        }
    }
}

fn when() -> impl Strategy<Value = When> {
    prop_oneof![
        // A few ticks ahead: on tiny wheels this already crosses slots,
        // levels and the overflow list.
        4 => (0u64..4).prop_map(When::Near),
        4 => (0u64..70).prop_map(When::Near),
        3 => (0u64..5_000).prop_map(When::Mid),
        3 => (0u32..45, -1i8..=1).prop_map(|(b, o)| When::Boundary(b, o)),
        1 => (0u64..1 << 42).prop_map(When::Far),
        1 => any::<u64>().prop_map(When::Absolute),
        1 => (0u64..100).prop_map(When::Past),
        1 => Just(When::Max),
        3 => any::<usize>().prop_map(When::Repeat),
    ]
}

/// A time step: mostly small, sometimes a jump of any size.
fn step() -> impl Strategy<Value = When> {
    prop_oneof![
        6 => (0u64..4).prop_map(When::Near),
        3 => (0u64..300).prop_map(When::Near),
        2 => (0u64..20_000).prop_map(When::Mid),
        2 => (0u32..45, -1i8..=1).prop_map(|(b, o)| When::Boundary(b, o)),
        1 => (0u64..1 << 42).prop_map(When::Far),
        1 => any::<u64>().prop_map(When::Absolute),
        1 => Just(When::Max),
        2 => any::<usize>().prop_map(When::Repeat),
    ]
}

#[derive(Debug, Clone)]
enum Op {
    Insert(When),
    /// Index into every key ever issued (stale ones included).
    Cancel(usize),
    /// Insert `n` timers at one deadline, then cancel them in order: more
    /// cancels in a row than a batch of deferred unlinks holds.
    InsertThenCancel(When, usize),
    Reset(usize, When),
    /// One `poll`.
    Poll(When),
    /// `advance`, consuming at most `limit` timers (partial iteration).
    Advance(When, Option<usize>),
    /// Read-only checks on one key.
    Inspect(usize),
    /// `peek`, then take the timer (`true`) or re-arm it at a new deadline.
    Peek(When, bool, When),
    Drain,
    Clear,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        10 => when().prop_map(Op::Insert),
        3 => any::<usize>().prop_map(Op::Cancel),
        1 => (when(), 0usize..if cfg!(miri) { 40 } else { 80 }).prop_map(|(w, n)| Op::InsertThenCancel(w, n)),
        4 => (any::<usize>(), when()).prop_map(|(k, w)| Op::Reset(k, w)),
        4 => step().prop_map(Op::Poll),
        4 => (step(), proptest::option::of(0usize..6)).prop_map(|(w, l)| Op::Advance(w, l)),
        2 => any::<usize>().prop_map(Op::Inspect),
        3 => (step(), any::<bool>(), when()).prop_map(|(s, t, w)| Op::Peek(s, t, w)),
        1 => Just(Op::Drain),
        1 => Just(Op::Clear),
    ]
}

fn run(geometry: Geometry, ops: &[Op]) -> Result<(), TestCaseError> {
    let mut wheel: Wheel<u32> = Wheel::with_geometry(geometry);
    let mut model = Model::default();
    let mut keys: Vec<(TimerKey, u32)> = Vec::new();
    let mut next_value = 0u32;
    // Every deadline and time given so far, for `When::Repeat`.
    let mut used: Vec<Tick> = Vec::new();
    let mut resolve = |when: &When, now: Tick| {
        let tick = when.resolve(now, &used);
        used.push(tick);
        tick
    };

    for op in ops {
        match op {
            Op::Insert(when) => {
                let deadline = resolve(when, model.now);
                let key = wheel.insert(deadline, next_value);
                model.insert(deadline, next_value);
                keys.push((key, next_value));
                next_value += 1;
            }
            Op::Cancel(i) if !keys.is_empty() => {
                let (key, value) = keys[i % keys.len()];
                prop_assert_eq!(wheel.cancel(key), model.cancel(value), "cancel {:?}", key);
            }
            Op::InsertThenCancel(when, n) => {
                let deadline = resolve(when, model.now);
                let first = keys.len();
                for _ in 0..*n {
                    keys.push((wheel.insert(deadline, next_value), next_value));
                    model.insert(deadline, next_value);
                    next_value += 1;
                }
                for &(key, value) in &keys[first..] {
                    prop_assert_eq!(wheel.cancel(key), model.cancel(value), "cancel {:?}", key);
                }
            }
            Op::Reset(i, when) if !keys.is_empty() => {
                let (key, value) = keys[i % keys.len()];
                let deadline = resolve(when, model.now);
                prop_assert_eq!(wheel.reset(key, deadline), model.reset(value, deadline));
            }
            Op::Poll(step) => {
                let now = resolve(step, model.now);
                let got = wheel.poll(now).map(|e| (e.deadline, e.value));
                prop_assert_eq!(got, model.poll(now), "poll({})", now);
            }
            Op::Advance(step, limit) => {
                let now = resolve(step, model.now);
                let got: Vec<_> = wheel
                    .advance(now)
                    .take(limit.unwrap_or(usize::MAX))
                    .map(|e| (e.deadline, e.value))
                    .collect();
                model.now = model.now.max(now);
                let mut want = Vec::new();
                while want.len() < limit.unwrap_or(usize::MAX) {
                    match model.poll(now) {
                        Some(fired) => want.push(fired),
                        None => break,
                    }
                }
                prop_assert_eq!(got, want, "advance({}) limit {:?}", now, limit);
            }
            Op::Inspect(i) if !keys.is_empty() => {
                let (key, value) = keys[i % keys.len()];
                let pending = model.pending.get(&value);
                prop_assert_eq!(wheel.contains(key), pending.is_some());
                prop_assert_eq!(wheel.get(key).copied(), pending.map(|_| value));
                prop_assert_eq!(wheel.deadline(key), pending.map(|p| p.1));
            }
            Op::Peek(step, take, rearm) => {
                let now = resolve(step, model.now);
                wheel.set_now(now);
                let peeked = wheel.peek();
                model.now = model.now.max(now);
                let head = model
                    .queue
                    .iter()
                    .next()
                    .filter(|(at, _)| at.0 <= model.now);
                let want = head.map(|(_, &v)| (v, model.pending[&v].1));
                let got = peeked.map(|(key, deadline)| (*wheel.get(key).unwrap(), deadline));
                prop_assert_eq!(got, want, "peek({})", now);
                if let Some((key, _)) = peeked {
                    let value = got.unwrap().0;
                    if *take {
                        prop_assert_eq!(wheel.cancel(key), model.cancel(value));
                    } else {
                        let deadline = resolve(rearm, model.now);
                        prop_assert_eq!(wheel.reset(key, deadline), model.reset(value, deadline));
                    }
                }
            }
            Op::Drain => {
                let mut got: Vec<_> = wheel.drain().collect();
                let mut want: Vec<_> = model
                    .pending
                    .iter()
                    .map(|(&v, &(_, deadline))| (deadline, v))
                    .collect();
                got.sort_unstable();
                want.sort_unstable();
                prop_assert_eq!(got, want);
                model.clear();
            }
            Op::Clear => {
                wheel.clear();
                model.clear();
            }
            _ => {}
        }

        prop_assert_eq!(wheel.len(), model.pending.len());
        prop_assert_eq!(wheel.now(), model.now);
        // Polling at `next_expiration` fires or moves time: a value at or
        // before `now` promises a due timer.
        if wheel
            .next_expiration()
            .is_some_and(|next| next <= model.now)
        {
            prop_assert!(
                model.earliest().is_some_and(|e| e <= model.now),
                "next_expiration {:?} <= now {} but nothing is due",
                wheel.next_expiration(),
                model.now
            );
        }
        match (wheel.next_expiration(), model.earliest()) {
            (None, None) => {}
            (Some(next), Some(earliest)) => {
                prop_assert!(
                    next <= earliest,
                    "next_expiration {} > earliest {}",
                    next,
                    earliest
                )
            }
            (got, want) => prop_assert!(false, "next_expiration {:?} vs earliest {:?}", got, want),
        }
    }

    // Everything left fires, in order, when time runs out.
    let mut got: Vec<_> = wheel
        .advance(u64::MAX)
        .map(|e| (e.deadline, e.value))
        .collect();
    let mut want = Vec::new();
    while let Some(fired) = model.poll(u64::MAX) {
        want.push(fired);
    }
    prop_assert_eq!(&got, &want);
    got.clear();
    prop_assert!(wheel.is_empty());
    let listed: Vec<_> = wheel.iter().collect();
    prop_assert!(listed.is_empty());
    Ok(())
}

/// A tickless driver's loop: sleep until `next_expiration`, advance there.
/// It must reach every timer, in order, and never spin without progress.
fn run_tickless(geometry: Geometry, deadlines: &[When]) -> Result<(), TestCaseError> {
    let mut wheel: Wheel<u32> = Wheel::with_geometry(geometry);
    let mut model = Model::default();
    let mut used = Vec::new();
    for (value, when) in deadlines.iter().enumerate() {
        let deadline = when.resolve(0, &used);
        used.push(deadline);
        wheel.insert(deadline, value as u32);
        model.insert(deadline, value as u32);
    }
    let mut fired = Vec::new();
    let mut wakeups = 0usize;
    while let Some(next) = wheel.next_expiration() {
        wakeups += 1;
        // Each wake-up either fires or cascades; cascades per timer are
        // bounded by the number of levels plus overflow sweeps.
        prop_assert!(wakeups <= 64 * (deadlines.len() + 1), "driver spins");
        let now = next.max(wheel.now());
        fired.extend(wheel.advance(now).map(|e| {
            assert!(e.deadline <= now, "fired early");
            (e.deadline, e.value)
        }));
    }
    let mut want = Vec::new();
    while let Some(x) = model.poll(u64::MAX) {
        want.push(x);
    }
    prop_assert_eq!(fired, want);
    Ok(())
}

fn geometry(bits: u32, levels: u32) -> Geometry {
    Geometry::new(bits, levels).unwrap()
}

/// Operations per generated case (fewer under miri).
const MAX_OPS: usize = if cfg!(miri) { 24 } else { 120 };

/// At least 1,000 cases per geometry; `PROPTEST_CASES` raises it. Under
/// miri, a handful, without the failure file (miri isolates the file system).
fn config() -> ProptestConfig {
    let config = ProptestConfig::default();
    if cfg!(miri) {
        return ProptestConfig {
            cases: 2,
            failure_persistence: None,
            ..config
        };
    }
    ProptestConfig {
        cases: config.cases.max(1_000),
        ..config
    }
}

macro_rules! model_tests {
    ($($name:ident: $bits:expr, $levels:expr;)*) => {
        $(
            proptest! {
                #![proptest_config(config())]

                #[test]
                fn $name(ops in proptest::collection::vec(op(), 1..MAX_OPS)) {
                    run(geometry($bits, $levels), &ops)?;
                }
            }
        )*
    };
}

model_tests! {
    model_2_slots_1_level: 1, 1;
    model_4_slots_2_levels: 2, 2;
    model_2_slots_6_levels: 1, 6;
    model_8_slots_3_levels: 3, 3;
    model_64_slots_1_level: 6, 1;
    model_16_slots_4_levels: 4, 4;
    model_default: 6, 6;
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn tickless_driver_reaches_everything_in_order(
        bits in 1u32..=6,
        levels in 1u32..=6,
        deadlines in proptest::collection::vec(when(), 0..MAX_OPS / 3),
    ) {
        run_tickless(geometry(bits, levels), &deadlines)?;
    }
}

/// Every sequence of up to five operations from a small alphabet, on the
/// tiny wheels where one tick already crosses slots, levels and the
/// overflow list: a bounded model check. Random sequences rarely line up
/// ties, partial polls and overflow sweeps; this enumerates them all.
#[test]
fn every_short_sequence_on_tiny_wheels() {
    let alphabet = [
        Op::Insert(When::Near(1)),
        Op::Insert(When::Near(2)),
        Op::Insert(When::Near(3)),
        Op::Insert(When::Repeat(0)),
        Op::Poll(When::Near(0)),
        Op::Poll(When::Near(1)),
        Op::Advance(When::Near(2), Some(1)),
        Op::Cancel(0),
        Op::Reset(0, When::Near(2)),
    ];
    let length = if cfg!(miri) { 2 } else { 5 };
    let shapes = [(1, 1), (2, 1), (1, 2), (2, 2)];
    let mut ops = Vec::with_capacity(length);
    let mut digits = vec![0usize; length];
    loop {
        ops.clear();
        ops.extend(digits.iter().map(|&d| alphabet[d].clone()));
        for (bits, levels) in shapes {
            if let Err(err) = run(geometry(bits, levels), &ops) {
                panic!("{bits} bits × {levels} levels, {ops:?}: {err}");
            }
        }
        // Next sequence, odometer style.
        let mut i = 0;
        loop {
            if i == length {
                return;
            }
            digits[i] += 1;
            if digits[i] < alphabet.len() {
                break;
            }
            digits[i] = 0;
            i += 1;
        }
    }
}
