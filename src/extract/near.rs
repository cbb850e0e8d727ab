//! Byte searches for the short distances of markup. Between one tag and the next there are
//! often only a few bytes (`</li>\n<li>`, `class="x"`), or a sentence; memchr's vectorised
//! search pays a call and a set-up for each, which showed as a tenth of a crawled page's
//! analysis, and looking at the bytes one by one instead was a quarter of the scan's own time.
//! These look at sixteen bytes at a step (one SSE2 compare a byte searched for) for the first
//! [`NEAR`] bytes, and hand longer distances to memchr.

/// Bytes looked at in sixteen-byte steps before memchr takes over.
const NEAR: usize = 64;

/// The first `a` in `hay`.
#[inline]
pub(crate) fn find(a: u8, hay: &[u8]) -> Option<usize> {
    search(hay, [a, a, a], |rest| memchr::memchr(a, rest))
}

/// The first `a` or `b` in `hay`.
#[inline]
pub(crate) fn find2(a: u8, b: u8, hay: &[u8]) -> Option<usize> {
    search(hay, [a, b, b], |rest| memchr::memchr2(a, b, rest))
}

/// The first `a`, `b` or `c` in `hay`.
#[inline]
pub(crate) fn find3(a: u8, b: u8, c: u8, hay: &[u8]) -> Option<usize> {
    search(hay, [a, b, c], |rest| memchr::memchr3(a, b, c, rest))
}

/// The first byte of `hay` that is one of `needles`: sixteen bytes at a step while that many
/// are left, within the first [`NEAR`] bytes; the few last bytes one by one, the rest by `far`.
#[inline(always)]
fn search(hay: &[u8], needles: [u8; 3], far: impl Fn(&[u8]) -> Option<usize>) -> Option<usize> {
    let mut at = 0;
    while let Some(block) = hay
        .get(at..at + 16)
        .and_then(|b| <&[u8; 16]>::try_from(b).ok())
    {
        let found = matches(block, needles);
        if found != 0 {
            return Some(at + found.trailing_zeros() as usize);
        }
        at += 16;
        if at >= NEAR {
            return far(&hay[at..]).map(|i| i + at);
        }
    }
    hay[at..]
        .iter()
        .position(|b| needles.contains(b))
        .map(|i| i + at)
}

/// Bit k set when byte k of `block` is one of `needles`.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn matches(block: &[u8; 16], needles: [u8; 3]) -> u32 {
    use std::arch::x86_64::{
        _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8,
    };
    // SAFETY: SSE2 is part of every x86_64 target, and the load reads the 16 bytes of `block`.
    let mask = unsafe {
        let v = _mm_loadu_si128(block.as_ptr().cast());
        let [a, b, c] = needles.map(|n| _mm_cmpeq_epi8(v, _mm_set1_epi8(n as i8)));
        _mm_movemask_epi8(_mm_or_si128(_mm_or_si128(a, b), c))
    };
    // A byte mask of 16 lanes fills the low 16 bits.
    mask as u32 & 0xffff
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn matches(block: &[u8; 16], needles: [u8; 3]) -> u32 {
    matches_by_byte(block, needles)
}

#[cfg(any(test, not(target_arch = "x86_64")))]
fn matches_by_byte(block: &[u8; 16], needles: [u8; 3]) -> u32 {
    block
        .iter()
        .enumerate()
        .filter(|(_, b)| needles.contains(b))
        .fold(0, |mask, (k, _)| mask | 1 << k)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_what_memchr_finds_near_and_far() {
        // Every length around the steps and the hand-over to memchr, every position.
        for len in 0..NEAR + 40 {
            for at in 0..=len {
                let mut hay = vec![b'x'; len];
                if at < len {
                    hay[at] = b'>';
                }
                let expected = memchr::memchr(b'>', &hay);
                assert_eq!(find(b'>', &hay), expected, "{len} {at}");
                assert_eq!(find2(b'<', b'>', &hay), expected, "{len} {at}");
                assert_eq!(find3(b'"', b'\'', b'>', &hay), expected, "{len} {at}");
                // A later second needle changes nothing; an earlier one is found first.
                if at + 1 < len {
                    hay[at + 1] = b'<';
                    assert_eq!(find2(b'<', b'>', &hay), expected, "{len} {at}");
                    hay[at + 1] = b'x';
                }
                if at > 0 {
                    hay[at - 1] = b'\'';
                    assert_eq!(find3(b'"', b'\'', b'>', &hay), Some(at - 1), "{len} {at}");
                    assert_eq!(find(b'>', &hay), expected, "{len} {at}");
                }
            }
        }
    }

    #[test]
    fn the_vector_mask_is_the_byte_masks_for_every_byte_in_every_lane() {
        for lane in 0..16 {
            for byte in 0..=255u8 {
                let mut block = [b'x'; 16];
                block[lane] = byte;
                block[(lane + 7) % 16] = b'&';
                for needles in [[b'<', b'&', b'&'], [b'"', b'\'', b'>'], [0, 0x80, 0xff]] {
                    assert_eq!(
                        matches(&block, needles),
                        matches_by_byte(&block, needles),
                        "{lane} {byte} {needles:?}"
                    );
                }
            }
        }
    }
}
