//! Reading a journal file: what is at a path, judged from its header
//! ([`inspect`]), and the jobs it holds ([`replay`]).

use alloc::vec::Vec;
use std::fs::{self, File};
use std::io::{self, Read};
use std::path::Path;

use super::decode::{self, Damage};
use super::error::{io_at, JournalError};
use super::folded::Folded;
use super::format;
use super::handle::Found;

/// What a journal file holds.
pub(super) struct Replayed {
    pub(super) folded: Folded,
    pub(super) damage: Vec<Damage>,
    /// For a file in the format this crate writes: how much of it records
    /// may follow (all but a torn tail), should `open` have to append to
    /// it as it is rather than compact it.
    pub(super) appendable: Option<u64>,
}

/// What is at `path`, judged from its header only: checked before the
/// lock is taken, so that a foreign file or a directory is refused without
/// a lock file appearing beside it.
pub(super) fn inspect(path: &Path) -> Result<Found, JournalError> {
    if path.as_os_str().is_empty() {
        return Err(JournalError::Io(io::Error::new(
            io::ErrorKind::InvalidInput,
            "a journal path must not be empty",
        )));
    }
    let meta = match fs::metadata(path) {
        Ok(meta) => meta,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(Found::Nothing),
        Err(err) => return Err(io_at(path, err)),
    };
    if !meta.is_file() {
        // A device or a pipe would be replaced by compaction's rename.
        let what = if meta.is_dir() {
            "is a directory"
        } else {
            "is not a regular file"
        };
        let err = io::Error::new(io::ErrorKind::InvalidInput, what);
        return Err(io_at(path, err));
    }
    if meta.len() == 0 {
        return Ok(Found::EmptyFile);
    }
    let mut header = [0u8; 8];
    let mut file = File::open(path).map_err(|err| io_at(path, err))?;
    let mut got = 0;
    while got < header.len() {
        match file.read(&mut header[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
            Err(err) => return Err(io_at(path, err)),
        }
    }
    if got < header.len() || &header[..4] != format::MAGIC {
        return Err(JournalError::NotAJournal(path.to_path_buf()));
    }
    let found = u32::from_le_bytes([header[4], header[5], header[6], header[7]]);
    if !format::READS.contains(&found) {
        return Err(JournalError::Version {
            path: path.to_path_buf(),
            found,
        });
    }
    Ok(Found::Journal)
}

/// Reads and folds the journal at `path` (none: empty).
pub(super) fn replay(path: &Path) -> Result<Replayed, JournalError> {
    let mut replayed = Replayed {
        folded: Folded::default(),
        damage: Vec::new(),
        appendable: None,
    };
    let mut bytes = Vec::new();
    match File::open(path) {
        Ok(mut file) => {
            file.read_to_end(&mut bytes)
                .map_err(|err| io_at(path, err))?;
        }
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(replayed),
        Err(err) => return Err(io_at(path, err)),
    }
    if bytes.is_empty() {
        return Ok(replayed);
    }
    if bytes.len() < 8 || &bytes[..4] != format::MAGIC {
        return Err(JournalError::NotAJournal(path.to_path_buf()));
    }
    let version = u32::from_le_bytes([bytes[4], bytes[5], bytes[6], bytes[7]]);
    if !format::READS.contains(&version) {
        return Err(JournalError::Version {
            path: path.to_path_buf(),
            found: version,
        });
    }
    let (records, damage) = decode::decode_all(&bytes[8..], 8, version);
    if version == format::VERSION {
        let torn = damage.iter().find(|d| d.at_end).map(|d| d.offset);
        replayed.appendable = Some(torn.unwrap_or(bytes.len() as u64));
    }
    replayed.damage = damage;
    for record in records {
        replayed.folded.apply(record);
    }
    Ok(replayed)
}
