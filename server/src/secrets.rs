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
        Sealer::with_key(&mac.finalize().into_bytes())
    }

    /// A sealer whose key is derived from a passphrase a person chose (an export's secrets):
    /// argon2id with `params` over `salt` (random, kept beside what is sealed), so a guess
    /// costs what a password check costs. CPU-heavy: call it off the async threads.
    pub fn from_passphrase(
        passphrase: &[u8],
        salt: &[u8],
        params: &PassphraseParams,
    ) -> Result<Self, String> {
        let params =
            argon2::Params::new(params.memory_kib, params.iterations, params.lanes, Some(32))
                .map_err(|err| format!("passphrase key: {err}"))?;
        let argon = Argon2::new(argon2::Algorithm::Argon2id, argon2::Version::V0x13, params);
        let mut key = [0u8; 32];
        argon
            .hash_password_into(passphrase, salt, &mut key)
            .map_err(|err| format!("passphrase key: {err}"))?;
        Sealer::with_key(&key)
    }

    fn with_key(key: &[u8]) -> Result<Self, String> {
        let unbound = aws_lc_rs::aead::UnboundKey::new(&aws_lc_rs::aead::AES_256_GCM, key)
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

/// The cost of the argon2id key [`Sealer::from_passphrase`] derives, as a file keeps it
/// beside its salt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PassphraseParams {
    /// Memory, in KiB.
    pub memory_kib: u32,
    /// Passes over it.
    pub iterations: u32,
    /// Lanes.
    pub lanes: u32,
}

impl PassphraseParams {
    /// What this wachet derives a new key with: argon2's recommended 64 MiB and three passes
    /// (a fraction of a second, once an export).
    pub const NEW: PassphraseParams = PassphraseParams {
        memory_kib: 64 * 1024,
        iterations: 3,
        lanes: 1,
    };

    /// Whether a file's parameters are within what a reader spends on one key (256 MiB, ten
    /// passes, four lanes): a file cannot make an import take the machine.
    pub fn bounded(&self) -> bool {
        (8..=256 * 1024).contains(&self.memory_kib)
            && (1..=10).contains(&self.iterations)
            && (1..=4).contains(&self.lanes)
    }
}

/// A new salt: 128 random bits, base64.
pub fn random_salt() -> String {
    random_base64(16)
}

/// A salt as a file keeps it, read back (`None` when it is not base64 of 8 to 64 bytes).
pub fn read_salt(text: &str) -> Option<Vec<u8>> {
    URL_SAFE_NO_PAD
        .decode(text)
        .ok()
        .filter(|salt| (8..=64).contains(&salt.len()))
}

/// What a browser step's stored secret value starts with, before the sealed text (a
/// notification URL's sealed parts start so too).
const STEP_SEALED: &str = "sealed~";

/// What [`reseal_text`] did to one text.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Resealed {
    /// The text with its sealed parts sealed again.
    pub text: String,
    /// Parts sealed again.
    pub resealed: u64,
    /// Parts that opened under none of the contexts (left as they were: they opened before
    /// with no key either).
    pub unopened: u64,
}

/// `text` (a monitor's definition, endpoints as JSON, a delivery's URL) with each `sealed~`
/// part that `old` opens under one of `contexts` sealed again by `new` under the same
/// context. Sealed text is unpadded URL-safe base64, so a part ends at the first character
/// outside that alphabet (a quote, a slash, `@`).
pub fn reseal_text(old: &Sealer, new: &Sealer, text: &str, contexts: &[String]) -> Resealed {
    let mut out = Resealed::default();
    let mut rest = text;
    let mut written = String::with_capacity(text.len());
    while let Some(at) = rest.find(STEP_SEALED) {
        let (before, from) = rest.split_at(at + STEP_SEALED.len());
        written.push_str(before);
        let end = from
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'))
            .unwrap_or(from.len());
        let (sealed, after) = from.split_at(end);
        let again = contexts.iter().find_map(|context| {
            let opened = old.open(sealed, context)?;
            new.seal(&opened, context).ok()
        });
        match again {
            Some(again) => {
                written.push_str(&again);
                out.resealed += 1;
            }
            None => {
                written.push_str(sealed);
                out.unopened += 1;
            }
        }
        rest = after;
    }
    written.push_str(rest);
    out.text = written;
    out
}

/// What a step's secret is sealed for: its owner, so a row copied to another user opens not.
pub(crate) fn step_context(user: &str) -> String {
    format!("{user}\nstep secret")
}

/// What a monitor's kept browser session is sealed for: the monitor, so a row copied to another
/// opens not.
pub fn session_context(task: &str) -> String {
    format!("{task}\nbrowser session")
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

    #[test]
    fn a_text_is_sealed_again_part_by_part_under_the_context_each_opened_with() {
        let (old, new) = (Sealer::new(b"old").unwrap(), Sealer::new(b"new").unwrap());
        let step = seal_step(&old, "u1", "hunter2").unwrap();
        let url = format!(
            "tgram://sealed~{}/42",
            old.seal("123:TOKEN", "u1\nurl").unwrap()
        );
        let foreign = seal_step(&Sealer::new(b"other").unwrap(), "u1", "x").unwrap();
        let text = serde_json::json!([step, url, foreign]).to_string();
        let contexts = [step_context("u1"), "u1\nurl".to_string()];
        let done = reseal_text(&old, &new, &text, &contexts);
        assert_eq!((done.resealed, done.unopened), (2, 1));
        let list: Vec<String> = serde_json::from_str(&done.text).unwrap();
        assert_eq!(open_step(&new, "u1", &list[0]).as_deref(), Some("hunter2"));
        assert_eq!(open_step(&old, "u1", &list[0]), None);
        let part = list[1].strip_prefix("tgram://sealed~").unwrap();
        let part = part.strip_suffix("/42").unwrap();
        assert_eq!(new.open(part, "u1\nurl").as_deref(), Some("123:TOKEN"));
        assert_eq!(list[2], foreign);
    }
}
