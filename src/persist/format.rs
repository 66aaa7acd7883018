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
//! Version 1 files (no escaping, a CRC of the body only) are still read;
//! `open` rewrites them as version 2 when it compacts.

use alloc::string::String;
use alloc::vec::Vec;
use core::time::Duration;
use std::time::SystemTime;

/// The file's first four bytes.
pub(super) const MAGIC: &[u8; 4] = b"TWJL";
/// The format version this crate writes.
pub(super) const VERSION: u32 = 2;
/// The versions this crate reads.
pub(super) const READS: [u32; 2] = [1, 2];
/// Starts every record.
const MARKER: [u8; 4] = [0xA5, 0x7E, 0x1D, 0xC3];
/// After a marker, this byte is always followed by [`STUFFED`].
const ESCAPE: u8 = 0xA5;
const STUFFED: u8 = 0x00;
/// The largest record body: bounds what a damaged length field can make a
/// reader allocate.
pub(super) const MAX_BODY: usize = 16 << 20;
/// Marker, length and CRC.
const FRAME: usize = 12;
/// The longest key of a keyed job, in bytes.
pub(super) const MAX_KEY: usize = 4096;
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
        Record::Schedule { id, due, payload } => encode_schedule(*id, *due, None, payload, out),
        Record::Keyed {
            id,
            due,
            key,
            payload,
        } => encode_schedule(*id, *due, Some(key), payload, out),
        Record::Cancel { id } => frame(2, *id, out, |_| {}),
        Record::Reset { id, due } => frame(3, *id, out, |out| encode_time(*due, out)),
        Record::Done { id } => frame(4, *id, out, |_| {}),
        Record::Watermark { id } => frame(5, *id, out, |_| {}),
    }
}

/// Appends a schedule record, keyed or not, framed, to `out` (without
/// building a [`Record`], so compaction need not copy payloads).
pub(super) fn encode_schedule(
    id: u64,
    due: SystemTime,
    key: Option<&str>,
    payload: &[u8],
    out: &mut Vec<u8>,
) {
    let kind = if key.is_some() { 6 } else { 1 };
    frame(kind, id, out, |out| {
        encode_time(due, out);
        if let Some(key) = key {
            out.extend_from_slice(&(key.len() as u16).to_le_bytes());
            out.extend_from_slice(key.as_bytes());
        }
        out.extend_from_slice(payload);
    });
}

