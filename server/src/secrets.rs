//! The service's secrets: bearer tokens, API keys, passwords and webhook secrets, and how each
//! is kept. Tokens and API keys carry 256 random bits and are stored as SHA-256 hashes (a fast
//! hash is enough for random secrets: there is nothing to guess); passwords, which people
//! choose, are stored as argon2id hashes.

use argon2::{Argon2, PasswordHash, PasswordHasher, PasswordVerifier};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rand::RngCore;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

fn random_base64(bytes: usize) -> String {
    let mut buf = vec![0u8; bytes];
    rand::rng().fill_bytes(&mut buf);
    URL_SAFE_NO_PAD.encode(buf)
}

/// A new bearer token: 256 random bits.
pub fn new_token() -> String {
    random_base64(32)
}

/// A new API key: 256 random bits, with a prefix that makes it recognisable in a config file.
pub fn new_api_key() -> String {
    format!("wk_{}", random_base64(32))
}

/// A new password for a user created without one: 144 random bits.
pub fn new_password() -> String {
    random_base64(18)
}

/// `bytes` random bytes, hex: webhook secrets (32 bytes) and the paging secret.
pub fn random_hex(bytes: usize) -> String {
    let mut buf = vec![0u8; bytes];
    rand::rng().fill_bytes(&mut buf);
    hex(&buf)
}

/// A new webhook secret: 256 random bits, hex.
pub fn new_webhook_secret() -> String {
    random_hex(32)
}

/// The SHA-256 of a token or API key, hex: what is stored and looked up.
pub fn sha256_hex(secret: &str) -> String {
    hex(&Sha256::digest(secret.as_bytes()))
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes
        .iter()
        .fold(String::with_capacity(bytes.len() * 2), |mut out, b| {
            let _ = write!(out, "{b:02x}");
            out
        })
}

/// Whether `secret` hashes to `stored_hash`, in time independent of where they differ.
pub fn matches_hash(secret: &str, stored_hash: &str) -> bool {
    sha256_hex(secret)
        .as_bytes()
        .ct_eq(stored_hash.as_bytes())
        .into()
}

/// The argon2id hash of a password, as a PHC string.
pub fn hash_password(password: &str) -> Result<String, String> {
    Argon2::default()
        .hash_password(password.as_bytes())
        .map(|hash| hash.to_string())
        .map_err(|err| format!("cannot hash the password: {err}"))
}

/// Whether `password` matches the stored PHC string. CPU-heavy: call it off the async threads.
pub fn verify_password(password: &str, stored: &str) -> bool {
    PasswordHash::new(stored)
        .map(|hash| {
            Argon2::default()
                .verify_password(password.as_bytes(), &hash)
                .is_ok()
        })
        .unwrap_or(false)
}

/// A password hash to verify against when the account does not exist, so a failed login takes
/// as long for an unknown address as for a wrong password.
pub fn decoy_password_hash() -> &'static str {
    static DECOY: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    DECOY.get_or_init(|| hash_password(&new_password()).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_verify_only_themselves() {
        let hash = hash_password("correct horse").unwrap();
        assert!(hash.starts_with("$argon2id$"));
        assert!(verify_password("correct horse", &hash));
        assert!(!verify_password("correct horsf", &hash));
        assert!(!verify_password("correct horse", "not a hash"));
    }

    #[test]
    fn tokens_are_long_random_and_hashed() {
        let (a, b) = (new_token(), new_token());
        assert_ne!(a, b);
        assert_eq!(a.len(), 43); // 32 bytes in unpadded base64
        assert!(matches_hash(&a, &sha256_hex(&a)));
        assert!(!matches_hash(&b, &sha256_hex(&a)));
    }
}
