//! "Did you mean" suggestions for tool names and argument keys (the
//! near-miss notes use them for keys, dsh-tools' registry for tool names).

/// The candidate closest to `given`, or `None` when none is close.
///
/// A case/underscore/hyphen variant (`timeout_ms` for `timeoutMs`) wins
/// first; else the smallest edit distance ≤ 2 that is also smaller than the
/// candidate's length (so `a` never suggests `b`). Ties keep the earliest
/// candidate. Total; allocates only for the folded comparison forms.
pub fn closest<'a>(given: &str, candidates: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    let folded = fold(given);
    let mut best: Option<(usize, &'a str)> = None;
    for c in candidates {
        let d = if fold(c) == folded {
            0
        } else {
            levenshtein(given, c)
        };
        if d <= 2 && d < c.chars().count() && best.is_none_or(|(bd, _)| d < bd) {
            best = Some((d, c));
        }
    }
    best.map(|(_, c)| c)
}

/// Lowercase without `_` and `-`: `timeout_ms`, `timeoutMs`, `TIMEOUT-MS`
/// all fold to `timeoutms`.
fn fold(s: &str) -> String {
    s.chars()
        .filter(|c| *c != '_' && *c != '-')
        .flat_map(char::to_lowercase)
        .collect()
}

/// Levenshtein distance over chars.
fn levenshtein(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, ca) in a.chars().enumerate() {
        cur[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            cur[j + 1] = (prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggestions() {
        let names = ["timeoutMs", "workdir", "command"];
        assert_eq!(closest("timeout_ms", names.into_iter()), Some("timeoutMs"));
        assert_eq!(closest("TIMEOUT_MS", names.into_iter()), Some("timeoutMs"));
        assert_eq!(closest("workdri", names.into_iter()), Some("workdir"));
        assert_eq!(closest("cmd", names.into_iter()), None);
        assert_eq!(closest("b", ["a"].into_iter()), None);
        assert_eq!(levenshtein("kitten", "sitting"), 3);
    }
}
