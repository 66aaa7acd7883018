//! Reads the input bytes as a geometry and a sequence of operations on a
//! `Wheel<u32>`, and checks every answer against the reference model of
//! `tests/support/model.rs` (shared with `tests/wheel/against_model.rs`): a
//! `BTreeMap<(effective deadline, seq), value>`, where the effective
//! deadline is `max(deadline, now at insert/reset)`, a poll yields the
//! smallest entry with effective deadline `<= now`, and `now` never goes
//! back.
//!
//! ```text
//! cargo +nightly fuzz run wheel_ops
//! cargo +nightly fuzz fmt wheel_ops <artifact>   # the input, decoded
//! ```
//!
//! The operations and the interpreter that applies them to both sides and
//! compares every answer are `tests/support/ops.rs`, shared with
//! `tests/wheel/against_model.rs`; this file only decodes bytes into those operations.
//!
//! # Input format
//!
//! Byte 0 picks the geometry: `slot_bits = 1 + b % 6`,
//! `levels = 1 + (b / 6) % 6`. Then, until the bytes run out or
//! [`MAX_OPS`] operations are read, one tag byte per operation followed by
//! its operands. Missing bytes read as zero, so every input decodes.
//! Integers are little-endian; a key operand is a `u16`.
//!
//! | op tag `% 35` | operation | operands |
//! |---------|-----------|----------|
//! | 0..=9   | `Insert`  | deadline |
//! | 10..=12 | `Cancel`  | key |
//! | 13..=16 | `Reset`   | key, deadline |
//! | 17..=20 | `Poll`    | step |
//! | 21..=24 | `Advance` | step, limit byte (`% 8`; 6 and 7: no limit) |
//! | 25..=26 | `Inspect` | key |
//! | 27      | `Drain`   | |
//! | 28      | `Clear`   | |
//! | 29..=31 | `Peek`    | step, byte (even: take, odd: re-arm), deadline |
//! | 32      | `InsertThenCancel` | deadline, count byte (`% 81`) |
//! | 33..=34 | `PollNext` | |
//!
//! A deadline is a tag byte `% 17`, a step a tag byte `% 18`, then the
//! operand of the [`When`] picked:
//!
//! | deadline tag | step tag | `When` | operand |
//! |--------------|----------|--------|---------|
//! | 0..=3        | 0..=5    | `Near`     | byte `% 70` (step: `% 4`) |
//! |              | 6..=8    | `Near`     | `u16 % 300` |
//! | 4..=6        | 9..=10   | `Mid`      | `u16 % 5_000` (step: `% 20_000`) |
//! | 7..=9        | 11..=12  | `Boundary` | bit byte `% 64`, offset byte `% 3 - 1` |
//! | 10           | 13       | `Far`      | `u64 % 2^42` |
//! | 11           | 14       | `Absolute` | `u64` |
//! | 12           |          | `Past`     | byte `% 100` |
//! | 13           | 15       | `Max`      | |
//! | 14..=16      | 16..=17  | `Repeat`   | `u16` |

#![no_main]

extern crate alloc;

use libfuzzer_sys::arbitrary::{self, Arbitrary, Unstructured};
use libfuzzer_sys::fuzz_target;
use tickwheel::Geometry;

/// Operations per input, so that no single input runs for long.
const MAX_OPS: usize = 512;

fuzz_target!(|input: Input| run(&input));

// `ops` reaches the model as `super::model`, so both sit at the crate root.
#[path = "../../tests/support/model.rs"]
mod model;
#[path = "../../tests/support/ops.rs"]
mod ops;
use ops::{Checker, Op, When};

/// Reads operands; past the end every read is zero.
struct Bytes<'a>(&'a [u8]);

impl Bytes<'_> {
    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn u8(&mut self) -> u8 {
        match self.0.split_first() {
            Some((&b, rest)) => {
                self.0 = rest;
                b
            }
            None => 0,
        }
    }

    fn u16(&mut self) -> u16 {
        u16::from_le_bytes([self.u8(), self.u8()])
    }

    fn u64(&mut self) -> u64 {
        let n = self.0.len().min(8);
        let mut buf = [0; 8];
        buf[..n].copy_from_slice(&self.0[..n]);
        self.0 = &self.0[n..];
        u64::from_le_bytes(buf)
    }
}

