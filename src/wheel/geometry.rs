//! The wheel's shape ([`Geometry`]) and the pure slot and level arithmetic
//! on it: which level and slot a deadline files into, when a slot starts,
//! where the next occupied slot is, and when the overflow list is swept.
//!
//! Everything here is a small function of plain integers, tested exhaustively
//! on small shapes below.

use crate::error::GeometryError;
use crate::Tick;

/// The shape of a wheel: `2^slot_bits` slots per level, `levels` levels.
///
/// Level `k` has slots of `2^(slot_bits·k)` ticks each, so the wheel spans
/// `2^(slot_bits·levels)` ticks before deadlines spill into its overflow list
/// (see [`Wheel`](crate::Wheel) for the algorithm). Every shape from 1 to 6
/// slot bits and 1 to 6 levels works; small ones make tests hit cascades and
/// overflow constantly.
///
/// ```
/// use tickwheel::Geometry;
///
/// let g = Geometry::new(2, 2)?; // 4 slots × 2 levels
/// assert_eq!(g.slots_per_level(), 4);
/// assert_eq!(g.span(), 16);
/// assert_eq!(Geometry::default().span(), 1 << 36);
/// # Ok::<(), tickwheel::GeometryError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Geometry {
    slot_bits: u8,
    levels: u8,
}

impl Geometry {
    /// The largest `slot_bits`: a level's occupancy bitmap is one `u64`.
    ///
    /// ```
    /// use tickwheel::Geometry;
    /// assert!(Geometry::new(Geometry::MAX_SLOT_BITS, 1).is_ok());
    /// assert!(Geometry::new(Geometry::MAX_SLOT_BITS + 1, 1).is_err());
    /// ```
    pub const MAX_SLOT_BITS: u32 = 6;
    /// The largest number of levels.
    ///
    /// ```
    /// use tickwheel::Geometry;
    /// assert!(Geometry::new(1, Geometry::MAX_LEVELS).is_ok());
    /// assert!(Geometry::new(1, Geometry::MAX_LEVELS + 1).is_err());
    /// ```
    pub const MAX_LEVELS: u32 = 6;

    /// 64 slots × 6 levels: a span of 2³⁶ ticks (about 2.2 years of 1 ms
    /// ticks) before the overflow list is used. The same shape as tokio's
    /// timer wheel.
    ///
    /// ```
    /// use tickwheel::Geometry;
    ///
    /// assert_eq!(Geometry::DEFAULT, Geometry::new(6, 6).unwrap());
    /// ```
    pub const DEFAULT: Geometry = Geometry {
        slot_bits: 6,
        levels: 6,
    };

    /// A wheel of `2^slot_bits` slots per level and `levels` levels.
    ///
    /// # Errors
    ///
    /// [`GeometryError::SlotBits`] unless `1 <= slot_bits <= 6`, and
    /// [`GeometryError::Levels`] unless `1 <= levels <= 6`.
    ///
    /// ```
    /// use tickwheel::{Geometry, GeometryError};
    ///
    /// assert!(Geometry::new(1, 1).is_ok()); // 2 slots × 1 level
    /// assert_eq!(Geometry::new(0, 3), Err(GeometryError::SlotBits(0)));
    /// assert_eq!(Geometry::new(6, 7), Err(GeometryError::Levels(7)));
    /// ```
    pub const fn new(slot_bits: u32, levels: u32) -> Result<Geometry, GeometryError> {
        if slot_bits == 0 || slot_bits > Self::MAX_SLOT_BITS {
            return Err(GeometryError::SlotBits(slot_bits));
        }
        if levels == 0 || levels > Self::MAX_LEVELS {
            return Err(GeometryError::Levels(levels));
        }
        Ok(Geometry {
            slot_bits: slot_bits as u8,
            levels: levels as u8,
        })
    }

    /// Bits of slot index per level.
    ///
    /// ```
    /// # use tickwheel::Geometry;
    /// assert_eq!(Geometry::new(3, 2).unwrap().slot_bits(), 3);
    /// ```
    pub const fn slot_bits(self) -> u32 {
        self.slot_bits as u32
    }

    /// Number of levels.
    ///
    /// ```
    /// # use tickwheel::Geometry;
    /// assert_eq!(Geometry::new(3, 2).unwrap().levels(), 2);
    /// ```
    pub const fn levels(self) -> u32 {
        self.levels as u32
    }

    /// Slots per level, `2^slot_bits`.
    ///
    /// ```
    /// # use tickwheel::Geometry;
    /// assert_eq!(Geometry::new(3, 2).unwrap().slots_per_level(), 8);
    /// ```
    pub const fn slots_per_level(self) -> u32 {
        1 << self.slot_bits
    }

    /// Ticks the levels cover, `2^(slot_bits·levels)`. Deadlines further
    /// ahead than roughly this wait in the overflow list.
    ///
    /// ```
    /// # use tickwheel::Geometry;
    /// assert_eq!(Geometry::new(3, 2).unwrap().span(), 64);
    /// ```
    pub const fn span(self) -> u64 {
        1 << (self.slot_bits as u32 * self.levels as u32)
    }