/// The framed size of a schedule record (before escaping) with a key of
/// `key` bytes (if keyed) and a payload of `payload` bytes.
pub(super) const fn schedule_len(key: Option<usize>, payload: usize) -> u64 {
    let key = match key {
        Some(len) => 2 + len,
        None => 0,
    };
    (FRAME + 1 + 8 + TIME + key + payload) as u64
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

/// Appends `n` bytes read from `bytes[at..]` to `out`, undoing the
/// escaping; returns where reading stopped, or `None` if the bytes end
/// first or an [`ESCAPE`] is not followed by [`STUFFED`].
fn unescape(bytes: &[u8], mut at: usize, mut n: usize, out: &mut Vec<u8>) -> Option<usize> {
    while n > 0 {
        let rest = bytes.get(at..)?;
        let chunk = rest.get(..n.min(rest.len()))?;
        if chunk.is_empty() {
            return None;
        }
        match chunk.iter().position(|&b| b == ESCAPE) {
            None => {
                out.extend_from_slice(chunk);
                at += chunk.len();
                n -= chunk.len();
            }
            Some(p) => {
                out.extend_from_slice(&chunk[..=p]);
                if *bytes.get(at + p + 1)? != STUFFED {
                    return None;
                }
                at += p + 2;
                n -= p + 1;
            }
        }
    }
    Some(at)
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
        6 => {
            let len = u16::from_le_bytes(rest.get(12..14)?.try_into().ok()?) as usize;
            let key = rest.get(14..14 + len)?;
            Record::Keyed {
                id,
                due: decode_time(rest)?,
                key: String::from_utf8(key.to_vec()).ok()?,
                payload: rest.get(14 + len..)?.to_vec(),
            }
        }
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
pub(super) fn decode_all(
    bytes: &[u8],
    base_offset: u64,
    version: u32,
) -> (Vec<Record>, Vec<Damage>) {
    let frame_at = if version == 1 { frame_at_v1 } else { frame_at };
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
    if bytes.get(at..at + 4)? != MARKER {
        return None;
    }
    let mut head = Vec::with_capacity(8);
    let at = unescape(bytes, at + 4, 8, &mut head)?;
    let len = u32::from_le_bytes(head[..4].try_into().ok()?) as usize;
    if len > MAX_BODY {
        return None;
    }
    let crc = u32::from_le_bytes(head[4..8].try_into().ok()?);
    let mut body = Vec::new();
    let next = unescape(bytes, at, len, &mut body)?;
    if !crc32_update(crc32_update(!0, &head[..4]), &body) != crc {
        return None;
    }
    Some((decode_body(&body)?, next))
}

/// A version 1 record at `at`: no escaping, the CRC of the body only.
fn frame_at_v1(bytes: &[u8], at: usize) -> Option<(Record, usize)> {
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
    if !crc32_update(!0, body) != crc {
        return None;
    }
    Some((decode_body(body)?, at + FRAME + len))
}

/// CRC-32 (IEEE 802.3, reflected, as zlib computes it), fed in parts:
/// start from `!0`, and the CRC is the complement of the last state.
fn crc32_update(mut crc: u32, bytes: &[u8]) -> u32 {
    static TABLE: [u32; 256] = table();
    for &byte in bytes {
        crc = TABLE[((crc ^ u32::from(byte)) & 0xFF) as usize] ^ (crc >> 8);
    }
    crc
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
            Record::Keyed {
                id: 4,
                due: t,
                key: String::from("order 1017"),
                payload: b"close".to_vec(),
            },
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
        assert_eq!(!crc32_update(!0, b"123456789"), 0xCBF4_3926);
    }

    #[test]
    fn records_round_trip() {
        let records = sample();
        assert_eq!(
            decode_all(&bytes(&records), 0, VERSION),
            (records, Vec::new())
        );
    }

    #[test]
    fn a_torn_tail_loses_only_the_last_record() {
        let records = sample();
        let all = bytes(&records);
        for cut in 1..20 {
            let (got, damage) = decode_all(&all[..all.len() - cut], 8, VERSION);
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
            let (got, damage) = decode_all(&bad, 0, VERSION);
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

    /// A version 1 record, as the crate wrote them before escaping.
    fn v1(record: &Record) -> Vec<u8> {
        let mut v2 = Vec::new();
        encode(record, &mut v2);
        // Undo the escaping to get at the body, then frame it the old way.
        let mut logical = Vec::new();
        unescape(
            &v2,
            4,
            v2.len() - 4 - v2[4..].iter().filter(|&&b| b == ESCAPE).count(),
            &mut logical,
        )
        .unwrap();
        let body = &logical[8..];
        let mut out = MARKER.to_vec();
        out.extend_from_slice(&(body.len() as u32).to_le_bytes());
        out.extend_from_slice(&(!crc32_update(!0, body)).to_le_bytes());
        out.extend_from_slice(body);
        out
    }

    #[test]
    fn version_1_files_still_read() {
        let records = sample();
        let old: Vec<u8> = records.iter().flat_map(v1).collect();
        assert_eq!(decode_all(&old, 8, 1), (records, Vec::new()));
    }

    #[test]
    fn escaped_bytes_round_trip() {
        let payload: Vec<u8> = (0..=255u8)
            .chain([0xA5, 0x7E, 0x1D, 0xC3, 0xA5, 0xA5, 0x00])
            .collect();
        let records = vec![
            Record::Schedule {
                id: 0xA5A5_A5A5_A5A5_A5A5,
                due: SystemTime::UNIX_EPOCH + Duration::new(0xA5A5, 0xA5),
                payload: payload.clone(),
            },
            Record::Cancel { id: 0xA5 },
        ];
        let all = bytes(&records);
        // The marker's first two bytes appear only where records start.
        let starts = all.windows(2).filter(|w| w == &[0xA5, 0x7E]).count();
        assert_eq!(starts, records.len());
        assert_eq!(decode_all(&all, 0, VERSION), (records, Vec::new()));
    }

    /// Damage in front of a payload made of records (a cancel of job 1 and
    /// a schedule of job 99, framed exactly as the journal frames them,
    /// and the same in version 1) must never make them records: before
    /// escaping, a scan after the damage landed inside the payload.
    #[test]
    fn a_payload_built_of_records_is_never_read_as_records() {
        let victim = Record::Schedule {
            id: 1,
            due: SystemTime::UNIX_EPOCH + Duration::from_secs(5),
            payload: b"order 1".to_vec(),
        };
        let forged = [
            Record::Cancel { id: 1 },
            Record::Schedule {
                id: 99,
                due: SystemTime::UNIX_EPOCH,
                payload: b"nobody scheduled me".to_vec(),
            },
        ];
        let mut payload = bytes(&forged);
        payload.extend(forged.iter().flat_map(v1));
        let carrier = Record::Schedule {
            id: 2,
            due: SystemTime::UNIX_EPOCH + Duration::from_secs(9),
            payload,
        };
        let mut all = bytes(core::slice::from_ref(&victim));
        let carrier_at = all.len();
        encode(&carrier, &mut all);
        let tail = Record::Done { id: 3 };
        encode(&tail, &mut all);
        // Every byte of the carrier's frame and the first of its body.
        for at in carrier_at..carrier_at + FRAME + 2 {
            for flip in [0x01, 0x40, 0xFF] {
                let mut bad = all.clone();
                bad[at] ^= flip;
                let (got, damage) = decode_all(&bad, 0, VERSION);
                assert!(!damage.is_empty(), "flip {flip:#x} at {at} went unnoticed");
                assert!(
                    got.iter().all(|r| *r == victim || *r == tail),
                    "flip {flip:#x} at {at} read the payload as records: {got:?}"
                );
                assert_eq!(got.first(), Some(&victim));
                assert_eq!(got.last(), Some(&tail));
            }
        }
    }
}
