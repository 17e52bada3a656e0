//! "Did you mean": the closest valid name to a misspelt one, for the messages of unknown
//! operators, options, items, keywords, storages, weights, values and scalars.
//!
//! A candidate is close when its optimal-string-alignment distance (Damerau-Levenshtein
//! restricted to edits of unmoved substrings: insertions, deletions, substitutions and
//! transpositions of two adjacent characters) to the word is at most `max(1, len / 3)`
//! characters of the word, or when it extends the word (`depthwise_conv` is the start of
//! `depthwise_conv1d`). The threshold is rustc's own rule of thumb for its suggestions; a
//! candidate that shares no character position with the word (`x` for `h`) is never close.

/// The optimal-string-alignment distance between `a` and `b`, in characters.
fn distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    // Three rows of the dynamic-programming table: i - 2, i - 1 and i.
    let mut before: Vec<usize> = vec![0; b.len() + 1];
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut row = vec![0; b.len() + 1];
    for i in 1..=a.len() {
        row[0] = i;
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            row[j] = (prev[j] + 1).min(row[j - 1] + 1).min(prev[j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                row[j] = row[j].min(before[j - 2] + 1);
            }
        }
        std::mem::swap(&mut before, &mut prev);
        std::mem::swap(&mut prev, &mut row);
    }
    prev[b.len()]
}

/// The candidate closest to `word`, if one is close enough (see the module docs); the
/// first of equally close ones. A word that is the start of exactly one candidate (3
/// characters or more), or that starts with exactly one (PyTorch's `kernel_size` for
/// `kernel`), picks it when no candidate is close by distance.
pub fn closest<'c>(word: &str, candidates: &[&'c str]) -> Option<&'c str> {
    let limit = (word.chars().count() / 3).max(1);
    let by_distance = candidates
        .iter()
        .map(|&c| (distance(word, c), c))
        .filter(|&(d, c)| d <= limit && d < word.chars().count() && c != word)
        .min_by_key(|&(d, _)| d)
        .map(|(_, c)| c);
    by_distance
        .or_else(|| {
            let mut extending =
                candidates.iter().filter(|c| word.len() >= 3 && c.starts_with(word) && **c != word);
            match (extending.next(), extending.next()) {
                (Some(&c), None) => Some(c),
                _ => None,
            }
        })
        .or_else(|| {
            let mut prefixes =
                candidates.iter().filter(|c| c.len() >= 3 && word.starts_with(**c) && **c != word);
            match (prefixes.next(), prefixes.next()) {
                (Some(&c), None) => Some(c),
                _ => None,
            }
        })
}

/// `: did you mean `x`?` when a candidate is close to `word`, else nothing.
pub fn did_you_mean(word: &str, candidates: &[&str]) -> String {
    closest(word, candidates).map(|c| format!(": did you mean `{c}`?")).unwrap_or_default()
}

/// The hint of an unknown name: [`did_you_mean`], then the valid names,
/// `: did you mean `b`? (label: a, b, c)`; ` (label: none)` when there are none.
pub fn hint(word: &str, candidates: &[&str], label: &str) -> String {
    let list = if candidates.is_empty() { "none".to_string() } else { candidates.join(", ") };
    format!("{} ({label}: {list})", did_you_mean(word, candidates))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distance_counts_edits_and_adjacent_transpositions() {
        assert_eq!(distance("", ""), 0);
        assert_eq!(distance("", "abc"), 3);
        assert_eq!(distance("abc", ""), 3);
        assert_eq!(distance("padding", "paddng"), 1);
        assert_eq!(distance("eps", "esp"), 1);
        assert_eq!(distance("weight", "wieght"), 1);
        assert_eq!(distance("f32", "f23"), 1);
        assert_eq!(distance("kitten", "sitting"), 3);
        // Optimal string alignment: no substring is edited twice.
        assert_eq!(distance("ca", "abc"), 3);
    }

    #[test]
    fn closest_within_a_third_of_the_word() {
        let ops = ["conv1d", "depthwise_conv1d", "conv2d", "linear", "layer_norm"];
        assert_eq!(closest("depthwise_conv", &ops), Some("depthwise_conv1d"));
        assert_eq!(closest("conv1", &ops), Some("conv1d"));
        assert_eq!(closest("liner", &ops), Some("linear"));
        assert_eq!(closest("transformer", &ops), None);
        // A short word allows one edit.
        assert_eq!(closest("f23", &["f32", "i8"]), Some("f32"));
        assert_eq!(closest("x", &["abc"]), None);
        assert_eq!(closest("h", &["x"]), None);
        // The word itself is no suggestion.
        assert_eq!(closest("linear", &ops), None);
    }

    #[test]
    fn closest_prefers_the_nearest_then_the_first() {
        assert_eq!(closest("conv1x", &["conv1d", "conv2d"]), Some("conv1d"));
        assert_eq!(closest("conv", &["conv1d", "conv2d"]), None);
        assert_eq!(closest("pos", &["pos", "po"]), Some("po"));
        assert_eq!(closest("posx", &["pos", "posxyz"]), Some("pos"));
    }

    #[test]
    fn a_unique_extension_is_a_suggestion() {
        let names = ["global_avg_pool", "global_max_pool", "stft_magnitude"];
        assert_eq!(closest("stft", &names), Some("stft_magnitude"));
        // Two candidates extend `global`: none is picked.
        assert_eq!(closest("global", &names), None);
        // Too short to extend.
        assert_eq!(closest("st", &["stft_magnitude"]), None);
    }

    #[test]
    fn a_unique_prefix_is_a_suggestion() {
        assert_eq!(closest("kernel_size", &["kernel", "stride"]), Some("kernel"));
        assert_eq!(closest("kernel_size", &["kernel", "kern"]), None);
    }

    #[test]
    fn hint_lists_the_valid_names() {
        let items = ["dim", "weight", "input"];
        assert_eq!(
            hint("wieght", &items, "items"),
            ": did you mean `weight`? (items: dim, weight, input)"
        );
        assert_eq!(hint("zzz", &items, "items"), " (items: dim, weight, input)");
        assert_eq!(hint("zzz", &[], "options"), " (options: none)");
        assert_eq!(did_you_mean("zzz", &items), "");
    }
}
