//! Cancelling and moving a [`DurableTimer`]'s jobs. A cancel or a reset
//! holds its job (it cannot fire) while its record is written, and the
//! two take turns on one job ([`Turns`]), so that neither moves a job the
//! other holds: a job never fires while a record about it is written.

use alloc::collections::BTreeSet;
use core::time::Duration;

use parking_lot::{Condvar, Mutex};

use super::durable::DurableTimer;
use super::format::Record;
use super::handle::DurableHandle;
use super::payload::Payload;
use crate::metrics::metric;

/// The jobs (by journal id) that a cancel or a reset is working on; a
/// second call on one of them waits for its turn. Held only while a call
/// holds, writes and moves or removes its job: no user code runs, and
/// calls on different jobs never wait for each other (their journal
/// writes still share fsyncs).
#[derive(Default)]
pub(super) struct Turns {
    busy: Mutex<BTreeSet<u64>>,
    freed: Condvar,
}

impl Turns {
    /// Waits until no other call works on job `id`, then takes its turn
    /// until the returned guard is dropped.
    pub(super) fn take(&self, id: u64) -> Turn<'_> {
        let mut busy = self.busy.lock();
        while !busy.insert(id) {
            self.freed.wait(&mut busy);
        }
        Turn { turns: self, id }
    }
}

/// A call's turn on one job ([`Turns::take`]).
pub(super) struct Turn<'a> {
    turns: &'a Turns,
    id: u64,
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        self.turns.busy.lock().remove(&self.id);
        self.turns.freed.notify_all();
    }
}

impl<T> DurableTimer<T>
where
    T: Payload + Clone + Send + Sync + 'static,
{
    /// Cancels a job: `Some(value)` if it will never run, `None` if it has
    /// run or is running, or the handle is stale. The job is held first
    /// (it cannot fire while the cancel is written), then the cancel goes
    /// in the journal, then the job leaves the timer: so a cancelled job
    /// never comes back after a restart, and a job whose cancel answered
    /// `None` was taken to run before anything was written, so a crash
    /// before its handler returns still runs it again. If the journal
    /// cannot take the cancel (a full disk), the answer is `None` and the
    /// job stays pending at its due time (counted in
    /// [`write_errors`](Self::write_errors)). A cancel and a reset of one
    /// job take turns; calls on different jobs do not wait for each other.
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("tickwheel-cancel-doc-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let (jobs, _) = tickwheel::persist::DurableTimer::<u64>::open(dir.join("j"), tickwheel::persist::SyncPolicy::Always, &Default::default(), |_| {})?;
    /// let job = jobs.schedule(std::time::Duration::from_secs(900), 17)?;
    /// assert_eq!(jobs.cancel(job), Some(17));
    /// # drop(jobs); std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn cancel(&self, handle: DurableHandle) -> Option<T> {
        // A reset of the job waits: it once moved the held job, which
        // fired while the cancel was written.
        let _turn = self.turns.take(handle.id);
        // Held, it cannot fire during the journal's write: before, a fire
        // then won the race after the journal said cancelled, and a crash
        // before its handler returned lost the job.
        let due = self.timer.hold(handle.handle)?;
        if !self.log.append_or_refuse(Record::Cancel { id: handle.id }) {
            self.timer.unhold(handle.handle, due);
            return None; // the job stays pending
        }
        self.timer.cancel(handle.handle).map(|job| {
            if let Some(key) = &job.key {
                self.keys.release(key, job.id);
            }
            metric!(self.log.metrics.cancelled.increment(1));
            job.value
        })
    }

    /// Moves a pending job to `delay` from now; `false` if it has run, is
    /// running, or the handle is stale, or if `delay` takes the due time
    /// past what the clock can represent (`Duration::MAX`) or the journal
    /// cannot take the reset (a full disk): the job then keeps the time it
    /// had, in the timer and in the journal. As for a cancel, the job is
    /// held (it cannot fire) while the reset is written, so a reset that
    /// answers `false` because the job was taken to run has written
    /// nothing, and a crash before its handler returns runs it again at
    /// once, not at the time the reset asked for.
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("tickwheel-reset-doc-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let (jobs, _) = tickwheel::persist::DurableTimer::<u64>::open(dir.join("j"), tickwheel::persist::SyncPolicy::Always, &Default::default(), |_| {})?;
    /// let job = jobs.schedule(std::time::Duration::from_secs(900), 17)?;
    /// assert!(jobs.reset(job, std::time::Duration::from_secs(1800)));
    /// # drop(jobs); std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn reset(&self, handle: DurableHandle, delay: Duration) -> bool {
        let _turn = self.turns.take(handle.id);
        let (now, wall) = self.timer.clock_now();
        let (Some(due), Some(deadline)) = (wall.checked_add(delay), now.checked_add(delay)) else {
            // Refused: the job keeps the time it had.
            return false;
        };
        // Held, it cannot fire during the journal's write: before, a fire
        // then won the race after the journal had moved the job, and a
        // crash before its handler returned ran it again at the new time.
        let Some(held_at) = self.timer.hold(handle.handle) else {
            return false; // run, running or stale: nothing is written
        };
        if !self
            .log
            .append_or_refuse(Record::Reset { id: handle.id, due })
        {
            self.timer.unhold(handle.handle, held_at);
            return false;
        }
        // Held, and its turn ours: nothing can have taken it meanwhile.
        let moved = self.timer.reset_at(handle.handle, deadline);
        metric!(if moved {
            self.log.metrics.rescheduled.increment(1);
        });
        moved
    }
}
