//! `Schedule`'s instants: grids, cron zones and their daylight-saving
//! changes, encoding.

use super::*;

#[test]
#[cfg(feature = "redis")]
fn the_latest_instants_end_at_their_bound_oldest_first() {
    let s = Schedule::every(Duration::from_secs(1));
    let sec = 1_000_000;
    assert_eq!(s.latest(10 * sec, 3), [8 * sec, 9 * sec, 10 * sec]);
    assert_eq!(s.latest(10 * sec + 1, 2), [9 * sec, 10 * sec]);
    let from = UNIX_EPOCH + Duration::from_secs(5);
    let late = Schedule::every_from(Duration::from_secs(1), from);
    assert_eq!(late.latest(6 * sec, 10), [5 * sec, 6 * sec]);
    assert!(late.latest(4 * sec, 10).is_empty());
    #[cfg(feature = "cron")]
    {
        // Daily at 02:30 UTC: the runs before a bound a day and more on.
        let daily = Schedule::cron("0 30 2 * * *", "UTC").unwrap();
        let day = 86_400 * sec;
        let at = 9_000 * sec;
        assert_eq!(daily.latest(3 * day + at, 2), [2 * day + at, 3 * day + at]);
        assert_eq!(daily.latest(4 * day, 2), [2 * day + at, 3 * day + at]);
        assert!(daily.latest(at - 1, 5).is_empty());
    }
}

#[test]
fn a_start_before_1970_keeps_its_grid_and_one_too_far_is_refused() {
    let sec = 1_000_000;
    let s = Schedule::every_from(Duration::from_secs(7), UNIX_EPOCH - Duration::from_secs(3));
    assert_eq!(s.next_after(0), Some(4 * sec));
    assert_eq!(s.next_after(4 * sec), Some(11 * sec));
    assert!(s.check().is_ok());
    let from = |secs| Schedule::every_from(Duration::from_secs(1), UNIX_EPOCH + secs).check();
    assert!(from(Duration::from_secs(10_000_000_000_000)).is_err());
    assert!(from(Duration::from_secs(6_000_000_000_000)).is_ok());
}

#[test]
fn every_runs_on_its_grid() {
    let s = Schedule::every(Duration::from_secs(60));
    assert_eq!(s.next_after(0), Some(60_000_000));
    assert_eq!(s.next_after(59_999_999), Some(60_000_000));
    assert_eq!(s.next_after(60_000_000), Some(120_000_000));
    let from = UNIX_EPOCH + Duration::from_secs(100);
    let s = Schedule::every_from(Duration::from_secs(10), from);
    assert_eq!(s.next_after(0), Some(100_000_000));
    assert_eq!(s.next_after(100_000_000), Some(110_000_000));
    assert_eq!(Schedule::decode(&s.encode()), Some(s));
    assert!(Schedule::every(Duration::from_millis(9)).check().is_err());
    assert!(Schedule::every(Duration::MAX).check().is_err());
    assert_eq!(Schedule::decode("once\nhourly\n1\n2"), None);
}

/// `Schedule::cron`: "Local times that a daylight-saving change skips
/// do not run; those it repeats run once, at the first", and the next
/// instant after `t` is strictly after it. On 2026-11-01 New York's
/// 01:00 to 01:59 comes twice (EDT, then EST). Asked for the instant
/// after 01:05 EST, the second pass, the cron crate's first answer is
/// the first pass's 01:10 EDT, an hour earlier: a scheduler upserted
/// then made a run for an instant before it existed, and `Missed::Skip`
/// after an outage ending then ran the missed runs it skips.
#[cfg(feature = "cron")]
#[test]
fn an_hour_a_daylight_saving_change_repeats_runs_once_and_time_goes_forward() {
    let s = Schedule::cron("0 */10 1 * * *", "America/New_York").unwrap();
    let s_ = 1_000_000_i64;
    // 2026-11-01 05:00 UTC is 01:00 EDT; 06:05 UTC is 01:05 EST.
    let (first_pass, second_pass) = (1_793_509_200 * s_, 1_793_513_100 * s_);
    // The next day's 01:00 EST.
    let next_day = 1_793_599_200 * s_;
    assert_eq!(s.next_after(first_pass - 1), Some(first_pass));
    assert_eq!(s.next_after(first_pass + 50 * 60 * s_), Some(next_day));
    assert_eq!(s.next_after(second_pass), Some(next_day));
    assert_eq!(s.next_after(second_pass + 10 * 60 * s_), Some(next_day));
}

/// `last_before` on cron timetables answers what stepping forward
/// answers, around daylight-saving changes too (New York's repeated
/// hour, Lord Howe's repeated and skipped half hours).
#[cfg(feature = "cron")]
#[test]
// 80,000 cron lookups: minutes under miri, and safe code over the cron
// crate, which the ordinary run covers.
#[cfg_attr(miri, ignore)]
fn the_latest_cron_instant_is_the_one_stepping_forward_finds() {
    let s_ = 1_000_000_i64;
    let walk = |s: &Schedule, before: i64| {
        let (mut t, mut last) = (before - 8 * 86_400 * s_, None);
        while let Some(next) = s.next_after(t).filter(|&n| n < before) {
            (last, t) = (Some(next), next);
        }
        last
    };
    let cases = [
        ("0 */10 1 * * *", "America/New_York", 1_793_505_600),
        ("0 50 1 * * *", "America/New_York", 1_793_505_600),
        ("0 */10 * * * *", "Australia/Lord_Howe", 1_775_307_600),
        ("0 45 1 * * *", "Australia/Lord_Howe", 1_775_307_600),
        ("0 15 2 * * *", "Australia/Lord_Howe", 1_791_100_800),
        ("0 0 9 * * Tue", "Europe/Paris", 1_774_742_400),
    ];
    for (expression, zone, from) in cases {
        let s = Schedule::cron(expression, zone).unwrap();
        // Every 7 minutes and a second over 8 hours around the change.
        for i in 0..70 {
            let before = (from + i * 421) * s_ + i % 3;
            let want = walk(&s, before);
            assert_eq!(
                s.last_before(i64::MIN, before),
                want,
                "{expression} {zone} {before}"
            );
            let after = want.map_or(0, |w| w - 1);
            assert_eq!(s.last_before(after, before), want);
            assert_eq!(want.and_then(|w| s.last_before(w, before)), None);
        }
    }
}

/// A cron schedule in a zone with daylight saving: 02:30 local does not
/// exist on the spring-forward day and exists twice on the fall-back
/// day; 09:30 stays 09:30 local across both.
#[cfg(feature = "cron")]
#[test]
fn cron_instants_follow_the_zone() {
    let s = Schedule::cron("0 30 9 * * *", "America/New_York").unwrap();
    // 2026-03-07 12:00 UTC is 07:00 EST (UTC-5): the next 09:30 local
    // is 14:30 UTC; the one after, on 2026-03-08 (EDT from 02:00,
    // UTC-4), 13:30 UTC: 23 hours later. Then 24 again.
    let s_ = 1_000_000_i64;
    let first = s.next_after(1_772_884_800 * s_).unwrap();
    assert_eq!(first, 1_772_893_800 * s_);
    let second = s.next_after(first).unwrap();
    assert_eq!(second, 1_772_976_600 * s_);
    assert_eq!(s.next_after(second).unwrap() - second, 86_400 * s_);
    assert_eq!(Schedule::decode(&s.encode()), Some(s));
}
