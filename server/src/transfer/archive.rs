//! Zip archives as an import reads them: whole and bounded. An archive is refused before
//! anything in it is used when it cannot be read (a truncated file has no central directory),
//! has more than [`MAX_ENTRIES`] entries, says it unpacks to more than [`MAX_UNPACKED_BYTES`],
//! or names an entry outside itself (`../`, an absolute path) or a symbolic link; an entry whose
//! data unpacks to more than it said stops being read at the bound (a zip bomb lies about
//! its sizes).

use super::ReadError;
use std::collections::HashMap;
use std::io::{Cursor, Read};

/// Most entries an archive may hold (a changedetection.io backup has a few per watch).
pub const MAX_ENTRIES: usize = 200_000;
/// Most bytes all of an archive's entries may unpack to.
pub const MAX_UNPACKED_BYTES: u64 = 512 * 1024 * 1024;

/// What an archive may hold.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Most entries.
    pub entries: usize,
    /// Most bytes all entries unpack to.
    pub unpacked: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            entries: MAX_ENTRIES,
            unpacked: MAX_UNPACKED_BYTES,
        }
    }
}

/// A checked archive.
pub struct Archive<'a> {
    zip: zip::ZipArchive<Cursor<&'a [u8]>>,
    /// Entry names to their index.
    names: HashMap<String, usize>,
    /// Bytes that may still be unpacked.
    budget: u64,
    /// Bytes all entries may unpack to.
    limit: u64,
}

fn too_large(limit: u64) -> ReadError {
    ReadError::Refused(format!(
        "the archive unpacks to more than {} MiB, the most an import reads (a zip bomb?); \
         nothing was read",
        limit / 1024 / 1024
    ))
}

/// Whether `bytes` start as a zip archive does.
pub fn is_zip(bytes: &[u8]) -> bool {
    bytes.starts_with(b"PK\x03\x04") || bytes.starts_with(b"PK\x05\x06")
}

/// The file mode bits of a symbolic link.
const S_IFLNK: u32 = 0o120_000;
const S_IFMT: u32 = 0o170_000;

impl<'a> Archive<'a> {
    /// Opens and checks `bytes` ([the module's rules](self)).
    pub fn open(bytes: &'a [u8]) -> Result<Archive<'a>, ReadError> {
        Archive::open_with(bytes, Limits::default())
    }

    /// Opens and checks `bytes` within `limits`.
    pub fn open_with(bytes: &'a [u8], limits: Limits) -> Result<Archive<'a>, ReadError> {
        let mut zip = zip::ZipArchive::new(Cursor::new(bytes)).map_err(|err| {
            ReadError::Invalid(format!(
                "the zip archive cannot be read ({err}); was it cut short while downloading?"
            ))
        })?;
        if zip.len() > limits.entries {
            return Err(ReadError::Refused(format!(
                "the archive has {} entries, more than the {} an import reads",
                zip.len(),
                limits.entries
            )));
        }
        let mut names = HashMap::with_capacity(zip.len());
        let mut declared: u64 = 0;
        for i in 0..zip.len() {
            let entry = zip
                .by_index_raw(i)
                .map_err(|err| ReadError::Invalid(format!("the zip archive is damaged: {err}")))?;
            let name = entry
                .name()
                .map_err(|err| ReadError::Invalid(format!("the zip archive is damaged: {err}")))?
                .into_owned();
            if entry.enclosed_name().is_none() {
                return Err(ReadError::Refused(format!(
                    "the archive names a file outside itself ({name:?}); nothing was read"
                )));
            }
            if entry
                .unix_mode()
                .is_some_and(|mode| mode & S_IFMT == S_IFLNK)
            {
                return Err(ReadError::Refused(format!(
                    "the archive holds a symbolic link ({name:?}); nothing was read"
                )));
            }
            declared = declared.saturating_add(entry.size());
            if declared > limits.unpacked {
                return Err(too_large(limits.unpacked));
            }
            if !entry.is_dir() {
                names.insert(name, i);
            }
        }
        Ok(Archive {
            zip,
            names,
            budget: limits.unpacked,
            limit: limits.unpacked,
        })
    }

    /// The names of its files.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.names.keys().map(String::as_str)
    }

    /// The unpacked bytes of the file `name`, `None` when it has none; the bytes read count
    /// against [`MAX_UNPACKED_BYTES`] whatever the entry claimed.
    pub fn read(&mut self, name: &str) -> Result<Option<Vec<u8>>, ReadError> {
        let Some(&index) = self.names.get(name) else {
            return Ok(None);
        };
        let entry = self
            .zip
            .by_index(index)
            .map_err(|err| ReadError::Invalid(format!("{name} in the archive: {err}")))?;
        let mut bytes = Vec::new();
        entry
            .take(self.budget.saturating_add(1))
            .read_to_end(&mut bytes)
            .map_err(|err| {
                ReadError::Invalid(format!(
                    "{name} in the archive cannot be unpacked ({err}); was the file cut short?"
                ))
            })?;
        let read = u64::try_from(bytes.len()).unwrap_or(u64::MAX);
        if read > self.budget {
            return Err(too_large(self.limit));
        }
        self.budget -= read;
        Ok(Some(bytes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn zip_of(files: &[(&str, &[u8])]) -> Vec<u8> {
        let mut zip = zip::ZipWriter::new(Cursor::new(Vec::new()));
        for (name, bytes) in files {
            zip.start_file(*name, zip::write::SimpleFileOptions::default())
                .expect("entry");
            zip.write_all(bytes).expect("write");
        }
        zip.finish().expect("finish").into_inner()
    }

    #[test]
    fn entries_and_unpacked_bytes_are_bounded() {
        let files: Vec<(String, Vec<u8>)> = (0..5)
            .map(|i| (format!("{i}.txt"), vec![b'x'; 100]))
            .collect();
        let refs: Vec<(&str, &[u8])> = files
            .iter()
            .map(|(n, b)| (n.as_str(), b.as_slice()))
            .collect();
        let bytes = zip_of(&refs);
        let within = Limits {
            entries: 5,
            unpacked: 500,
        };
        let mut archive = Archive::open_with(&bytes, within).expect("within the limits");
        assert_eq!(
            archive.read("0.txt").expect("read").map(|b| b.len()),
            Some(100)
        );
        let few = Limits {
            entries: 4,
            unpacked: 500,
        };
        let err = Archive::open_with(&bytes, few)
            .err()
            .expect("too many entries");
        assert!(err.to_string().contains("5 entries"), "{err}");
        let small = Limits {
            entries: 5,
            unpacked: 499,
        };
        let err = Archive::open_with(&bytes, small).err().expect("too large");
        assert!(err.to_string().contains("zip bomb"), "{err}");
    }
}