/// A deadline: tag byte, then its operand; weighted like `when()` in
/// `tests/wheel/against_model.rs`.
fn deadline(b: &mut Bytes<'_>) -> When {
    match b.u8() % 17 {
        0..=3 => When::Near(u64::from(b.u8() % 70)),
        4..=6 => When::Mid(u64::from(b.u16() % 5_000)),
        7..=9 => boundary(b),
        10 => When::Far(b.u64() % (1 << 42)),
        11 => When::Absolute(b.u64()),
        12 => When::Past(u64::from(b.u8() % 100)),
        13 => When::Max,
        _ => When::Repeat(usize::from(b.u16())),
    }
}

/// A time step: mostly small, sometimes a jump of any size; weighted like
/// `step()` in `tests/wheel/against_model.rs`.
fn step(b: &mut Bytes<'_>) -> When {
    match b.u8() % 18 {
        0..=5 => When::Near(u64::from(b.u8() % 4)),
        6..=8 => When::Near(u64::from(b.u16() % 300)),
        9..=10 => When::Mid(u64::from(b.u16() % 20_000)),
        11..=12 => boundary(b),
        13 => When::Far(b.u64() % (1 << 42)),
        14 => When::Absolute(b.u64()),
        15 => When::Max,
        _ => When::Repeat(usize::from(b.u16())),
    }
}

fn boundary(b: &mut Bytes<'_>) -> When {
    let bit = u32::from(b.u8() % 64);
    let offset = (b.u8() % 3) as i8 - 1;
    When::Boundary(bit, offset)
}

fn key(b: &mut Bytes<'_>) -> usize {
    usize::from(b.u16())
}

/// Tag byte weighted like `op()` in `tests/wheel/against_model.rs`, then operands.
fn op(b: &mut Bytes<'_>) -> Op {
    match b.u8() % 35 {
        0..=9 => Op::Insert(deadline(b)),
        10..=12 => Op::Cancel(key(b)),
        13..=16 => Op::Reset(key(b), deadline(b)),
        17..=20 => Op::Poll(step(b)),
        21..=24 => {
            let step = step(b);
            let limit = usize::from(b.u8() % 8);
            Op::Advance(step, (limit < 6).then_some(limit))
        }
        25..=26 => Op::Inspect(key(b)),
        27 => Op::Drain,
        28 => Op::Clear,
        29..=31 => {
            let step = step(b);
            let take = b.u8() & 1 == 0;
            Op::Peek(step, take, deadline(b))
        }
        // Up to 80: more cancels in a row than a batch of deferred unlinks
        // holds.
        32 => {
            let when = deadline(b);
            Op::InsertThenCancel(when, usize::from(b.u8() % 81))
        }
        _ => Op::PollNext,
    }
}

/// A decoded input; its `Debug` is what `cargo fuzz fmt` prints.
#[derive(Debug)]
struct Input {
    geometry: Geometry,
    ops: Vec<Op>,
}

impl Input {
    fn decode(data: &[u8]) -> Input {
        let mut b = Bytes(data);
        let g = b.u8();
        let geometry = Geometry::new(1 + u32::from(g % 6), 1 + u32::from(g / 6 % 6))
            .expect("slot_bits and levels are in 1..=6");
        let mut ops = Vec::new();
        while !b.is_empty() && ops.len() < MAX_OPS {
            ops.push(op(&mut b));
        }
        Input { geometry, ops }
    }
}

impl<'a> Arbitrary<'a> for Input {
    fn arbitrary(u: &mut Unstructured<'a>) -> arbitrary::Result<Self> {
        Ok(Input::decode(u.bytes(u.len())?))
    }

    fn arbitrary_take_rest(u: Unstructured<'a>) -> arbitrary::Result<Self> {
        Ok(Input::decode(u.take_rest()))
    }
}

/// Panics with the checker's message, which names the failing op by index.
fn run(input: &Input) {
    let mut checker = Checker::new(input.geometry);
    for op in &input.ops {
        if let Err(e) = checker.apply(op) {
            panic!("{e}");
        }
    }
    if let Err(e) = checker.finish() {
        panic!("{e}");
    }
}
