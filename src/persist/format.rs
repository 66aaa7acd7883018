//! The journal's file format: a header, then self-delimiting records, each
//! checked by a CRC, so that a torn or damaged record is found, skipped
//! and reported without losing any record before or after it.
//!
//! | part | bytes | content |
//! |------|-------|---------|
//! | header | 8 | `TWJL`, then the format version (`u32`, little endian) |
//! | record | 4 | the record marker `0xA5 0x7E 0x1D 0xC3` |
//! | | 4 | length `n` of the body (`u32` LE), at most [`MAX_BODY`] |
//! | | 4 | CRC-32 (IEEE) of the body |
//! | | `n` | the body: a kind byte, the job id (`u64` LE), then per kind below |
//!
//! | kind | body after the id |
//! |------|-------------------|
//! | 1 schedule | due (`i64` seconds and `u32` nanoseconds since the Unix epoch, LE), payload |
//! | 2 cancel | nothing |
//! | 3 reset | due |
//! | 4 done (the job ran) | nothing |
//! | 5 watermark (ids up to this one are taken; compaction writes it) | nothing |
//!
//! Reading stops being trusting at the first record that does not check
//! out: it scans forward for the next marker whose length and CRC are
//! valid, and reports the bytes it skipped.

use alloc::vec::Vec;
use core::time::Duration;
use std::time::SystemTime;

/// The file's first four bytes.
pub(super) const MAGIC: &[u8; 4] = b"TWJL";
/// The format version this crate writes and reads.
pub(super) const VERSION: u32 = 1;
/// Starts every record.
const MARKER: [u8; 4] = [0xA5, 0x7E, 0x1D, 0xC3];
/// The largest record body: bounds what a damaged length field can make a
/// reader allocate.
pub(super) const MAX_BODY: usize = 16 << 20;
/// Marker, length and CRC.
const FRAME: usize = 12;

/// One journal record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Record {
    Schedule {
        id: u64,
        due: SystemTime,
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
        Record::Schedule { id, due, payload } => encode_schedule(*id, *due, payload, out),
        Record::Cancel { id } => frame(2, *id, out, |_| {}),
        Record::Reset { id, due } => frame(3, *id, out, |out| encode_time(*due, out)),
        Record::Done { id } => frame(4, *id, out, |_| {}),
        Record::Watermark { id } => frame(5, *id, out, |_| {}),
    }
}

/// Appends a schedule record, framed, to `out` (without building a
/// [`Record`], so compaction need not copy payloads).
pub(super) fn encode_schedule(id: u64, due: SystemTime, payload: &[u8], out: &mut Vec<u8>) {
    frame(1, id, out, |out| {
        encode_time(due, out);
        out.extend_from_slice(payload);
    });
}

/// The framed size of a schedule record with a payload of `payload` bytes.
pub(super) const fn schedule_len(payload: usize) -> u64 {
    (FRAME + 1 + 8 + TIME + payload) as u64
}

/// A due time: `i64` seconds and `u32` nanoseconds.
const TIME: usize = 12;

fn frame(kind: u8, id: u64, out: &mut Vec<u8>, rest: impl FnOnce(&mut Vec<u8>)) {
    let start = out.len();
    out.extend_from_slice(&MARKER);
    out.extend_from_slice(&[0; 8]); // length and CRC, filled in below
    let body = out.len();
    out.push(kind);
    out.extend_from_slice(&id.to_le_bytes());
    rest(out);
    let len = (out.len() - body) as u32;
    let crc = crc32(&out[body..]);
    out[start + 4..start + 8].copy_from_slice(&len.to_le_bytes());
    out[start + 8..start + 12].copy_from_slice(&crc.to_le_bytes());
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

fn decode_time(bytes: &[u8]) -> Option<SystemTime> {
    let secs = i64::from_le_bytes(bytes.get(..8)?.try_into().ok()?);
    let nanos = u32::from_le_bytes(bytes.get(8..12)?.try_into().ok()?);
    if nanos >= 1_000_000_000 {
        return None;
    }
    let base = if secs >= 0 {
        SystemTime::UNIX_EPOCH.checked_add(Duration::from_secs(secs as u64))?
    } else {
        SystemTime::UNIX_EPOCH.checked_sub(Duration::from_secs(secs.unsigned_abs()))?
    };
    base.checked_add(Duration::from_nanos(u64::from(nanos)))
}

/// Decodes a record body whose CRC has checked out.
fn decode_body(body: &[u8]) -> Option<Record> {
    let (&kind, rest) = body.split_first()?;
    let id = u64::from_le_bytes(rest.get(..8)?.try_into().ok()?);
    let rest = &rest[8..];
    Some(match kind {
        1 => Record::Schedule {
            id,
            due: decode_time(rest)?,
            payload: rest.get(12..)?.to_vec(),
        },
        2 if rest.is_empty() => Record::Cancel { id },
        3 if rest.len() == 12 => Record::Reset {
            id,
            due: decode_time(rest)?,
        },
        4 if rest.is_empty() => Record::Done { id },
        5 if rest.is_empty() => Record::Watermark { id },
        _ => return None,
    })
}

/// A stretch of the file that did not decode and was skipped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Damage {
    /// Byte offset in the file where it starts.
    pub offset: u64,
    /// Its length in bytes.
    pub len: u64,
    /// `true` if it runs to the end of the file: a torn last write.
    pub at_end: bool,
}

