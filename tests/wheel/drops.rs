//! Every value is dropped exactly once: on cancel, fire, drain (whole or
//! part), clear, drop of the wheel, and when a value's `Drop` panics.
//! Sizes are smaller under miri.

use alloc::rc::Rc;
use core::cell::RefCell;
use core::panic::AssertUnwindSafe;
use std::collections::HashMap;
use std::panic::catch_unwind;

use tickwheel::{Geometry, Wheel};

/// Counts drops per id; panics in `Drop` when `explode` is set.
#[derive(Clone, Default)]
struct Ledger(Rc<RefCell<HashMap<u32, u32>>>);

impl Ledger {
    fn value(&self, id: u32) -> Tracked {
        self.value_that(id, false)
    }
    fn value_that(&self, id: u32, explode: bool) -> Tracked {
        Tracked {
            id,
            explode,
            ledger: self.clone(),
        }
    }
    fn drops(&self, id: u32) -> u32 {
        self.0.borrow().get(&id).copied().unwrap_or(0)
    }
    fn assert_each_dropped_once(&self, ids: impl IntoIterator<Item = u32>) {
        for id in ids {
            assert_eq!(self.drops(id), 1, "value {id}");
        }
    }
}

struct Tracked {
    id: u32,
    explode: bool,
    ledger: Ledger,
}

impl Drop for Tracked {
    fn drop(&mut self) {
        *self.ledger.0.borrow_mut().entry(self.id).or_default() += 1;
        if self.explode && !std::thread::panicking() {
            panic!("drop of {} panics", self.id);
        }
    }
}

const N: u32 = if cfg!(miri) { 40 } else { 400 };

fn filled(ledger: &Ledger, explode: Option<u32>) -> Wheel<Tracked> {
    let mut wheel = Wheel::with_geometry(Geometry::new(2, 3).unwrap());
    for id in 0..N {
        // Spread over due, every level and the overflow list.
        let deadline = match id % 4 {
            0 => 0,
            1 => id as u64,
            2 => (id as u64) << 4,
            _ => 1 << 40,
        };
        wheel.insert(deadline, ledger.value_that(id, Some(id) == explode));
    }
    wheel
}

#[test]
fn cancel_fire_and_drop_each_drop_once() {
    let ledger = Ledger::default();
    let mut wheel = Wheel::new();
    let keys: Vec<_> = (0..N)
        .map(|id| wheel.insert(id as u64, ledger.value(id)))
        .collect();
    // Cancel returns the value: not dropped by the wheel.
    let cancelled = wheel.cancel(keys[0]).unwrap();
    assert_eq!(ledger.drops(0), 0);
    drop(cancelled);
    // Fired values are handed over, not dropped.
    let fired: Vec<_> = wheel.advance(N as u64 / 2).collect();
    assert!(fired.iter().all(|e| ledger.drops(e.value.id) == 0));
    drop(fired);
    drop(wheel); // the rest
    ledger.assert_each_dropped_once(0..N);
}

#[test]
fn partial_drain_drops_the_rest_once() {
    let ledger = Ledger::default();
    let mut wheel = filled(&ledger, None);
    let taken: Vec<_> = wheel.drain().take(10).collect();
    assert!(wheel.is_empty());
    drop(taken);
    ledger.assert_each_dropped_once(0..N);
    drop(wheel);
    ledger.assert_each_dropped_once(0..N);
}

#[test]
fn partial_advance_then_clear_drops_once() {
    let ledger = Ledger::default();
    let mut wheel = filled(&ledger, None);
    drop(wheel.advance(u64::MAX).take(7).collect::<Vec<_>>());
    wheel.clear();
    assert!(wheel.is_empty());
    ledger.assert_each_dropped_once(0..N);
}

#[test]
fn a_panicking_drop_in_clear_still_drops_everything_once() {
    let ledger = Ledger::default();
    let mut wheel = filled(&ledger, Some(N / 2));
    let result = catch_unwind(AssertUnwindSafe(|| wheel.clear()));
    assert!(result.is_err());
    ledger.assert_each_dropped_once(0..N);
    // The wheel is empty and works.
    assert!(wheel.is_empty());
    let key = wheel.insert(wheel.now() + 5, ledger.value(10_000));
    assert!(wheel.contains(key));
    assert_eq!(wheel.advance(u64::MAX).count(), 1);
    assert_eq!(ledger.drops(10_000), 1);
}

#[test]
fn a_panicking_drop_of_the_wheel_still_drops_everything_once() {
    let ledger = Ledger::default();
    let wheel = filled(&ledger, Some(3));
    assert!(catch_unwind(AssertUnwindSafe(move || drop(wheel))).is_err());
    ledger.assert_each_dropped_once(0..N);
}

#[test]
fn a_panicking_drop_in_a_dropped_drain_still_drops_everything_once() {
    let ledger = Ledger::default();
    let mut wheel = filled(&ledger, Some(N - 1));
    let result = catch_unwind(AssertUnwindSafe(|| drop(wheel.drain())));
    assert!(result.is_err());
    ledger.assert_each_dropped_once(0..N);
    assert!(wheel.is_empty());
    wheel.insert(1 << 41, ledger.value(20_000));
    assert_eq!(wheel.len(), 1);
}
