//! Black-box behaviour of `Wheel`: boundaries, ties, far deadlines on tiny
//! wheels, stale keys, the edges of the tick range.

use tickwheel::{Geometry, GeometryError, Tick, TimerKey, Wheel};

fn values<T>(wheel: &mut Wheel<T>, now: Tick) -> Vec<T> {
    wheel.advance(now).map(|e| e.value).collect()
}

/// All shapes used below, from the smallest to the default (three of them
/// under miri, whose interpreter is ~1000× slower).
fn shapes() -> Vec<Geometry> {
    let all: &[(u32, u32)] = if cfg!(miri) {
        &[(1, 1), (2, 2), (6, 6)]
    } else {
        &[(1, 1), (1, 2), (2, 2), (3, 3), (6, 1), (4, 4), (6, 6)]
    };
    all.iter()
        .map(|&(b, l)| Geometry::new(b, l).unwrap())
        .collect()
}

/// Tick-by-tick stretches are shorter under miri.
const TICKS: u64 = if cfg!(miri) { 300 } else { 5_000 };

#[test]
fn fires_exactly_at_level_boundaries_never_a_tick_early() {
    let mut deadlines = vec![1, 2, 3];
    for bit in [6, 12, 18, 24, 30, 36, 37, 42] {
        let b = 1u64 << bit;
        deadlines.extend([b - 1, b, b + 1]);
    }
    for g in shapes() {
        for &d in &deadlines {
            let mut wheel = Wheel::with_geometry(g);
            let key = wheel.insert(d, d);
            assert!(
                values(&mut wheel, d - 1).is_empty(),
                "{g:?}: {d} fired at {}",
                d - 1
            );
            assert!(wheel.contains(key));
            assert_eq!(values(&mut wheel, d), [d], "{g:?}: {d} did not fire at {d}");
            assert!(wheel.is_empty());
        }
    }
}

#[test]
fn boundaries_all_at_once_come_out_sorted() {
    for g in shapes() {
        let mut wheel = Wheel::with_geometry(g);
        let mut want = Vec::new();
        for bit in (0..40).step_by(if cfg!(miri) { 3 } else { 1 }) {
            for d in [(1u64 << bit) - 1, 1 << bit, (1 << bit) + 1] {
                if d > 0 {
                    wheel.insert(d, d);
                    want.push(d);
                }
            }
        }
        want.sort();
        // Tick by tick near zero, then in jumps.
        let mut got = Vec::new();
        for now in 0..TICKS {
            got.extend(values(&mut wheel, now));
        }
        got.extend(values(&mut wheel, 1 << 41));
        assert_eq!(got, want, "{g:?}");
    }
}

#[test]
fn ties_are_first_in_first_out_across_levels() {
    for g in shapes() {
        let mut wheel = Wheel::with_geometry(g);
        // Same deadline, filed from different distances: different levels.
        wheel.insert(5_000, "a");
        values(&mut wheel, 1_000);
        wheel.insert(5_000, "b");
        values(&mut wheel, 4_990);
        wheel.insert(5_000, "c");
        values(&mut wheel, 4_999);
        wheel.insert(5_000, "d");
        assert_eq!(values(&mut wheel, 5_000), ["a", "b", "c", "d"], "{g:?}");
    }
}

/// Found by the fuzzer: a top-level slot and the overflow sweep due at the
/// same tick, a `poll` returning between them, then an insert tied with an
/// overflow timer. The older timer must still fire first.
#[test]
fn ties_hold_when_the_overflow_sweep_meets_a_slot() {
    let mut wheel = Wheel::new();
    wheel.insert(1 << 36, "a"); // overflow list; swept at 2^30
    wheel.insert(1 << 30, "x"); // a level-5 slot starting at 2^30
    assert_eq!(wheel.poll(1 << 30).map(|e| e.value), Some("x"));
    wheel.insert(1 << 36, "b");
    assert_eq!(values(&mut wheel, u64::MAX), ["a", "b"]);

    // The same on 16 slots × 1 level, where every deadline > 15 ahead overflows.
    let mut wheel = Wheel::with_geometry(Geometry::new(4, 1).unwrap());
    wheel.insert(27, "a");
    wheel.insert(12, "x");
    assert_eq!(wheel.poll(12).map(|e| e.value), Some("x"));
    wheel.insert(27, "b");
    assert_eq!(values(&mut wheel, u64::MAX), ["a", "b"]);
}

#[test]
fn reset_goes_behind_existing_ties() {
    let mut wheel = Wheel::new();
    let a = wheel.insert(100, "a");
    wheel.insert(100, "b");
    wheel.insert(100, "c");
    assert!(wheel.reset(a, 100));
    assert_eq!(values(&mut wheel, 100), ["b", "c", "a"]);
}

