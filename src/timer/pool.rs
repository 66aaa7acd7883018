//! [`ThreadPool`]: the default executor, a fixed set of worker threads fed
//! by a crossbeam channel. Its threads, locks and counters come from the
//! sync facade, so loom models run it too.

use super::unwind::catch_unwind;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;
use core::panic::AssertUnwindSafe;
use std::io;

use super::executor::{Executor, Rejected, Task};
use super::sync::channel::{self, Receiver, Sender};
use super::sync::{thread, Arc, AtomicU64, Condvar, JoinHandle, Mutex, Ordering, ThreadId};
use super::Expired;

/// A fixed pool of worker threads that run fired [`Task`]s, fed by a
/// crossbeam channel. A slow task occupies one worker; the driver and the
/// other workers carry on, so it never delays other timers' firing.
///
/// A task that panics is caught, counted, and the worker keeps going.
/// Dropping the pool (with the timer's last handle) lets the workers finish
/// what is queued, then joins them.
///
/// The workers start with the first task handed to the pool, not when the
/// timer is built: a timer used only for futures (sleeps, timeouts) or
/// with another executor per handle runs no idle workers. If none can be
/// spawned then, the task is refused and handed to the timer's
/// `on_undelivered` hook, like any refused task; if only some can, those
/// run the tasks, and later tasks try to start the rest.
///
/// ```
/// use std::time::Duration;
/// use tickwheel::timer::ThreadPool;
/// use tickwheel::Timer;
///
/// let timer = Timer::builder().executor(ThreadPool::new(4)).build()?;
/// let (tx, rx) = std::sync::mpsc::channel();
/// timer.schedule(Duration::from_millis(1), Box::new(move || tx.send(1).unwrap()))?;
/// assert_eq!(rx.recv_timeout(Duration::from_secs(5))?, 1);
/// # Ok::<(), Box<dyn core::error::Error>>(())
/// ```
pub struct ThreadPool {
    threads: usize,
    name: String,
    sender: Mutex<Option<Sender<Task>>>,
    /// The receiving end: for the workers to come, and for a flush from a
    /// worker, which runs queued tasks itself (on a one-worker pool nobody
    /// else would).
    receiver: Mutex<Option<Receiver<Task>>>,
    /// The workers started so far: all of them, or (a spawn failed) the
    /// first few, kept and completed with the next task.
    workers: Mutex<Vec<JoinHandle<()>>>,
    state: Arc<PoolState>,
}

#[derive(Default)]
struct PoolState {
    /// Tasks sent and not yet finished, for `flush`.
    outstanding: Mutex<usize>,
    idle: Condvar,
    panicked: AtomicU64,
    worker_ids: Mutex<Vec<ThreadId>>,
}

impl ThreadPool {
    /// A pool of `threads` workers (at least one), started with the first
    /// task.
    ///
    /// ```
    /// let pool = tickwheel::timer::ThreadPool::new(2);
    /// # drop(pool);
    /// ```
    pub fn new(threads: usize) -> Self {
        ThreadPool {
            threads: threads.max(1),
            name: String::from("tickwheel-worker"),
            sender: Mutex::new(None),
            receiver: Mutex::new(None),
            workers: Mutex::new(Vec::new()),
            state: Arc::default(),
        }
    }

    /// Names the worker threads `{name}-{i}`. A name with a NUL byte
    /// cannot name a thread: building a timer with such a pool fails with
    /// an I/O error of kind `InvalidInput`.
    ///
    /// ```
    /// let pool = tickwheel::timer::ThreadPool::new(2).name("orders");
    /// # drop(pool);
    /// ```
    #[must_use]
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Starts the workers not yet running; those started before a failed
    /// spawn are kept, so a retry never starts more than `threads`.
    fn spawn(&self, receiver: &Receiver<Task>) -> io::Result<()> {
        let mut workers = self.workers.lock();
        for i in workers.len()..self.threads {
            let receiver = receiver.clone();
            let state = Arc::clone(&self.state);
            workers.push(
                thread::Builder::new()
                    .name(format!("{}-{i}", self.name))
                    .spawn(move || work(&receiver, &state))?,
            );
        }
        Ok(())
    }
}