    /// Ticks per slot at `level`.
    #[inline]
    pub(crate) const fn shift(self, level: u32) -> u32 {
        self.slot_bits as u32 * level
    }

    #[inline]
    pub(crate) const fn mask(self) -> u64 {
        (1 << self.slot_bits) - 1
    }

    #[inline]
    pub(crate) const fn top(self) -> u32 {
        self.levels as u32 - 1
    }

    /// For each bit position, the level a deadline goes to when that is the
    /// highest bit in which it differs from the current time, capped at the
    /// top level. Replaces a division by `slot_bits` on the insert path.
    pub(crate) fn level_by_bit(self) -> [u8; 64] {
        let mut table = [0u8; 64];
        for (bit, level) in table.iter_mut().enumerate() {
            *level = (bit as u32 / self.slot_bits()).min(self.top()) as u8;
        }
        table
    }
}

impl Default for Geometry {
    fn default() -> Self {
        Geometry::DEFAULT
    }
}

/// Where a future deadline is filed, relative to the current time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Place {
    /// Level and slot index.
    Slot(u32, u32),
    /// Further ahead than the top level's window.
    Overflow,
}

/// Files `deadline` relative to `elapsed`.
///
/// Level `k` (below the top) holds deadlines in the same `2^(b·(k+1))`-tick
/// block as `elapsed` but not in its current `2^(b·k)` slot, so the level is
/// the highest differing bit divided by `b`. The top level is a ring: it
/// takes any deadline whose top-level block is less than one rotation ahead,
/// which also covers deadlines just past a `2^(b·levels)` boundary. Anything
/// further goes to the overflow list.
///
/// Requires `deadline > elapsed`.
#[inline]
pub(crate) fn place(
    geometry: Geometry,
    level_by_bit: &[u8; 64],
    elapsed: Tick,
    deadline: Tick,
) -> Place {
    debug_assert!(deadline > elapsed);
    let differing = elapsed ^ deadline;
    let level = level_by_bit[(63 - differing.leading_zeros()) as usize] as u32;
    let top = geometry.top();
    if level < top {
        let shift = geometry.shift(level);
        return Place::Slot(level, ((deadline >> shift) & geometry.mask()) as u32);
    }
    let shift = geometry.shift(top);
    let blocks_ahead = (deadline >> shift) - (elapsed >> shift);
    if blocks_ahead < geometry.slots_per_level() as u64 {
        Place::Slot(top, ((deadline >> shift) & geometry.mask()) as u32)
    } else {
        Place::Overflow
    }
}

/// Distance from slot `current` to the first occupied slot at or after it,
/// going round a level of `2^slot_bits` slots; `None` if `occupied` is empty.
#[inline]
pub(crate) fn next_occupied(occupied: u64, current: u32, slot_bits: u32) -> Option<u32> {
    if occupied == 0 {
        return None;
    }
    let rotated = if slot_bits == 6 {
        occupied.rotate_right(current)
    } else {
        let width = 1u32 << slot_bits;
        let mask = (1u64 << width) - 1;
        ((occupied >> current) | (occupied << (width - current))) & mask
    };
    Some(rotated.trailing_zeros())
}

/// When the slot `distance` slots after the current one at `level` starts.
#[inline]
pub(crate) fn slot_start(geometry: Geometry, elapsed: Tick, level: u32, distance: u32) -> Tick {
    let shift = geometry.shift(level);
    ((elapsed >> shift) + distance as u64) << shift
}

