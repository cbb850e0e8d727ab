//! Byte searches for the short distances of markup. Between one tag and the next there are
//! often only a few bytes (`</li>\n<li>`, `class="x"`); memchr's vectorised search pays a call
//! and a set-up for each, which showed as a tenth of a crawled page's analysis. These look at
//! the first bytes one by one and hand longer distances to memchr.

/// Bytes looked at one by one before memchr takes over.
const NEAR: usize = 16;

/// The first `a` in `hay`.
#[inline]
pub(crate) fn find(a: u8, hay: &[u8]) -> Option<usize> {
    let head = &hay[..hay.len().min(NEAR)];
    if let Some(i) = head.iter().position(|&b| b == a) {
        return Some(i);
    }
    if hay.len() <= NEAR {
        return None;
    }
    memchr::memchr(a, &hay[NEAR..]).map(|i| i + NEAR)
}

/// The first `a` or `b` in `hay`.
#[inline]
pub(crate) fn find2(a: u8, b: u8, hay: &[u8]) -> Option<usize> {
    let head = &hay[..hay.len().min(NEAR)];
    if let Some(i) = head.iter().position(|&c| c == a || c == b) {
        return Some(i);
    }
    if hay.len() <= NEAR {
        return None;
    }
    memchr::memchr2(a, b, &hay[NEAR..]).map(|i| i + NEAR)
}

/// The first `a`, `b` or `c` in `hay`.
#[inline]
pub(crate) fn find3(a: u8, b: u8, c: u8, hay: &[u8]) -> Option<usize> {
    let head = &hay[..hay.len().min(NEAR)];
    if let Some(i) = head.iter().position(|&d| d == a || d == b || d == c) {
        return Some(i);
    }
    if hay.len() <= NEAR {
        return None;
    }
    memchr::memchr3(a, b, c, &hay[NEAR..]).map(|i| i + NEAR)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_what_memchr_finds_near_and_far() {
        for len in 0..64 {
            for at in 0..=len {
                let mut hay = vec![b'x'; len];
                if at < len {
                    hay[at] = b'>';
                }
                let expected = memchr::memchr(b'>', &hay);
                assert_eq!(find(b'>', &hay), expected, "{len} {at}");
                assert_eq!(find2(b'<', b'>', &hay), expected, "{len} {at}");
                assert_eq!(find3(b'"', b'\'', b'>', &hay), expected, "{len} {at}");
            }
        }
    }
}
