//! The journal's file format: a header, then self-delimiting records, each
//! checked by a CRC, so that a torn or damaged record is found, skipped
//! and reported without losing any record before or after it, and a
//! payload can never be read as records.
//!
//! | part | bytes | content |
//! |------|-------|---------|
//! | header | 8 | `TWJL`, then the format version (`u32`, little endian) |
//! | record | 4 | the record marker `0xA5 0x7E 0x1D 0xC3` |
//! | | 4 | length `n` of the body (`u32` LE), at most [`MAX_BODY`] |
//! | | 4 | CRC-32 (IEEE) of the length's 4 bytes and the body |
//! | | `n` | the body: a kind byte, the job id (`u64` LE), then per kind below |
//!
//! | kind | body after the id |
//! |------|-------------------|
//! | 1 schedule | due (`i64` seconds and `u32` nanoseconds since the Unix epoch, LE), payload |
//! | 2 cancel | nothing |
//! | 3 reset | due |
//! | 4 done (the job ran) | nothing |
//! | 5 watermark (ids up to this one are taken; compaction writes it) | nothing |
//! | 6 keyed schedule | due, the key's length (`u16` LE) and the key (UTF-8, at most [`MAX_KEY`] bytes), payload |
//! | 7 job scheduler (its run due next) | as 6, then the timetable's length (`u16` LE) and the timetable (UTF-8, at most [`MAX_TIMETABLE`] bytes), before the payload |
//!
//! **Escaping.** Everything after a marker (length, CRC and body) is
//! written with every `0xA5` byte followed by a `0x00`, and read back
//! without it. So the marker's first two bytes, `0xA5 0x7E`, occur in the
//! file only where a record starts: no payload, however it was built, can
//! put a marker inside a record.
//!
//! Reading stops being trusting at the first record that does not check
//! out: it scans forward for the next marker whose length and CRC are
//! valid, and reports the bytes it skipped. Because a marker cannot be
//! forged, the scan can only land on a record that was written as one.
//!
//! Version 1 files (no escaping, a CRC of the body only) are still read,
//! and so are version 2 files (no job schedulers); `open` rewrites both as
//! version 3 when it compacts. A crate that reads only version 2 refuses a
//! version 3 file by its header, rather than skip its schedulers as damage.
//!
//! This file writes the format; `decode.rs` reads it back and `crc32.rs`
//! computes the CRC.

use alloc::string::String;
use alloc::vec::Vec;
use std::time::SystemTime;

use super::crc32::crc32_update;

/// The file's first four bytes.
pub(super) const MAGIC: &[u8; 4] = b"TWJL";
/// The format version this crate writes.
pub(super) const VERSION: u32 = 3;
/// The versions this crate reads.
pub(super) const READS: [u32; 3] = [1, 2, 3];
/// Starts every record.
pub(super) const MARKER: [u8; 4] = [0xA5, 0x7E, 0x1D, 0xC3];
/// After a marker, this byte is always followed by [`STUFFED`].
pub(super) const ESCAPE: u8 = 0xA5;
pub(super) const STUFFED: u8 = 0x00;
/// The largest record body: bounds what a damaged length field can make a
/// reader allocate.
pub(super) const MAX_BODY: usize = 16 << 20;
/// Marker, length and CRC.
pub(super) const FRAME: usize = 12;
/// The longest key of a keyed job, in bytes.
pub(super) const MAX_KEY: usize = 4096;
/// The longest timetable a job scheduler's record holds (a cron
/// expression and its zone), in bytes.
pub(super) const MAX_TIMETABLE: usize = 1024;
/// The largest payload a schedule record can carry: the reader's limit
/// ([`MAX_BODY`]) less the kind, the id and the due time. The writer
/// refuses anything larger, so every record written can be read back.
pub(super) const MAX_PAYLOAD: usize = MAX_BODY - 1 - 8 - TIME;

/// One journal record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Record {
    Schedule {
        id: u64,
        due: SystemTime,
        payload: Vec<u8>,
    },
    /// A schedule under the user's key (`DurableTimer::schedule_keyed`).
    Keyed {
        id: u64,
        due: SystemTime,
        key: String,
        payload: Vec<u8>,
    },
    /// A job scheduler (`DurableTimer::upsert_schedule`): `due` is the
    /// instant of its run still to complete.
    Recurring {
        id: u64,
        due: SystemTime,
        key: String,
        timetable: String,
        payload: Vec<u8>,
    },
    Cancel {
        id: u64,
    },
    Reset {
        id: u64,
        due: SystemTime,
    },
    Done {
        id: u64,
    },
    /// Every id up to `id` has been used: a compacted journal keeps ids
    /// unique although the records of finished jobs are gone.
    Watermark {
        id: u64,
    },
}

/// The header of a new journal file.
pub(super) fn header() -> [u8; 8] {
    let mut out = [0; 8];
    out[..4].copy_from_slice(MAGIC);
    out[4..].copy_from_slice(&VERSION.to_le_bytes());
    out
}

