//! A durable job as the timer holds it ([`Job`]), and the executor that
//! runs it and then journals `done` ([`RunAndRecord`]), or, for a job
//! scheduler's run, its next run (`schedulers.rs`).

use alloc::boxed::Box;
use alloc::sync::Arc;
use std::time::SystemTime;

use super::format::Record;
use super::journal::Log;
use super::keys::Keys;
use super::schedulers::{Run, Schedulers};
use super::{MisfirePolicy, PendingJob};
use crate::timer::{Executor, Expired, Rejected};

/// A job inside the timer: its journal id, its key if it has one, and
/// its value.
#[derive(Clone)]
pub(super) struct Job<T> {
    pub(super) id: u64,
    /// A keyed job's key, or a job scheduler's.
    pub(super) key: Option<Arc<str>>,
    pub(super) value: T,
    /// A job scheduler's run (`schedulers.rs`).
    pub(super) recurring: bool,
}

/// Runs each fired job's handler on the driver thread, then writes `done`.
pub(super) struct RunAndRecord<T: Send + 'static> {
    pub(super) handler: Box<dyn Fn(T) + Send + Sync>,
    pub(super) log: Arc<Log>,
    pub(super) keys: Arc<Keys>,
    pub(super) schedulers: Arc<Schedulers<T>>,
    /// `T::clone`, for the next run of a job scheduler (a function, so
    /// that the executor needs no `T: Clone` bound).
    pub(super) clone: fn(&T) -> T,
}

impl<T: Send + 'static> Executor<Job<T>> for RunAndRecord<T> {
    fn execute(&self, fired: Expired<Job<T>>) -> Result<(), Rejected<Job<T>>> {
        let Job {
            id,
            key,
            value,
            recurring,
        } = fired.value;
        if let (true, Some(key)) = (recurring, &key) {
            // Journals the next run instead of `done`.
            let run = Run {
                key,
                id,
                next_value: (self.clone)(&value),
                value,
            };
            self.schedulers.run(run, &*self.handler, &self.log);
            return Ok(());
        }
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

/// The misfire policy for jobs wrapped with their ids: the same settings;
/// a reschedule function sees the job without its id.
pub(super) fn job_policy<T: Clone + Send + Sync + 'static>(
    policy: &MisfirePolicy<T>,
) -> MisfirePolicy<Job<T>> {
    use super::OnMissed;
    let on_missed = match policy.on_missed.clone() {
        OnMissed::FireNow => OnMissed::FireNow,
        OnMissed::Spread(window) => OnMissed::Spread(window),
        OnMissed::Discard => OnMissed::Discard,
        OnMissed::DeadLetter => OnMissed::DeadLetter,
        OnMissed::Reschedule(pick) => OnMissed::Reschedule(Arc::new(
            move |job: &PendingJob<Job<T>>, now: SystemTime| {
                let plain = PendingJob {
                    due: job.due,
                    repeat: job.repeat,
                    value: job.value.value.clone(),
                };
                pick(&plain, now)
            },
        )),
    };
    MisfirePolicy {
        threshold: policy.threshold,
        on_missed,
        max_catch_up: policy.max_catch_up,
    }
}