#[test]
fn overdue_inserts_fire_after_timers_already_due() {
    let mut wheel = Wheel::new();
    wheel.insert(10, "on time");
    wheel.insert(20, "later");
    // Move to 50 but take only one timer: "later" is still due.
    assert_eq!(wheel.advance(50).next().map(|e| e.value), Some("on time"));
    let late = wheel.insert(3, "overdue");
    assert_eq!(wheel.deadline(late), Some(3)); // reported as asked
    let fired: Vec<_> = wheel.advance(50).map(|e| (e.value, e.deadline)).collect();
    assert_eq!(fired, [("later", 20), ("overdue", 3)]);
}

#[test]
fn far_deadlines_on_tiny_wheels_fire_in_order_and_on_time() {
    let deadlines = [
        u64::MAX,
        1 << 63,
        1 << 40,
        12_345_678_901,
        70,
        17,
        5,
        u64::MAX - 1,
    ];
    for g in shapes() {
        let mut wheel = Wheel::with_geometry(g);
        for &d in &deadlines {
            wheel.insert(d, d);
        }
        let mut sorted = deadlines.to_vec();
        sorted.sort();
        // A tickless driver: sleep until next_expiration, then advance there.
        let mut fired = Vec::new();
        let mut wakeups = 0;
        while let Some(next) = wheel.next_expiration() {
            wakeups += 1;
            for expired in wheel.advance(next) {
                // Woken exactly when due: neither early nor late.
                assert_eq!(expired.deadline, next, "{g:?}");
                fired.push(expired.value);
            }
        }
        assert_eq!(fired, sorted, "{g:?}");
        // Each timer is touched at most once per level plus a few sweeps.
        assert!(wakeups <= deadlines.len() * 12, "{g:?}: {wakeups} wake-ups");
    }
}

#[test]
fn a_huge_jump_with_one_timer_takes_few_steps() {
    // A driver sleeping until next_expiration needs O(levels) wake-ups to
    // reach a timer 2^40 ticks away, not 2^40.
    let mut wheel = Wheel::new();
    wheel.insert(1 << 40, ());
    let mut wakeups = 0;
    while let Some(next) = wheel.next_expiration() {
        wakeups += 1;
        wheel.advance(next).for_each(drop);
    }
    assert!(wakeups <= 8, "{wakeups} wake-ups");
    assert_eq!(wheel.now(), 1 << 40);
}

#[test]
fn u64_max_works_at_both_ends() {
    for g in shapes() {
        let mut wheel = Wheel::with_geometry(g);
        wheel.insert(u64::MAX, "end");
        assert!(values(&mut wheel, u64::MAX - 1).is_empty());
        assert_eq!(values(&mut wheel, u64::MAX), ["end"]);
        // At the end of time, every insert is due at once.
        wheel.insert(u64::MAX, "again");
        wheel.insert(0, "overdue");
        assert_eq!(wheel.next_expiration(), Some(u64::MAX));
        assert_eq!(values(&mut wheel, u64::MAX), ["again", "overdue"]);
        assert_eq!(wheel.next_expiration(), None);
    }
}

#[test]
fn stale_keys_never_touch_a_timer_that_reuses_the_slot() {
    let mut wheel = Wheel::new();
    let old = wheel.insert(10, "old");
    assert_eq!(wheel.cancel(old), Some("old"));
    let new = wheel.insert(20, "new");
    assert_ne!(old, new);
    assert_eq!(wheel.get(old), None);
    assert_eq!(wheel.deadline(old), None);
    assert!(!wheel.contains(old));
    assert!(!wheel.reset(old, 5));
    assert_eq!(wheel.cancel(old), None);
    assert_eq!(wheel.get_mut(old), None);
    // The new timer is untouched.
    assert_eq!(wheel.deadline(new), Some(20));
    assert_eq!(values(&mut wheel, 20), ["new"]);

    // Fired keys are stale too, even after their slot is reused.
    let fired = wheel.insert(30, "fired");
    assert_eq!(values(&mut wheel, 30), ["fired"]);
    let reuse = wheel.insert(40, "reuse");
    assert_eq!(wheel.cancel(fired), None);
    assert!(wheel.contains(reuse));
}

#[test]
fn keys_from_another_wheel_are_rejected() {
    let mut a = Wheel::new();
    let mut b = Wheel::new();
    let key_a = a.insert(10, 'a');
    let key_b = b.insert(10, 'b');
    assert_eq!(b.get(key_a), None);
    assert_eq!(b.cancel(key_a), None);
    assert_eq!(a.cancel(key_b), None);
    assert_eq!(b.len(), 1);
}

