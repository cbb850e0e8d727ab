//! How a history value is stored, the same on both backends: its UTF-8 text as is
//! ([`PLAIN`]), a zstd frame of it ([`ZSTD`]), or a zstd frame made with another stored value
//! (its base) as the dictionary ([`DELTA`]). A value is first stored whole and becomes a delta
//! only once a newer value replaced it in its series (see the backends' `retire_in`), so what
//! the listings and the scheduler read, each series' latest value, is always whole and read in
//! one step. Older values are deltas against their series' keyframe, and a keyframe is whole
//! (a root) or a delta against a root, so any value reads in at most three frames
//! ([`unpack_layers`]).

use super::StoreError;
use std::borrow::Cow;

/// The value's UTF-8 bytes.
pub const PLAIN: i16 = 0;
/// A zstd frame of the value's UTF-8 bytes.
pub const ZSTD: i16 = 1;
/// A zstd frame of the value's UTF-8 bytes made with its base's text as a raw dictionary.
pub const DELTA: i16 = 2;

/// Values shorter than this are stored plain: a zstd frame would save next to nothing.
const COMPRESS_FROM: usize = 512;
/// zstd's level for whole values: its default, fast to write, and most of what higher levels
/// save on HTML (level 19 saved 4% of a 100 KB page, at 35 times the time).
const ZSTD_LEVEL: i32 = 3;
/// zstd's level for deltas: against a 100 KB base, level 9 made deltas a fifth smaller than
/// level 3, and no slower (its longer match search pays off in fewer sequences).
const DELTA_LEVEL: i32 = 9;
/// Values whose stored body is shorter than this stay whole when replaced: a delta would save
/// a few hundred bytes at most, for a few more queries and a zstd pass in the check's
/// transaction.
pub const DELTA_FROM: usize = 1024;
/// Most deltas stored against one keyframe (N: a keyframe at least every N + 1 versions of a
/// series). Reading stays at most three frames whatever N is; N bounds how long a keyframe
/// outlives its own entries (it stays while a delta needs it) and the deltas counted before
/// each new one. Usually the size rule ([`pays_in_run`]) ends a run well before: with one-word
/// changes of a 100 KB page runs were a few dozen versions long.
pub const MAX_DELTAS: i64 = 128;

/// The joins that read a stored value `c` (table `contents`) with its base `cb` and its base's
/// base `cr`: every layer a value may have, the same SQL on both backends.
pub const LAYERS: &str = "LEFT JOIN contents cb ON cb.hash = c.base_hash \
     LEFT JOIN contents cr ON cr.hash = cb.base_hash";
/// Most deltas stored against one root (its own run's and the keyframes after it): a whole
/// value at least every this many keyframes, for the same reasons.
pub const MAX_ROOT_DELTAS: i64 = 512;

/// Whether a delta of `delta` bytes against a keyframe is worth keeping for a value whose
/// whole body is `size` bytes, the keyframe's run so far being `deltas` deltas of `delta_bytes`
/// bytes against a keyframe body of `keyframe` bytes: smaller than the whole body, and than
/// the run's average cost. Deltas grow as a page drifts from its keyframe; once the next one
/// costs more than the run's average, a new keyframe costs less than going on.
pub fn pays_in_run(
    delta: usize,
    size: usize,
    keyframe: usize,
    deltas: i64,
    delta_bytes: i64,
) -> bool {
    let average = (keyframe as i64 + delta_bytes) / (deltas + 1);
    deltas < MAX_DELTAS && delta < size && (delta as i64) <= average
}

/// Whether a new keyframe is worth storing as a delta of `delta` bytes against its run's root
/// (which already has `deltas` deltas) rather than whole (`size` bytes): when it is at most an
/// eighth of it. Keyframes against a root keep a new keyframe cheap, so runs stay short and
/// deltas small; a root lasts until the page drifted so far from it that a keyframe would cost
/// an eighth of a whole value (with one-word changes of a 100 KB page, about a thousand
/// versions).
pub fn pays_as_keyframe(delta: usize, size: usize, deltas: i64) -> bool {
    deltas < MAX_ROOT_DELTAS && delta.saturating_mul(8) <= size
}

/// The largest value a frame may claim to unpack to. Far above any page a check keeps; a
/// frame claiming more is damaged, and is refused instead of allocated.
const MAX_UNPACKED: u64 = 1 << 30;

/// A value as stored whole: its codec and body. Compressed only when that saves at least an
/// eighth.
pub fn encode(raw: &str) -> (i16, Cow<'_, [u8]>) {
    let bytes = raw.as_bytes();
    if bytes.len() >= COMPRESS_FROM
        && let Ok(packed) = zstd::bulk::compress(bytes, ZSTD_LEVEL)
        && packed.len() < bytes.len() - bytes.len() / 8
    {
        return (ZSTD, packed.into());
    }
    (PLAIN, bytes.into())
}

/// `raw` as a delta against `base` (a zstd frame with `base` as its dictionary); `None` when
/// zstd fails, which leaves the value whole.
pub fn delta(base: &str, raw: &str) -> Option<Vec<u8>> {
    let mut packer = zstd::bulk::Compressor::with_dictionary(DELTA_LEVEL, base.as_bytes()).ok()?;
    packer.compress(raw.as_bytes()).ok()
}

