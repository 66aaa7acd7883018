//! A durable job as the timer holds it ([`Job`]), and the executor that
//! runs it and then journals `done` ([`RunAndRecord`]).

use alloc::boxed::Box;
use alloc::sync::Arc;

use super::format::Record;
use super::journal::Log;
use super::keys::Keys;
use crate::timer::{Executor, Expired, Rejected};

/// A job inside the timer: its journal id, its key if it has one, and
/// its value.
#[derive(Clone)]
pub(super) struct Job<T> {
    pub(super) id: u64,
    pub(super) key: Option<Arc<str>>,
    pub(super) value: T,
}

/// Runs each fired job's handler on the driver thread, then writes `done`.
pub(super) struct RunAndRecord<T> {
    pub(super) handler: Box<dyn Fn(T) + Send + Sync>,
    pub(super) log: Arc<Log>,
    pub(super) keys: Arc<Keys>,
}

impl<T: Send + 'static> Executor<Job<T>> for RunAndRecord<T> {
    fn execute(&self, fired: Expired<Job<T>>) -> Result<(), Rejected<Job<T>>> {
        let Job { id, key, value } = fired.value;
        // Taken to run: no longer pending, so its key is free (a cancel by
        // key now finds nothing, as a cancel by handle would get `None`).
        if let Some(key) = key {
            self.keys.release(&key, id);
        }
        // A panicking handler propagates to the driver, which counts it;
        // `done` is then not written and the job runs again after a
        // restart (at least once).
        (self.handler)(value);
        if self.log.append(Record::Done { id }).is_err() {
            self.log.write_failed();
        }
        Ok(())
    }
}