/// When the overflow list must be swept: the start of the first top-level
/// block from which `earliest` lies within the top level's ring.
#[inline]
pub(crate) fn overflow_sweep_at(geometry: Geometry, earliest: Tick) -> Tick {
    let shift = geometry.shift(geometry.top());
    ((earliest >> shift) - (geometry.slots_per_level() as u64 - 1)) << shift
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::{vec, vec::Vec};

    fn geometries() -> impl Iterator<Item = Geometry> {
        (1..=6).flat_map(|b| (1..=6).map(move |l| Geometry::new(b, l).unwrap()))
    }

    /// Plain loop versions of the functions under test.
    fn naive_next_occupied(occupied: u64, current: u32, slots: u32) -> Option<u32> {
        (0..slots).find(|d| occupied & (1 << ((current + d) % slots)) != 0)
    }

    #[test]
    fn geometry_bounds() {
        for b in 0..=8 {
            for l in 0..=8 {
                let ok = (1..=6).contains(&b) && (1..=6).contains(&l);
                assert_eq!(Geometry::new(b, l).is_ok(), ok, "{b} {l}");
            }
        }
    }

    #[test]
    fn next_occupied_matches_a_scan_for_small_levels() {
        for bits in 1..=if cfg!(miri) { 2 } else { 4 } {
            let slots = 1 << bits;
            for occupied in 0..(1u64 << slots) {
                for current in 0..slots {
                    assert_eq!(
                        next_occupied(occupied, current, bits),
                        naive_next_occupied(occupied, current, slots),
                        "bits {bits} occupied {occupied:b} current {current}"
                    );
                }
            }
        }
    }

    #[test]
    fn next_occupied_matches_a_scan_for_wide_levels() {
        // Every single bit and every pair of bits, for 32 and 64 slots.
        // Under miri a sample (every 7th first bit, 9th second bit and 3rd
        // current slot): shifts and rotations of safe integers, where the
        // exhaustive pass cost the interpreter 160 s and could find no UB.
        let (first, second, now) = if cfg!(miri) { (7, 9, 3) } else { (1, 1, 1) };
        for bits in [5u32, 6] {
            let slots = 1u32 << bits;
            for i in (0..slots).step_by(first) {
                for j in (i..slots).step_by(second) {
                    let occupied = (1u64 << i) | (1u64 << j);
                    for current in (0..slots).step_by(now) {
                        assert_eq!(
                            next_occupied(occupied, current, bits),
                            naive_next_occupied(occupied, current, slots)
                        );
                    }
                }
            }
        }
    }

    /// The invariants `place` promises, checked against first principles.
    fn check_place(g: Geometry, table: &[u8; 64], elapsed: Tick, deadline: Tick) {
        let slots = g.slots_per_level() as u64;
        match place(g, table, elapsed, deadline) {
            Place::Slot(level, slot) => {
                let shift = g.shift(level);
                assert_eq!(slot as u64, (deadline >> shift) & g.mask());
                // Not in the current slot of its level…
                assert_ne!(deadline >> shift, elapsed >> shift);
                // …and less than one rotation ahead of it.
                assert!((deadline >> shift) - (elapsed >> shift) < slots);
                if level < g.top() {
                    // Below the top: same block one level up.
                    assert_eq!(
                        deadline >> (shift + g.slot_bits()),
                        elapsed >> (shift + g.slot_bits())
                    );
                }
                // The slot's start, as the wheel computes it, is due no later than
                // the deadline and after now.
                let distance =
                    ((slot as u64).wrapping_sub((elapsed >> shift) & g.mask()) & g.mask()) as u32;
                let start = slot_start(g, elapsed, level, distance);
                assert!(
                    start > elapsed && start <= deadline,
                    "{start} {elapsed} {deadline}"
                );
                assert_eq!(start >> shift, deadline >> shift);
            }
            Place::Overflow => {
                let shift = g.shift(g.top());
                assert!((deadline >> shift) - (elapsed >> shift) >= slots);
                let sweep = overflow_sweep_at(g, deadline);
                assert!(sweep > elapsed && sweep <= deadline);
                // At the sweep, the deadline fits the top ring.
                assert!(
                    matches!(place(g, table, sweep, deadline), Place::Slot(l, _) if l == g.top())
                );
            }
        }
    }

    #[test]
    fn place_invariants_hold_near_every_boundary() {
        // Under miri: the smallest and the default shape, every 5th bit.
        let (shapes, bit_step): (Vec<Geometry>, usize) = if cfg!(miri) {
            (vec![Geometry::new(1, 1).unwrap(), Geometry::DEFAULT], 5)
        } else {
            (geometries().collect(), 1)
        };
        let mut points = vec![0u64, 1, u64::MAX - 1, u64::MAX];
        for bit in (0..64).step_by(bit_step) {
            let p = 1u64 << bit;
            points.extend([p - 1, p, p + 1]);
        }
        for g in shapes {
            let table = g.level_by_bit();
            for &elapsed in &points {
                for &delta in &points {
                    if let Some(deadline) = elapsed.checked_add(delta.max(1)) {
                        check_place(g, &table, elapsed, deadline);
                    }
                }
                if elapsed < u64::MAX {
                    check_place(g, &table, elapsed, u64::MAX);
                }
            }
        }
    }

    #[test]
    fn place_invariants_hold_exhaustively_on_small_shapes() {
        let (times, ahead) = if cfg!(miri) { (6, 20) } else { (300, 600) };
        for g in geometries().filter(|g| g.span() <= 256) {
            let table = g.level_by_bit();
            for elapsed in 0..times {
                for deadline in elapsed + 1..elapsed + ahead {
                    check_place(g, &table, elapsed, deadline);
                }
            }
        }
    }

    #[test]
    fn levels_of_the_default_shape() {
        let g = Geometry::DEFAULT;
        let t = g.level_by_bit();
        let level = |e, d| match place(g, &t, e, d) {
            Place::Slot(level, _) => Some(level),
            Place::Overflow => None,
        };
        assert_eq!(level(0, 63), Some(0));
        assert_eq!(level(0, 64), Some(1));
        assert_eq!(level(0, 4095), Some(1));
        assert_eq!(level(0, 4096), Some(2));
        assert_eq!(level(0, (1 << 36) - 1), Some(5));
        // Just past the span but less than one top rotation ahead: the top ring.
        assert_eq!(level((1 << 36) - 1, (1 << 36) + 5), Some(5));
        assert_eq!(level(0, 1 << 36), None);
        assert_eq!(level(0, u64::MAX), None);
    }
}