#[test]
fn keys_are_8_bytes_and_pack_to_u64() {
    assert_eq!(core::mem::size_of::<TimerKey>(), 8);
    assert_eq!(core::mem::size_of::<Option<TimerKey>>(), 8);
    let mut wheel = Wheel::new();
    let key = wheel.insert(1, ());
    assert_eq!(TimerKey::from_bits(key.to_bits()), Some(key));
    // Today's bug: bits naming an arena index no wheel can hold (past
    // `MAX_TIMERS`) made a key.
    for bits in [0x1_FFFF_FFFF, 0x1_7FFF_FFFF, 0x7_8000_0000] {
        assert_eq!(TimerKey::from_bits(bits), None, "{bits:#x}");
    }
}

/// Today's bug: a reset with a stale key "did nothing" but took a stamp,
/// bringing the wrap-around of live keys closer.
#[test]
fn a_stale_reset_takes_no_stamp() {
    let mut wheel = Wheel::new();
    let stale = wheel.insert(5, 1);
    wheel.cancel(stale);
    let before = wheel.insert(5, 2);
    for _ in 0..1000 {
        assert!(!wheel.reset(stale, 9));
    }
    let after = wheel.insert(5, 3);
    let stamp = |key: TimerKey| key.to_bits() >> 32;
    assert_eq!(stamp(after), stamp(before) + 1);
}

#[test]
fn advance_is_lazy_and_dropping_it_keeps_the_rest_due() {
    let mut wheel = Wheel::new();
    for i in 0..100u64 {
        wheel.insert(i * 1_000, i);
    }
    let mut burst = wheel.advance(u64::MAX);
    assert_eq!(burst.next().map(|e| e.value), Some(0));
    assert_eq!(burst.next().map(|e| e.value), Some(1));
    drop(burst);
    assert_eq!(wheel.len(), 98);
    assert_eq!(
        wheel.next_expiration().map(|t| t <= wheel.now()),
        Some(true)
    );
    assert_eq!(wheel.poll(0).map(|e| e.value), Some(2)); // time never goes back
    assert_eq!(values(&mut wheel, 0), (3..100).collect::<Vec<_>>());
}

#[test]
fn next_expiration_is_exact_near_and_never_late_far() {
    let mut wheel = Wheel::new();
    assert_eq!(wheel.next_expiration(), None);
    wheel.insert(37, ());
    assert_eq!(wheel.next_expiration(), Some(37));
    wheel.insert(10_000, ());
    assert_eq!(wheel.next_expiration(), Some(37));
    values(&mut wheel, 37);
    let next = wheel.next_expiration().unwrap();
    assert!(next <= 10_000 && next > 37);
}

#[test]
fn cancel_and_reset_from_every_list() {
    for g in shapes() {
        let mut wheel = Wheel::with_geometry(g);
        let due = wheel.insert(0, "due");
        let near = wheel.insert(3, "near");
        let far = wheel.insert(1 << 50, "far");
        assert_eq!(wheel.cancel(due), Some("due"));
        assert_eq!(wheel.cancel(far), Some("far"));
        assert!(wheel.reset(near, 1 << 50)); // near → far
        assert!(values(&mut wheel, 1_000).is_empty());
        assert!(wheel.reset(near, 0)); // far → due
        assert_eq!(values(&mut wheel, 1_000), ["near"]);
        assert!(
            wheel.is_empty() && wheel.next_expiration().is_none(),
            "{g:?}"
        );
    }
}

#[test]
fn drain_and_iter_see_every_timer_with_its_deadline() {
    let mut wheel = Wheel::with_geometry(Geometry::new(2, 2).unwrap());
    let mut want = Vec::new();
    for (i, d) in [0u64, 5, 17, 1 << 33, u64::MAX].into_iter().enumerate() {
        let key = wheel.insert(d, i);
        want.push((key, d, i));
    }
    let mut seen: Vec<_> = wheel.iter().map(|(k, d, &v)| (k, d, v)).collect();
    seen.sort_by_key(|x| x.2);
    assert_eq!(seen, want);
    let mut drained: Vec<_> = wheel.drain().collect();
    drained.sort_by_key(|x| x.1);
    assert_eq!(
        drained,
        want.iter().map(|&(_, d, v)| (d, v)).collect::<Vec<_>>()
    );
    assert!(wheel.is_empty() && wheel.next_expiration().is_none());
    for (key, _, _) in want {
        assert!(!wheel.contains(key));
    }
    // The wheel is usable afterwards.
    wheel.insert(wheel.now() + 1, 9);
    assert_eq!(values(&mut wheel, u64::MAX), [9]);
}

#[test]
fn starting_at_moves_the_clock() {
    let mut wheel = Wheel::new().starting_at(1 << 45);
    assert_eq!(wheel.now(), 1 << 45);
    wheel.insert((1 << 45) + 3, ());
    assert_eq!(wheel.next_expiration(), Some((1 << 45) + 3));
}