/// The text of a stored value. `base` is the text of the value's base, needed (and only
/// read) when `codec` is [`DELTA`].
pub fn unpack(codec: i16, body: Vec<u8>, base: Option<&str>) -> Result<String, StoreError> {
    let bytes = match codec {
        PLAIN => body,
        ZSTD => inflate(&body, None)?,
        DELTA => {
            let base = base.ok_or_else(|| {
                StoreError::Backend("a stored delta was read without its base".into())
            })?;
            inflate(&body, Some(base.as_bytes()))?
        }
        codec => {
            return Err(StoreError::Backend(format!(
                "unknown content codec {codec}"
            )));
        }
    };
    String::from_utf8(bytes).map_err(|_| StoreError::Backend("stored value is not UTF-8".into()))
}

/// The text of a value stored in layers: the value first, then its base, then its base's base
/// (a delta's base is read first, then the delta against it).
pub fn unpack_layers(layers: Vec<(i16, Vec<u8>)>) -> Result<String, StoreError> {
    let mut text: Option<String> = None;
    for (codec, body) in layers.into_iter().rev() {
        text = Some(unpack(codec, body, text.as_deref())?);
    }
    text.ok_or_else(|| StoreError::Backend("a stored value without a body".into()))
}

/// The codec in a backend's integer column, refused when it is none of ours.
pub fn codec_of(column: i64) -> Result<i16, StoreError> {
    i16::try_from(column)
        .map_err(|_| StoreError::Backend(format!("unknown content codec {column}")))
}

/// Unpacks one zstd frame, made with `dictionary` when it has one. Our frames say their size,
/// so the output is allocated once; a frame that does not is unpacked as a stream.
fn inflate(frame: &[u8], dictionary: Option<&[u8]>) -> Result<Vec<u8>, StoreError> {
    let damaged = |err: std::io::Error| {
        StoreError::Backend(format!("stored value cannot be unpacked: {err}"))
    };
    let size = zstd::zstd_safe::get_frame_content_size(frame)
        .ok()
        .flatten();
    match (size, dictionary) {
        (Some(size), _) if size > MAX_UNPACKED => Err(StoreError::Backend(format!(
            "stored value claims {size} bytes unpacked"
        ))),
        (Some(size), dictionary) => {
            let mut unpacker = match dictionary {
                Some(dictionary) => zstd::bulk::Decompressor::with_dictionary(dictionary),
                None => zstd::bulk::Decompressor::new(),
            }
            .map_err(damaged)?;
            // `size` is at most MAX_UNPACKED, which fits a usize on every target we build.
            let capacity = usize::try_from(size).unwrap_or(usize::MAX);
            unpacker.decompress(frame, capacity).map_err(damaged)
        }
        (None, None) => zstd::stream::decode_all(frame).map_err(damaged),
        (None, Some(dictionary)) => {
            let mut out = Vec::new();
            let mut reader =
                zstd::stream::Decoder::with_dictionary(frame, dictionary).map_err(damaged)?;
            std::io::Read::read_to_end(&mut reader, &mut out).map_err(damaged)?;
            Ok(out)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(words: usize, seed: u64) -> String {
        let mut x = seed;
        (0..words)
            .map(|_| {
                x = x
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                format!("w{}", (x >> 40) % 5_000)
            })
            .collect::<Vec<_>>()
            .join(" ")
    }

    #[test]
    fn every_codec_reads_back_what_was_stored() {
        for raw in ["", "short", &page(20_000, 7)] {
            let (codec, body) = encode(raw);
            assert_eq!(unpack(codec, body.into_owned(), None).unwrap(), raw);
        }
        let base = page(20_000, 7);
        let changed = base.replacen("w1", "changed", 1);
        let packed = delta(&base, &changed).unwrap();
        assert!(packed.len() < 100, "{} bytes", packed.len());
        assert_eq!(unpack(DELTA, packed, Some(&base)).unwrap(), changed);
    }

    #[test]
    fn damaged_or_unknown_bodies_are_errors_not_panics() {
        let base = page(2_000, 3);
        let packed = delta(&base, &base.replacen("w1", "x", 1)).unwrap();
        assert!(
            unpack(DELTA, packed.clone(), None).is_err(),
            "a delta needs its base"
        );
        assert!(unpack(DELTA, packed.clone(), Some("another base")).is_err());
        assert!(unpack(ZSTD, b"not a frame".to_vec(), None).is_err());
        assert!(unpack(ZSTD, packed[..packed.len() / 2].to_vec(), None).is_err());
        assert!(unpack(PLAIN, vec![0xff, 0xfe], None).is_err());
        assert!(unpack(7, b"x".to_vec(), None).is_err());
        assert!(codec_of(1 << 40).is_err());
    }

    #[test]
    fn a_run_goes_on_while_its_next_delta_costs_less_than_its_average() {
        assert!(pays_in_run(100, 40_000, 40_000, 0, 0));
        assert!(!pays_in_run(40_000, 40_000, 40_000, 0, 0), "not smaller");
        // 100 deltas of 200 bytes on a 40 KB keyframe: 594 bytes a version so far.
        assert!(pays_in_run(594, 40_000, 40_000, 100, 20_000));
        assert!(!pays_in_run(595, 40_000, 40_000, 100, 20_000));
        assert!(!pays_in_run(1, 40_000, 40_000, MAX_DELTAS, 0));
        assert!(pays_as_keyframe(5_000, 40_000, 0));
        assert!(!pays_as_keyframe(5_001, 40_000, 0));
        assert!(!pays_as_keyframe(1, 40_000, MAX_ROOT_DELTAS));
    }
}
