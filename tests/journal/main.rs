//! `DurableTimer` and snapshots: the journal's records and promises, keyed
//! jobs, job schedulers, `restore`, and crash loops that SIGKILL a child run
//! of this binary. One binary, so the suite builds and links once.

extern crate alloc;

#[path = "../support/children.rs"]
mod children;
mod journal;
mod journal_audit;
mod journal_full_disk;
mod journal_keys;
mod journal_missed;
mod journal_promises;
mod journal_races;
mod journal_schedules;
#[path = "../support/journals.rs"]
mod journals;
mod restore;
mod restore_audit;
mod restore_owed;
mod restore_props;
mod schedules_audit;
mod schedules_crash;
mod schedules_races;
#[path = "../support/scratch.rs"]
mod scratch;
