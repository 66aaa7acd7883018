//! Black-box behaviour of `Wheel` that spends lateness on speed: resets
//! to a later deadline, which are lazy, and per-timer slack.

use tickwheel::Wheel;

/// A reset to a later deadline leaves the timer where it is filed (its old
/// slot still bounds `next_expiration`), yet it fires at the new deadline,
/// never before, and after every timer inserted or reset to that deadline
/// before it and before every one after it.
#[test]
fn lazy_resets_fire_on_time_and_in_reset_order() {
    let mut wheel = Wheel::new();
    let a = wheel.insert(100, 'a');
    let b = wheel.insert(300, 'b');
    let c = wheel.insert(5_000, 'c');
    assert!(wheel.reset(a, 300)); // after b: a was reset after b's insert
    let d = wheel.insert(300, 'd'); // after a
    assert!(wheel.reset(b, 300)); // b again, now after d
    assert!(wheel.reset(c, 300)); // c from far away, last

    // Lazy: `a` is still filed in the level-1 slot of 100, `[64, 128)`, so
    // the wheel names that slot's end (no timer elsewhere is due before
    // it). Moved at once, `a` would be in the slot of `[256, 320)`, and the
    // answer would be 300.
    assert_eq!(wheel.next_expiration(), Some(128));
    assert_eq!(wheel.advance(299).count(), 0, "nothing fires early");
    assert_eq!(wheel.deadline(a), Some(300));
    let fired: Vec<_> = wheel
        .advance(300)
        .map(|e| (e.key, e.deadline, e.value))
        .collect();
    assert_eq!(
        fired,
        [(a, 300, 'a'), (d, 300, 'd'), (b, 300, 'b'), (c, 300, 'c')]
    );
    assert!(wheel.is_empty());
}

/// An earlier deadline cannot be lazy: the timer moves at once.
#[test]
fn resets_to_an_earlier_deadline_move_at_once() {
    let mut wheel = Wheel::new();
    let a = wheel.insert(1_000, 'a');
    wheel.insert(50, 'b');
    assert!(wheel.reset(a, 50));
    assert_eq!(wheel.next_expiration(), Some(50));
    let fired: Vec<_> = wheel.advance(50).map(|e| e.value).collect();
    assert_eq!(fired, ['b', 'a']);
}

/// Slack: every timer fires inside its window `[deadline, deadline + slack]`
/// (never early, never after), and a tickless loop over `next_expiration`
/// wakes far less often than with exact deadlines.
#[test]
fn slack_keeps_every_timer_in_its_window_and_coalesces_wakeups() {
    // Fewer under miri, at the same density.
    let timers: u64 = if cfg!(miri) { 500 } else { 10_000 };
    let wakeups = |slack: u64| {
        let mut wheel = Wheel::new();
        let mut state = 0x51AC_u64;
        for i in 0..timers {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1);
            let deadline = (state >> 33) % (10 * timers);
            wheel.insert_with_slack(deadline, slack, (i, deadline));
        }
        let mut count = 0;
        let mut fired = 0;
        while let Some(next) = wheel.next_expiration() {
            count += 1;
            wheel.set_now(next);
            let now = wheel.now();
            for expired in wheel.advance(now) {
                let (_, deadline) = expired.value;
                assert!(
                    deadline <= now && now <= deadline + slack,
                    "slack {slack}: due {deadline}, fired at {now}"
                );
                fired += 1;
            }
        }
        assert_eq!(fired, timers);
        count
    };
    let exact = wakeups(0);
    let coarse = wakeups(1_000);
    println!("wake-ups: exact {exact}, slack 1,000: {coarse}");
    assert!(
        coarse * 5 <= exact,
        "slack 1000 woke {coarse} times, exact deadlines {exact}"
    );
}