fn work(receiver: &Receiver<Task>, state: &PoolState) {
    state.worker_ids.lock().push(thread::current().id());
    for task in receiver.iter() {
        run(task, state);
    }
}

/// Runs one queued task, on a worker or in a worker's flush.
fn run(task: Task, state: &PoolState) {
    if catch_unwind(AssertUnwindSafe(task)).is_err() {
        state.panicked.fetch_add(1, Ordering::Relaxed);
    }
    let mut outstanding = state.outstanding.lock();
    *outstanding -= 1;
    // At 1, a flush from the one task left may be waiting for it.
    if *outstanding <= 1 {
        state.idle.notify_all();
    }
}

impl Default for ThreadPool {
    /// Two workers: enough that one slow task does not stall the rest.
    fn default() -> Self {
        ThreadPool::new(2)
    }
}

impl Executor<Task> for ThreadPool {
    fn start(&self) -> io::Result<()> {
        if self.name.contains('\0') {
            // `thread::Builder` would panic on it at the first task.
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "a ThreadPool name contains a NUL byte",
            ));
        }
        let mut sender = self.sender.lock();
        if sender.is_some() {
            return Ok(());
        }
        let (tx, rx) = channel::unbounded();
        *self.receiver.lock() = Some(rx);
        *sender = Some(tx);
        Ok(())
    }

    fn execute(&self, fired: Expired<Task>) -> Result<(), Rejected<Task>> {
        let sender = self.sender.lock();
        let Some(sender) = sender.as_ref() else {
            return Err(Rejected(fired));
        };
        // The first task starts the workers (a later one, those a failed
        // spawn left out). Short of some, the ones running take the task;
        // with none, it is refused.
        if self.workers.lock().len() < self.threads {
            let receiver = self.receiver.lock();
            if let Some(rx) = receiver.as_ref() {
                if self.spawn(rx).is_err() && self.workers.lock().is_empty() {
                    return Err(Rejected(fired));
                }
            }
        }
        *self.state.outstanding.lock() += 1;
        let Expired {
            key,
            deadline,
            value,
        } = fired;
        sender.send(value).map_err(|err| {
            *self.state.outstanding.lock() -= 1;
            Rejected(Expired {
                key,
                deadline,
                value: err.into_inner(),
            })
        })
    }

    fn flush(&self) {
        // Called from one of this pool's tasks (one that shuts its timer
        // down gracefully), that task is outstanding until it returns:
        // wait for the others only, or the wait would never end. Tasks
        // queued behind it it runs itself: on a one-worker pool no one
        // else would.
        let me = thread::current().id();
        let own = usize::from(self.state.worker_ids.lock().contains(&me));
        if own == 1 {
            let receiver = self.receiver.lock().clone();
            while let Some(task) = receiver.as_ref().and_then(|rx| rx.try_recv().ok()) {
                run(task, &self.state);
            }
        }
        let mut outstanding = self.state.outstanding.lock();
        while *outstanding > own {
            outstanding = self.state.idle.wait(outstanding);
        }
    }

    fn panics(&self) -> u64 {
        self.state.panicked.load(Ordering::Relaxed)
    }
}

impl Drop for ThreadPool {
    fn drop(&mut self) {
        // Closing the channel lets the workers drain it and exit.
        drop(self.sender.lock().take());
        let me = thread::current().id();
        let on_worker = self.state.worker_ids.lock().contains(&me);
        for worker in self.workers.lock().drain(..) {
            // A task that drops the last timer handle runs on a worker; that
            // worker cannot join itself and exits on its own.
            if on_worker && worker.thread().id() == me {
                continue;
            }
            let _ = worker.join();
        }
    }
}

impl fmt::Debug for ThreadPool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ThreadPool")
            .field("threads", &self.threads)
            .field("name", &self.name)
            .field("outstanding", &*self.state.outstanding.lock())
            .finish()
    }
}