/// Appends `record`, framed, to `out`.
pub(super) fn encode(record: &Record, out: &mut Vec<u8>) {
    match record {
        Record::Schedule { id, due, payload } => {
            encode_schedule(*id, *due, Named::None, payload, out);
        }
        Record::Keyed {
            id,
            due,
            key,
            payload,
        } => encode_schedule(*id, *due, Named::Key(key), payload, out),
        Record::Recurring {
            id,
            due,
            key,
            timetable,
            payload,
        } => encode_schedule(*id, *due, Named::Recurring(key, timetable), payload, out),
        Record::Cancel { id } => frame(2, *id, out, |_| {}),
        Record::Reset { id, due } => frame(3, *id, out, |out| encode_time(*due, out)),
        Record::Done { id } => frame(4, *id, out, |_| {}),
        Record::Watermark { id } => frame(5, *id, out, |_| {}),
    }
}

/// What names a schedule record's job: nothing, a key, or a key and a
/// timetable (a job scheduler).
#[derive(Clone, Copy)]
pub(super) enum Named<'a> {
    None,
    Key(&'a str),
    Recurring(&'a str, &'a str),
}

impl Named<'_> {
    /// The bytes it takes in a record.
    pub(super) const fn len(self) -> usize {
        match self {
            Named::None => 0,
            Named::Key(key) => 2 + key.len(),
            Named::Recurring(key, timetable) => 4 + key.len() + timetable.len(),
        }
    }
}

/// Appends a schedule record (plain, keyed or a job scheduler's), framed,
/// to `out` (without building a [`Record`], so compaction need not copy
/// payloads).
pub(super) fn encode_schedule(
    id: u64,
    due: SystemTime,
    named: Named<'_>,
    payload: &[u8],
    out: &mut Vec<u8>,
) {
    let kind = match named {
        Named::None => 1,
        Named::Key(_) => 6,
        Named::Recurring(..) => 7,
    };
    frame(kind, id, out, |out| {
        encode_time(due, out);
        let mut text = |s: &str| {
            out.extend_from_slice(&(s.len() as u16).to_le_bytes());
            out.extend_from_slice(s.as_bytes());
        };
        match named {
            Named::None => {}
            Named::Key(key) => text(key),
            Named::Recurring(key, timetable) => {
                text(key);
                text(timetable);
            }
        }
        out.extend_from_slice(payload);
    });
}

/// The framed size of a schedule record (before escaping) named by
/// `named`, with a payload of `payload` bytes.
pub(super) const fn schedule_len(named: Named<'_>, payload: usize) -> u64 {
    (FRAME + 1 + 8 + TIME + named.len() + payload) as u64
}

/// The most payload a schedule record named by `named` can carry.
pub(super) const fn payload_room(named: Named<'_>) -> usize {
    MAX_PAYLOAD.saturating_sub(named.len())
}

/// A due time: `i64` seconds and `u32` nanoseconds.
const TIME: usize = 12;

fn frame(kind: u8, id: u64, out: &mut Vec<u8>, rest: impl FnOnce(&mut Vec<u8>)) {
    out.extend_from_slice(&MARKER);
    let start = out.len();
    out.extend_from_slice(&[0; 8]); // length and CRC, filled in below
    let body = out.len();
    out.push(kind);
    out.extend_from_slice(&id.to_le_bytes());
    rest(out);
    let len = ((out.len() - body) as u32).to_le_bytes();
    let crc = crc32_update(crc32_update(!0, &len), &out[body..]);
    out[start..start + 4].copy_from_slice(&len);
    out[start + 4..start + 8].copy_from_slice(&(!crc).to_le_bytes());
    escape(out, start);
}

/// Escapes `out[from..]` in place: a [`STUFFED`] byte after every
/// [`ESCAPE`]. Most records have none, and cost one scan.
fn escape(out: &mut Vec<u8>, from: usize) {
    let extra = out[from..].iter().filter(|&&b| b == ESCAPE).count();
    if extra == 0 {
        return;
    }
    let mut read = out.len();
    out.resize(read + extra, 0);
    let mut write = out.len();
    // From the end, so that no byte is overwritten before it is moved.
    while read > from {
        read -= 1;
        let byte = out[read];
        if byte == ESCAPE {
            write -= 1;
            out[write] = STUFFED;
        }
        write -= 1;
        out[write] = byte;
    }
}

fn encode_time(time: SystemTime, out: &mut Vec<u8>) {
    let (secs, nanos) = match time.duration_since(SystemTime::UNIX_EPOCH) {
        Ok(after) => (after.as_secs() as i64, after.subsec_nanos()),
        Err(before) => {
            // Before the epoch: whole seconds down, nanoseconds up.
            let before = before.duration();
            let secs = -(before.as_secs() as i64) - i64::from(before.subsec_nanos() > 0);
            let nanos = (1_000_000_000 - before.subsec_nanos()) % 1_000_000_000;
            (secs, nanos)
        }
    };
    out.extend_from_slice(&secs.to_le_bytes());
    out.extend_from_slice(&nanos.to_le_bytes());
}
