//! The core's tests (`Wheel`, no clock, no threads): its operations, lazy
//! resets and slack, drops, and a model checked against it. One binary, so
//! the suite builds and links once; miri runs it whole.

extern crate alloc;

mod against_model;
mod drops;
mod lazy_and_slack;
#[path = "../support/model.rs"]
mod model;
#[path = "../support/ops.rs"]
mod ops;
mod wheel;
mod wheel_audit;
