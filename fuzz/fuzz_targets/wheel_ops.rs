//! Reads the input bytes as a geometry and a sequence of operations on a
//! `Wheel<u32>`, and checks every answer against the reference model of
//! `tests/support/model.rs` (shared with `tests/model.rs`): a
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
//! # Input format
//!
//! Byte 0 picks the geometry: `slot_bits = 1 + b % 6`,
//! `levels = 1 + (b / 6) % 6`. Then, until the bytes run out or
//! [`MAX_OPS`] operations are read, one tag byte per operation followed by
//! its operands (see [`Op::decode`] and [`When`]). Missing bytes read as
//! zero, so every input decodes.

#![no_main]

extern crate alloc;

use libfuzzer_sys::arbitrary::{self, Arbitrary, Unstructured};
use libfuzzer_sys::fuzz_target;
use tickwheel::{Expired, Geometry, Tick, TimerKey, Wheel};

/// Operations per input, so that no single input runs for long.
const MAX_OPS: usize = 512;

fuzz_target!(|input: Input| run(&input));

#[path = "../../tests/support/model.rs"]
mod model;
use model::Model;

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

/// A deadline or a time step relative to the current time, as in
/// `tests/model.rs`: slot and level boundaries, the overflow list, the past
/// and `u64::MAX`.
#[derive(Debug, Clone, Copy)]
enum When {
    Near(u64),
    Mid(u64),
    /// The next multiple of `2^bit` after now, nudged by -1, 0 or +1.
    Boundary(u32, i8),
    Far(u64),
    Absolute(u64),
    Past(u64),
    Max,
}

impl When {
    /// A deadline: tag byte, then its operand.
    fn deadline(b: &mut Bytes<'_>) -> When {
        match b.u8() % 14 {
            0..=3 => When::Near(u64::from(b.u8() % 70)),
            4..=6 => When::Mid(u64::from(b.u16() % 5_000)),
            7..=9 => When::boundary(b),
            10 => When::Far(b.u64() % (1 << 42)),
            11 => When::Absolute(b.u64()),
            12 => When::Past(u64::from(b.u8() % 100)),
            _ => When::Max,
        }
    }

    /// A time step: mostly small, sometimes a jump of any size.
    fn step(b: &mut Bytes<'_>) -> When {
        match b.u8() % 16 {
            0..=5 => When::Near(u64::from(b.u8() % 4)),
            6..=8 => When::Near(u64::from(b.u16() % 300)),
            9..=10 => When::Mid(u64::from(b.u16() % 20_000)),
            11..=12 => When::boundary(b),
            13 => When::Far(b.u64() % (1 << 42)),
            14 => When::Absolute(b.u64()),
            _ => When::Max,
        }
    }

    fn boundary(b: &mut Bytes<'_>) -> When {
        let bit = u32::from(b.u8() % 64);
        let offset = (b.u8() % 3) as i8 - 1;
        When::Boundary(bit, offset)
    }

