//! Every occurrence of a sequence in another, overlapping ones included, in time
//! linear in both (Knuth–Morris–Pratt): edit searches bytes and apply_patch
//! numbered lines, so no file or argument can make a search slow. A [`Budget`]
//! bounds what many searches over one large file add up to.

/// The most search work one call may do: each search is linear, but a thousand
/// edits or patch sections over one large file would still take minutes.
pub(crate) struct Budget {
    left: usize,
}

impl Budget {
    pub(crate) fn new(steps: usize) -> Self {
        Budget { left: steps }
    }

    /// Takes `steps` from the budget; `false` (and nothing taken) once too few are left.
    pub(crate) fn spend(&mut self, steps: usize) -> bool {
        match self.left.checked_sub(steps) {
            Some(left) => {
                self.left = left;
                true
            }
            None => false,
        }
    }
}

/// The starts of the occurrences of `needle` in `haystack` at or after `from`,
/// the first `limit` of them. An empty needle occurs nowhere.
pub(crate) fn occurrences<T: Eq>(haystack: &[T], needle: &[T], from: usize, limit: usize) -> Vec<usize> {
    let mut found = Vec::new();
    if needle.is_empty() || limit == 0 {
        return found;
    }
    let fallback = fallbacks(needle);
    let mut matched = 0;
    for (at, item) in haystack.iter().enumerate().skip(from) {
        while matched > 0 && needle[matched] != *item {
            matched = fallback[matched - 1];
        }
        if needle[matched] == *item {
            matched += 1;
        }
        if matched == needle.len() {
            found.push(at + 1 - matched);
            if found.len() == limit {
                break;
            }
            matched = fallback[matched - 1];
        }
    }
    found
}

/// For each prefix of `needle`, the length of its longest proper prefix that is
/// also its suffix: where a search resumes after a mismatch.
fn fallbacks<T: Eq>(needle: &[T]) -> Vec<usize> {
    let mut fallback = vec![0; needle.len()];
    let mut length = 0;
    for at in 1..needle.len() {
        while length > 0 && needle[at] != needle[length] {
            length = fallback[length - 1];
        }
        if needle[at] == needle[length] {
            length += 1;
        }
        fallback[at] = length;
    }
    fallback
}

#[cfg(test)]
mod tests {
    use super::occurrences;

    /// The obvious quadratic search, to compare against.
    fn naive(haystack: &[u8], needle: &[u8], from: usize) -> Vec<usize> {
        if needle.is_empty() || needle.len() > haystack.len() {
            return Vec::new();
        }
        (from..=haystack.len() - needle.len()).filter(|&s| &haystack[s..s + needle.len()] == needle).collect()
    }

    #[test]
    fn finds_what_the_naive_search_finds() {
        let cases: [(&[u8], &[u8]); 8] = [
            (b"aaaa", b"aa"),
            (b"abababab", b"abab"),
            (b"abcabcabd", b"abcabd"),
            (b"aabaabaaa", b"aabaaa"),
            (b"xyz", b"xyzw"),
            (b"", b"a"),
            (b"abc", b""),
            (b"mississippi", b"issi"),
        ];
        for (haystack, needle) in cases {
            for from in 0..3 {
                assert_eq!(occurrences(haystack, needle, from, usize::MAX), naive(haystack, needle, from));
            }
        }
        for seed in 0..200u64 {
            let mut rng = fastrand::Rng::with_seed(seed);
            let haystack: Vec<u8> = (0..rng.usize(0..60)).map(|_| rng.u8(b'a'..b'c')).collect();
            let needle: Vec<u8> = (0..rng.usize(1..6)).map(|_| rng.u8(b'a'..b'c')).collect();
            assert_eq!(occurrences(&haystack, &needle, 0, usize::MAX), naive(&haystack, &needle, 0));
        }
    }

    #[test]
    fn stops_at_the_limit() {
        assert_eq!(occurrences(b"aaaaaa", b"a", 1, 2), vec![1, 2]);
    }
}