#[test]
fn geometry_rejects_shapes_that_cannot_work() {
    assert_eq!(Geometry::new(0, 1), Err(GeometryError::SlotBits(0)));
    assert_eq!(Geometry::new(7, 1), Err(GeometryError::SlotBits(7)));
    assert_eq!(Geometry::new(1, 0), Err(GeometryError::Levels(0)));
    assert_eq!(Geometry::new(1, 7), Err(GeometryError::Levels(7)));
    for b in 1..=6 {
        for l in 1..=6 {
            let g = Geometry::new(b, l).unwrap();
            assert_eq!(g.span(), 1 << (b * l));
        }
    }
}

/// Long runs of cancels (their unlinks are batched) interleaved with
/// inserts that reuse the freed slots, on every shape: what is left fires
/// in order, counts stay exact, and stale keys stay stale.
#[test]
fn batched_cancels_keep_every_list_consistent() {
    for g in shapes() {
        let mut wheel = Wheel::with_geometry(g);
        let mut live = Vec::new();
        let mut dead = Vec::new();
        let mut seed = 7u64;
        let mut next = || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            seed >> 33
        };
        for round in 0..if cfg!(miri) { 3 } else { 40 } {
            for _ in 0..50 {
                let d = 1 + next() % 5_000;
                live.push((wheel.insert(d, d), d));
            }
            // Cancel more than a batch in a row, from random positions.
            for _ in 0..45 {
                let i = (next() as usize) % live.len();
                let (key, d) = live.swap_remove(i);
                assert_eq!(wheel.cancel(key), Some(d), "{g:?} round {round}");
                dead.push(key);
            }
            assert_eq!(wheel.len(), live.len());
        }
        for &key in &dead {
            assert_eq!(wheel.cancel(key), None);
            assert!(!wheel.contains(key));
        }
        let mut want: Vec<u64> = live.iter().map(|&(_, d)| d).collect();
        want.sort();
        let mut got = Vec::new();
        while let Some(at) = wheel.next_expiration() {
            got.extend(wheel.advance(at).map(|e| e.value));
        }
        assert_eq!(got, want, "{g:?}");
        assert!(wheel.is_empty());
    }
}

/// Issue 8, defect 3: after `poll` hands out an overdue timer, the cursor
/// may still lag behind `now` with a cascade pending. `next_expiration`
/// then said `now` while nothing was due, and `poll(next_expiration())`
/// neither fired nor moved time: a tickless driver would spin once.
#[test]
fn polling_at_next_expiration_always_fires_or_moves_time() {
    let mut wheel = Wheel::new();
    for _ in 0..3 {
        wheel.insert(0, 'a');
    }
    assert_eq!(wheel.advance(41).count(), 3);
    wheel.insert(65, 'b');
    wheel.insert(0, 'c');
    assert_eq!(wheel.poll(64).map(|e| e.value), Some('c'));
    let next = wheel.next_expiration().expect("'b' is pending");
    let before = wheel.now();
    let fired = wheel.poll(next);
    assert!(
        fired.is_some() || wheel.now() > before,
        "poll({next}) at now {before} neither fired nor moved time"
    );
    assert_eq!(next, 65);
}

/// The same property wherever the due list can run dry while the cursor
/// lags: a cancel or a reset of the last due timer, and an `advance`
/// dropped before its first step.
#[test]
fn emptying_the_due_list_any_way_leaves_next_expiration_honest() {
    type Empty = fn(&mut Wheel<char>, TimerKey);
    let ways: [(&str, Empty); 4] = [
        ("cancel", |w, k| assert_eq!(w.cancel(k), Some('c'))),
        ("reset", |w, k| assert!(w.reset(k, 1_000))),
        ("poll", |w, _| assert!(w.poll(64).is_some())),
        ("peek+cancel", |w, _| {
            let (key, _) = w.peek().expect("'c' is due");
            assert_eq!(w.cancel(key), Some('c'));
        }),
    ];
    for (how, empty) in ways {
        let mut wheel = Wheel::new();
        wheel.advance(41).for_each(drop);
        wheel.insert(65, 'b');
        let overdue = wheel.insert(0, 'c');
        wheel.set_now(64);
        empty(&mut wheel, overdue);
        let next = wheel.next_expiration().expect("'b' is pending");
        assert!(
            next > wheel.now(),
            "{how}: next_expiration {next} <= now {}",
            wheel.now()
        );
    }
    // `advance` dropped unpolled: time has moved, the cascade is done.
    let mut wheel = Wheel::new();
    wheel.insert(65, 'b');
    drop(wheel.advance(64));
    assert_eq!(wheel.next_expiration(), Some(65));
}