/// Everything readable in a journal's bytes (after the header), and the
/// damage skipped. Never fails and never panics: any bytes decode to
/// some records and some damage.
pub(super) fn decode_all(bytes: &[u8], base_offset: u64) -> (Vec<Record>, Vec<Damage>) {
    let mut records = Vec::new();
    let mut damage: Vec<Damage> = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        match frame_at(bytes, at) {
            Some((record, next)) => {
                records.push(record);
                at = next;
            }
            None => {
                // Skip to the next valid record, or the end.
                let start = at;
                at += 1;
                while at < bytes.len() && frame_at(bytes, at).is_none() {
                    at += 1;
                }
                damage.push(Damage {
                    offset: base_offset + start as u64,
                    len: (at - start) as u64,
                    at_end: at == bytes.len(),
                });
            }
        }
    }
    (records, damage)
}

/// The record framed at `at`, and where the next one starts.
fn frame_at(bytes: &[u8], at: usize) -> Option<(Record, usize)> {
    let frame = bytes.get(at..at + FRAME)?;
    if frame[..4] != MARKER {
        return None;
    }
    let len = u32::from_le_bytes(frame[4..8].try_into().ok()?) as usize;
    if len > MAX_BODY {
        return None;
    }
    let crc = u32::from_le_bytes(frame[8..12].try_into().ok()?);
    let body = bytes.get(at + FRAME..at + FRAME + len)?;
    if crc32(body) != crc {
        return None;
    }
    Some((decode_body(body)?, at + FRAME + len))
}

/// CRC-32 (IEEE 802.3, reflected, as zlib computes it).
fn crc32(bytes: &[u8]) -> u32 {
    static TABLE: [u32; 256] = table();
    let mut crc = !0u32;
    for &byte in bytes {
        crc = TABLE[((crc ^ u32::from(byte)) & 0xFF) as usize] ^ (crc >> 8);
    }
    !crc
}

const fn table() -> [u32; 256] {
    let mut table = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 {
                0xEDB8_8320 ^ (c >> 1)
            } else {
                c >> 1
            };
            k += 1;
        }
        table[i] = c;
        i += 1;
    }
    table
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use alloc::vec;

    fn sample() -> Vec<Record> {
        let t = SystemTime::UNIX_EPOCH + Duration::new(1_700_000_000, 123);
        vec![
            Record::Schedule {
                id: 1,
                due: t,
                payload: b"order 17".to_vec(),
            },
            Record::Reset {
                id: 1,
                due: t + Duration::from_secs(5),
            },
            Record::Cancel { id: 2 },
            Record::Done { id: 1 },
            Record::Watermark { id: 9 },
            Record::Schedule {
                id: 3,
                due: SystemTime::UNIX_EPOCH - Duration::new(3, 5),
                payload: Vec::new(),
            },
        ]
    }

    fn bytes(records: &[Record]) -> Vec<u8> {
        let mut out = Vec::new();
        for record in records {
            encode(record, &mut out);
        }
        out
    }

    #[test]
    fn crc_matches_the_standard_check_value() {
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
    }

    #[test]
    fn records_round_trip() {
        let records = sample();
        assert_eq!(decode_all(&bytes(&records), 0), (records, Vec::new()));
    }

    #[test]
    fn a_torn_tail_loses_only_the_last_record() {
        let records = sample();
        let all = bytes(&records);
        for cut in 1..20 {
            let (got, damage) = decode_all(&all[..all.len() - cut], 8);
            assert_eq!(got, records[..records.len() - 1], "cut {cut}");
            assert_eq!(damage.len(), 1);
            assert!(damage[0].at_end);
        }
    }

    #[test]
    fn a_flipped_byte_loses_only_its_record() {
        let records = sample();
        let all = bytes(&records);
        for at in 0..all.len() {
            let mut bad = all.clone();
            bad[at] ^= 0x40;
            let (got, damage) = decode_all(&bad, 0);
            assert!(!damage.is_empty(), "flip at {at} went unnoticed");
            assert!(
                got.len() >= records.len() - 1,
                "flip at {at} lost {:?}",
                got
            );
            assert!(
                got.iter().all(|r| records.contains(r)),
                "flip at {at} invented a record"
            );
        }
    }
}
