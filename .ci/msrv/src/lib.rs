//! Builds `tickwheel` as a dependent would, on the MSRV.
#![no_std]
pub use tickwheel as _checked;
