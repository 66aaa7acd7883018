//! What a journal's records add up to ([`Folded`]): the pending jobs and
//! the highest id used.

use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::vec::Vec;
use std::time::SystemTime;

use super::format::{self, Named, Record};

/// The journal as replayed: the jobs still pending and the highest id used.
/// Replay folds the file's records into it, and every append folds its
/// record in too, so at run time it is what a replay of the file would
/// give: compaction writes it out.
#[derive(Default)]
pub(super) struct Folded {
    /// Per id, in schedule order.
    pub(super) pending: BTreeMap<u64, Pending>,
    pub(super) max_id: u64,
    /// Bytes the pending jobs take as schedule records.
    pub(super) live_len: u64,
}

/// A pending job as the journal holds it.
pub(super) struct Pending {
    pub(super) due: SystemTime,
    /// The user's key, for a keyed job or a job scheduler.
    pub(super) key: Option<String>,
    /// A job scheduler's timetable (`Schedule::encode`).
    pub(super) timetable: Option<String>,
    /// The encoded value.
    pub(super) payload: Vec<u8>,
}

impl Pending {
    pub(super) fn named(&self) -> Named<'_> {
        match (&self.key, &self.timetable) {
            (Some(key), Some(timetable)) => Named::Recurring(key, timetable),
            (Some(key), None) => Named::Key(key),
            (None, _) => Named::None,
        }
    }

    fn len(&self) -> u64 {
        format::schedule_len(self.named(), self.payload.len())
    }
}

impl Folded {
    pub(super) fn apply(&mut self, record: Record) {
        let (id, job) = match record {
            Record::Schedule { id, due, payload } => (
                id,
                Pending {
                    due,
                    key: None,
                    timetable: None,
                    payload,
                },
            ),
            Record::Keyed {
                id,
                due,
                key,
                payload,
            } => (
                id,
                Pending {
                    due,
                    key: Some(key),
                    timetable: None,
                    payload,
                },
            ),
            Record::Recurring {
                id,
                due,
                key,
                timetable,
                payload,
            } => (
                id,
                Pending {
                    due,
                    key: Some(key),
                    timetable: Some(timetable),
                    payload,
                },
            ),
            Record::Reset { id, due } => {
                if let Some(job) = self.pending.get_mut(&id) {
                    job.due = due;
                }
                return;
            }
            Record::Cancel { id } | Record::Done { id } => {
                self.max_id = self.max_id.max(id);
                if let Some(job) = self.pending.remove(&id) {
                    self.live_len -= job.len();
                }
                return;
            }
            Record::Watermark { id } => {
                self.max_id = self.max_id.max(id);
                return;
            }
        };
        self.max_id = self.max_id.max(id);
        self.live_len += job.len();
        if let Some(old) = self.pending.insert(id, job) {
            self.live_len -= old.len();
        }
    }
}