    fn resolve(self, now: Tick) -> Tick {
        match self {
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

#[derive(Debug, Clone, Copy)]
enum Op {
    Insert(When),
    /// Index (mod the count) into every key ever issued, stale ones included.
    Cancel(u16),
    Reset(u16, When),
    Poll(When),
    /// `advance`, consuming at most `limit` timers (partial iteration).
    Advance(When, Option<u8>),
    /// `contains`, `get` and `deadline` on one key.
    Inspect(u16),
    /// `peek`, then take the due timer (`true`) or re-arm it at a deadline.
    Peek(When, bool, When),
    Drain,
    Clear,
}

impl Op {
    /// Tag byte weighted like the proptest strategy, then operands.
    fn decode(b: &mut Bytes<'_>) -> Op {
        match b.u8() % 32 {
            0..=9 => Op::Insert(When::deadline(b)),
            10..=12 => Op::Cancel(b.u16()),
            13..=16 => Op::Reset(b.u16(), When::deadline(b)),
            17..=20 => Op::Poll(When::step(b)),
            21..=24 => {
                let step = When::step(b);
                let limit = b.u8() % 8;
                Op::Advance(step, (limit < 6).then_some(limit))
            }
            25..=26 => Op::Inspect(b.u16()),
            27 => Op::Drain,
            28 => Op::Clear,
            _ => {
                let step = When::step(b);
                let take = b.u8() & 1 == 0;
                Op::Peek(step, take, When::deadline(b))
            }
        }
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
            ops.push(Op::decode(&mut b));
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

/// A fired timer as `(deadline, value)`, after checking its key: value `v`
/// was inserted with `keys[v]`.
fn fired(keys: &[TimerKey], e: Expired<u32>) -> (Tick, u32) {
    assert_eq!(
        e.key, keys[e.value as usize],
        "fired {:?} under the wrong key",
        e
    );
    (e.deadline, e.value)
}

fn run(input: &Input) {
    let mut wheel: Wheel<u32> = Wheel::with_geometry(input.geometry);
    let mut model = Model::default();
    // Value `v` is the `v`-th insert, made with `keys[v]`.
    let mut keys: Vec<TimerKey> = Vec::new();

    for (i, &op) in input.ops.iter().enumerate() {
        let pick = |k: u16| (usize::from(k) % keys.len().max(1)) as u32;
        match op {
            Op::Insert(when) => {
                let deadline = when.resolve(model.now);
                let value = keys.len() as u32;
                keys.push(wheel.insert(deadline, value));
                model.insert(deadline, value);
            }
            Op::Cancel(k) if !keys.is_empty() => {
                let v = pick(k);
                assert_eq!(
                    wheel.cancel(keys[v as usize]),
                    model.cancel(v),
                    "op {i}: {op:?}"
                );
            }
            Op::Reset(k, when) if !keys.is_empty() => {
                let v = pick(k);
                let deadline = when.resolve(model.now);
                let got = wheel.reset(keys[v as usize], deadline);
                assert_eq!(
                    got,
                    model.reset(v, deadline),
                    "op {i}: {op:?} to {deadline}"
                );
            }
            Op::Poll(step) => {
                let now = step.resolve(model.now);
                let got = wheel.poll(now).map(|e| fired(&keys, e));
                assert_eq!(got, model.poll(now), "op {i}: poll({now})");
            }
            Op::Advance(step, limit) => {
                let now = step.resolve(model.now);
                let limit = limit.map_or(usize::MAX, usize::from);
                let got: Vec<_> = wheel
                    .advance(now)
                    .take(limit)
                    .map(|e| fired(&keys, e))
                    .collect();
                model.now = model.now.max(now);
                let mut want = Vec::new();
                while want.len() < limit {
                    match model.poll(now) {
                        Some(x) => want.push(x),
                        None => break,
                    }
                }
                assert_eq!(got, want, "op {i}: advance({now}) limit {limit}");
            }
            Op::Inspect(k) if !keys.is_empty() => {
                let v = pick(k);
                let key = keys[v as usize];
                let pending = model.pending.get(&v);
                assert_eq!(wheel.contains(key), pending.is_some(), "op {i}: {op:?}");
                assert_eq!(
                    wheel.get(key).copied(),
                    pending.map(|_| v),
                    "op {i}: {op:?}"
                );
                assert_eq!(wheel.deadline(key), pending.map(|p| p.1), "op {i}: {op:?}");
            }
            Op::Peek(step, take, rearm) => {
                let now = step.resolve(model.now);
                wheel.set_now(now);
                let peeked = wheel.peek();
                model.now = model.now.max(now);
                let want = model
                    .queue
                    .iter()
                    .next()
                    .filter(|(at, _)| at.0 <= model.now)
                    .map(|(_, &v)| (model.pending[&v].1, v));
                let got = peeked.map(|(key, deadline)| {
                    let value = *wheel.get(key).expect("a peeked key is pending");
                    assert_eq!(key, keys[value as usize], "op {i}: peeked key");
                    (deadline, value)
                });
                assert_eq!(got, want, "op {i}: peek({now})");
                if let Some((key, _)) = peeked {
                    let value = got.unwrap().1;
                    if take {
                        assert_eq!(wheel.cancel(key), model.cancel(value), "op {i}: take");
                    } else {
                        let deadline = rearm.resolve(model.now);
                        assert_eq!(
                            wheel.reset(key, deadline),
                            model.reset(value, deadline),
                            "op {i}: re-arm at {deadline}"
                        );
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
                assert_eq!(got, want, "op {i}: drain");
                model.clear();
            }
            Op::Clear => {
                wheel.clear();
                model.clear();
            }
            // Cancel, reset or inspect before any key was issued.
            _ => {}
        }

        assert_eq!(wheel.len(), model.pending.len(), "op {i}: {op:?}: len");
        assert_eq!(
            wheel.is_empty(),
            model.pending.is_empty(),
            "op {i}: {op:?}: is_empty"
        );
        assert_eq!(wheel.now(), model.now, "op {i}: {op:?}: now");
        // Polling at `next_expiration` fires or moves time.
        if let Some(next) = wheel.next_expiration().filter(|&next| next <= model.now) {
            assert!(
                model.earliest().is_some_and(|e| e <= model.now),
                "op {i}: {op:?}: next_expiration {next} <= now {} but nothing is due",
                model.now
            );
        }
        match (wheel.next_expiration(), model.earliest()) {
            (None, None) => {}
            (Some(next), Some(earliest)) => assert!(
                next <= earliest,
                "op {i}: {op:?}: next_expiration {next} > earliest effective deadline {earliest}"
            ),
            (got, want) => {
                panic!("op {i}: {op:?}: next_expiration {got:?} but earliest {want:?}")
            }
        }
    }

    // Everything left fires, in order, when time runs out.
    let got: Vec<_> = wheel.advance(u64::MAX).map(|e| fired(&keys, e)).collect();
    let mut want = Vec::new();
    while let Some(x) = model.poll(u64::MAX) {
        want.push(x);
    }
    assert_eq!(got, want, "final advance(u64::MAX)");
    assert!(wheel.is_empty());
    assert_eq!(wheel.next_expiration(), None);
    assert_eq!(wheel.iter().count(), 0);
    assert!(
        keys.iter().all(|&key| !wheel.contains(key)),
        "a key outlived its timer"
    );
}
