//! An export's secrets encrypted to a passphrase, when the person exporting asks for them: the
//! values of secret browser steps (a password typed at sign-in) and of notification endpoints
//! (a webhook's or chat's URL, whose parts are credentials). The key is derived from the
//! passphrase with argon2id under a random salt ([`crate::secrets::Sealer::from_passphrase`]),
//! and each value sealed with AES-256-GCM under a fresh nonce, as the service seals its own
//! secrets. The document's `secrets` says how, so a reader derives the same key:
//!
//! ```json
//! "secrets": {"kdf": "argon2id", "memoryKib": 65536, "iterations": 3, "lanes": 1,
//!             "salt": "…", "cipher": "AES-256-GCM", "check": "…"}
//! ```
//!
//! `check` is a known text sealed with the key, so a wrong passphrase is told apart from a
//! damaged value before anything else is read; each encrypted value is `passphrase~` and the
//! sealed text. An import opens them all or refuses the whole file: a monitor never comes in
//! without the secrets its file carried.

use super::ReadError;
use crate::secrets::{PassphraseParams, Sealer};
use serde::{Deserialize, Serialize};

/// What an encrypted value of the document starts with.
pub const MARK: &str = "passphrase~";
/// What every value is sealed for.
const CONTEXT: &str = "wachet export secret";
/// The text `check` holds.
const CHECK: &str = "wachet export passphrase";
/// The key derivation the document names.
const KDF: &str = "argon2id";
/// The cipher the document names.
const CIPHER: &str = "AES-256-GCM";
/// The shortest passphrase an export takes.
pub const MIN_CHARS: usize = 8;
/// The longest passphrase read.
pub const MAX_BYTES: usize = 1024;

/// The document's `secrets`: how its values were encrypted.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Header {
    kdf: String,
    #[serde(flatten)]
    params: PassphraseParams,
    salt: String,
    cipher: String,
    check: String,
}

/// The key of one export's secrets, with the header that lets a reader derive it again.
pub struct ExportKey {
    sealer: Sealer,
    header: Header,
}

impl std::fmt::Debug for ExportKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExportKey").finish_non_exhaustive()
    }
}

impl ExportKey {
    /// A new key for an export, from `passphrase` (at least [`MIN_CHARS`] characters) under a
    /// new random salt. CPU-heavy (argon2id): call it off the async threads.
    pub fn new(passphrase: &str) -> Result<ExportKey, String> {
        if passphrase.chars().count() < MIN_CHARS {
            return Err(format!(
                "the passphrase is shorter than {MIN_CHARS} characters"
            ));
        }
        if passphrase.len() > MAX_BYTES {
            return Err(format!("the passphrase is longer than {MAX_BYTES} bytes"));
        }
        let salt = crate::secrets::random_salt();
        let salt_bytes = crate::secrets::read_salt(&salt).ok_or("cannot make a salt")?;
        let params = PassphraseParams::NEW;
        let sealer = Sealer::from_passphrase(passphrase.as_bytes(), &salt_bytes, &params)?;
        let check = sealer.seal(CHECK, CONTEXT)?;
        Ok(ExportKey {
            sealer,
            header: Header {
                kdf: KDF.into(),
                params,
                salt,
                cipher: CIPHER.into(),
                check,
            },
        })
    }

    /// The key `header` describes, from `passphrase`; refused when the header asks for more
    /// work than a reader spends ([`PassphraseParams::bounded`]) or the passphrase is not the
    /// one the export was made with. CPU-heavy (argon2id).
    pub fn open(header: &Header, passphrase: &str) -> Result<ExportKey, ReadError> {
        if header.kdf != KDF || header.cipher != CIPHER {
            return Err(ReadError::Invalid(format!(
                "the export's secrets are encrypted with {} and {}, which this wachet does not \
                 read ({KDF} and {CIPHER} only)",
                header.kdf, header.cipher
            )));
        }
        if !header.params.bounded() {
            return Err(ReadError::Refused(
                "the export's secrets ask for a key derivation costlier than an import spends \
                 (at most 256 MiB, 10 passes, 4 lanes); nothing was imported"
                    .into(),
            ));
        }
        let salt = crate::secrets::read_salt(&header.salt)
            .ok_or_else(|| ReadError::Invalid("the export's secrets have a damaged salt".into()))?;
        if passphrase.len() > MAX_BYTES {
            return Err(wrong_passphrase());
        }
        let sealer = Sealer::from_passphrase(passphrase.as_bytes(), &salt, &header.params)
            .map_err(ReadError::Invalid)?;
        if sealer.open(&header.check, CONTEXT).as_deref() != Some(CHECK) {
            return Err(wrong_passphrase());
        }
        Ok(ExportKey {
            sealer,
            header: header.clone(),
        })
    }

    /// The header to write in the document.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// `value` encrypted, as the document holds it.
    pub fn seal(&self, value: &str) -> Result<String, String> {
        Ok(format!("{MARK}{}", self.sealer.seal(value, CONTEXT)?))
    }

    /// The value an encrypted one of the document holds; `None` when it does not open (the
    /// file was altered).
    pub fn open_value(&self, value: &str) -> Option<String> {
        self.sealer.open(value.strip_prefix(MARK)?, CONTEXT)
    }
}

/// Whether `value` is one the export encrypted.
pub fn is_sealed(value: &str) -> bool {
    value.starts_with(MARK)
}

fn wrong_passphrase() -> ReadError {
    ReadError::Refused(
        "the passphrase does not open the export's secrets; nothing was imported".into(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_open_with_the_passphrase_only() {
        assert!(ExportKey::new("short").is_err());
        let key = ExportKey::new("correct horse battery").unwrap();
        let sealed = key.seal("hunter2").unwrap();
        assert!(sealed.starts_with(MARK) && !sealed.contains("hunter2"));
        let header: Header =
            serde_json::from_value(serde_json::to_value(key.header()).unwrap()).unwrap();
        let again = ExportKey::open(&header, "correct horse battery").unwrap();
        assert_eq!(again.open_value(&sealed).as_deref(), Some("hunter2"));
        let wrong = ExportKey::open(&header, "correct horse battery!").unwrap_err();
        assert!(wrong.to_string().contains("does not open"), "{wrong}");
        let mut costly = header.clone();
        costly.params.memory_kib = 4 * 1024 * 1024;
        assert!(ExportKey::open(&costly, "correct horse battery").is_err());
    }
}
