//! Random operation sequences on `Wheel` against a reference model, a
//! `BTreeMap<(effective deadline, seq), _>`, on geometries from 2 slots × 1
//! level to the default. Asserts exact equality of what fires, in what order,
//! with what deadline and key, and of `len`, `get`, `deadline` and `iter`.
//!
//! This file only chooses the operations: they and the interpreter that
//! checks them (`support/ops.rs`) are shared with the fuzz target.

use proptest::prelude::*;
use tickwheel::Geometry;

// The interpreter is shared with the fuzz target; `ops` reaches the model
// as `super::model`, so both are declared here, at the crate root.
use crate::ops;
use ops::{Checker, Op, When};

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
        2 => Just(Op::PollNext),
        1 => Just(Op::Drain),
        1 => Just(Op::Clear),
    ]
}

/// Applies `ops` to a fresh wheel and the model, then lets time run out.
fn run(geometry: Geometry, ops: &[Op]) -> Result<(), String> {
    let mut checker = Checker::new(geometry);
    for op in ops {
        checker.apply(op)?;
    }
    checker.finish()
}

/// A tickless driver's loop: sleep until `next_expiration`, advance there.
/// It must reach every timer, in order, and never spin without progress.
fn run_tickless(geometry: Geometry, deadlines: &[When]) -> Result<(), String> {
    let mut checker = Checker::new(geometry);
    for &when in deadlines {
        checker.apply(&Op::Insert(when))?;
    }
    let mut wakeups = 0usize;
    while let Some(next) = checker.wheel().next_expiration() {
        wakeups += 1;
        // Each wake-up either fires or cascades; cascades per timer are
        // bounded by the number of levels plus overflow sweeps.
        if wakeups > 64 * (deadlines.len() + 1) {
            return Err(format!("driver spins: {wakeups} wake-ups"));
        }
        // The checker compares what fires with the model: in order, and
        // nothing before its deadline.
        checker.apply(&Op::Advance(When::Absolute(next), None))?;
    }
    checker.finish()
}

fn geometry(bits: u32, levels: u32) -> Geometry {
    Geometry::new(bits, levels).unwrap()
}

/// Operations per generated case (fewer under miri).
const MAX_OPS: usize = if cfg!(miri) { 24 } else { 120 };

/// At least 1,000 cases per geometry; `PROPTEST_CASES` raises it. Under
/// miri, a handful, without the failure file (miri isolates the file
/// system), drawn by XorShift: proptest's default ChaCha took most of the
/// interpreter's time (6 to 9 s a case, the wheel's ops under 2 s).
fn config() -> ProptestConfig {
    let config = ProptestConfig::default();
    if cfg!(miri) {
        return ProptestConfig {
            cases: 2,
            failure_persistence: None,
            rng_algorithm: proptest::test_runner::RngAlgorithm::XorShift,
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
                    run(geometry($bits, $levels), &ops).map_err(TestCaseError::fail)?;
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
        run_tickless(geometry(bits, levels), &deadlines).map_err(TestCaseError::fail)?;
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
        Op::PollNext,
    ];
    let length = if cfg!(miri) { 2 } else { 5 };
    // Under miri, the smallest wheel and the one with most to cascade.
    let shapes: &[(u32, u32)] = if cfg!(miri) {
        &[(1, 1), (2, 2)]
    } else {
        &[(1, 1), (2, 1), (1, 2), (2, 2)]
    };
    let mut ops = Vec::with_capacity(length);
    let mut digits = vec![0usize; length];
    loop {
        ops.clear();
        ops.extend(digits.iter().map(|&d| alphabet[d].clone()));
        for &(bits, levels) in shapes {
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
