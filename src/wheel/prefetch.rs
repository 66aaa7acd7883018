//! Starting a load into the cache early, for the arena's prefetches.

/// Starts loading the cache line at `pointer`.
#[inline(always)]
#[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
pub(super) fn prefetch_read<S>(pointer: *const S) {
    #[cfg(target_arch = "x86")]
    use core::arch::x86::{_mm_prefetch, _MM_HINT_T0};
    #[cfg(target_arch = "x86_64")]
    use core::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
    // SAFETY: `_mm_prefetch` is unsafe only because it is an SSE intrinsic,
    // and SSE is part of every x86_64 target and of the i686 targets Rust
    // ships. A prefetch never faults and has no effect on memory contents,
    // whatever address it is given; the arena passes only addresses
    // inside its nodes anyway.
    unsafe { _mm_prefetch::<_MM_HINT_T0>(pointer.cast::<i8>()) }
}

/// Elsewhere a prefetch is only a hint, and stable Rust has no portable one.
#[inline(always)]
#[cfg(not(any(target_arch = "x86", target_arch = "x86_64")))]
pub(super) fn prefetch_read<S>(_pointer: *const S) {}
