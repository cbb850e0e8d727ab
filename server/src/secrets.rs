//! The service's secrets: bearer tokens, API keys, passwords and webhook secrets, and how each
//! is kept. Tokens and API keys carry 256 random bits and are stored as SHA-256 hashes (a fast
//! hash is enough for random secrets: there is nothing to guess); passwords, which people
//! choose, are stored as argon2id hashes. A secret the service must show again (a feed's key,
//! part of the address a person copies) is kept both ways: its hash, which a request is looked
//! up by, and a copy sealed with the service's key ([`Sealer`]), which only the service opens.

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

/// What [`Sealer`] binds a sealed secret to besides the key: a feed's owner and address, so a
/// sealed copy moved to another row does not open.
const SEAL_KEY_LABEL: &[u8] = b"wachet sealed secrets v1";

/// Seals and opens secrets with AES-256-GCM under a key derived from the service's secret (the
/// store's own random secret, which also signs continuation tokens): a read of the feeds table
/// alone, a backup of it or a log of its rows shows no feed's key. Each sealing takes a fresh
/// random nonce; the text is the nonce and the ciphertext with its tag, base64.
pub struct Sealer {
    key: aws_lc_rs::aead::LessSafeKey,
}

impl std::fmt::Debug for Sealer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sealer").finish_non_exhaustive()
    }
}

impl Sealer {
    /// A sealer whose key is derived from `service_secret` (HMAC-SHA256 with a label of its
    /// own, so the key is never the secret used elsewhere).
    pub fn new(service_secret: &[u8]) -> Result<Self, String> {
        use hmac::{Hmac, Mac};
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(service_secret)
            .map_err(|err| format!("sealing key: {err}"))?;
        mac.update(SEAL_KEY_LABEL);
        let derived = mac.finalize().into_bytes();
        let unbound = aws_lc_rs::aead::UnboundKey::new(&aws_lc_rs::aead::AES_256_GCM, &derived)
            .map_err(|_| "sealing key: not an AES-256 key".to_string())?;
        Ok(Sealer {
            key: aws_lc_rs::aead::LessSafeKey::new(unbound),
        })
    }

    /// `secret` sealed for `context` (what it belongs to), as text to store.
    pub fn seal(&self, secret: &str, context: &str) -> Result<String, String> {
        use aws_lc_rs::aead::{Aad, NONCE_LEN, Nonce};
        let mut nonce = [0u8; NONCE_LEN];
        rand::rng().fill_bytes(&mut nonce);
        let mut sealed = secret.as_bytes().to_vec();
        self.key
            .seal_in_place_append_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(context.as_bytes()),
                &mut sealed,
            )
            .map_err(|_| "cannot seal the secret".to_string())?;
        let mut text = nonce.to_vec();
        text.extend_from_slice(&sealed);
        Ok(URL_SAFE_NO_PAD.encode(text))
    }

    /// The secret `sealed` holds, if it was sealed with this key for `context`.
    pub fn open(&self, sealed: &str, context: &str) -> Option<String> {
        use aws_lc_rs::aead::{Aad, NONCE_LEN, Nonce};
        let bytes = URL_SAFE_NO_PAD.decode(sealed).ok()?;
        if bytes.len() <= NONCE_LEN {
            return None;
        }
        let (nonce, rest) = bytes.split_at(NONCE_LEN);
        let nonce = Nonce::try_assume_unique_for_key(nonce).ok()?;
        let mut rest = rest.to_vec();
        let opened = self
            .key
            .open_in_place(nonce, Aad::from(context.as_bytes()), &mut rest)
            .ok()?;
        String::from_utf8(opened.to_vec()).ok()
    }
}

/// What a browser step's stored secret value starts with, before the sealed text.
const STEP_SEALED: &str = "sealed~";

/// What a step's secret is sealed for: its owner, so a row copied to another user opens not.
fn step_context(user: &str) -> String {
    format!("{user}\nstep secret")
}

/// A browser step's secret `value`, sealed for `user` as it is stored.
pub fn seal_step(sealer: &Sealer, user: &str, value: &str) -> Result<String, String> {
    Ok(format!(
        "{STEP_SEALED}{}",
        sealer.seal(value, &step_context(user))?
    ))
}

/// Whether a step's value is sealed already.
pub fn is_sealed_step(value: &str) -> bool {
    value.starts_with(STEP_SEALED)
}

/// The secret a stored step value holds, if it opens for `user` with this key.
pub fn open_step(sealer: &Sealer, user: &str, stored: &str) -> Option<String> {
    sealer.open(stored.strip_prefix(STEP_SEALED)?, &step_context(user))
}

/// `monitor` with the values of its secret steps opened, for the check that types them; a
/// value that does not open (the key changed) is left out, so the step fails naming itself.
pub fn open_steps(sealer: &Sealer, user: &str, monitor: &mut wachet::Monitor) {
    for (_, list) in monitor.step_lists_mut() {
        for step in list.into_iter().flatten().filter(|s| s.secret) {
            step.value = step
                .value
                .as_deref()
                .and_then(|v| open_step(sealer, user, v));
        }
    }
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

    #[test]
    fn a_sealed_secret_opens_only_with_its_key_and_context() {
        let sealer = Sealer::new(b"service secret").unwrap();
        let secret = new_token();
        let sealed = sealer.seal(&secret, "u1\n/feeds/all.atom").unwrap();
        assert!(!sealed.contains(&secret));
        // A fresh nonce each time.
        assert_ne!(sealed, sealer.seal(&secret, "u1\n/feeds/all.atom").unwrap());
        assert_eq!(sealer.open(&sealed, "u1\n/feeds/all.atom"), Some(secret));
        assert_eq!(sealer.open(&sealed, "u2\n/feeds/all.atom"), None);
        let other = Sealer::new(b"another service").unwrap();
        assert_eq!(other.open(&sealed, "u1\n/feeds/all.atom"), None);
        assert_eq!(sealer.open("not sealed", "u1\n/feeds/all.atom"), None);
        assert_eq!(sealer.open("", "u1\n/feeds/all.atom"), None);
    }
}
