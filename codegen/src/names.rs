//! Identifiers in each language's style, from the JSON spellings
//! (`INVALID_UTF8`, `max_rounds`): the words split at underscores, the
//! initialisms Go and Swift spell in capitals kept so (`InvalidUTF8`).

/// Words that Go and Swift write in capitals inside an identifier.
const INITIALISMS: &[&str] = &["UTF8", "JSON", "ID", "URL"];

pub(crate) fn words(name: &str) -> impl Iterator<Item = String> + '_ {
    name.split('_').filter(|word| !word.is_empty()).map(str::to_ascii_uppercase)
}

/// A word with its first letter in capitals, or all of it for an initialism.
pub(crate) fn capitalized(word: &str) -> String {
    if INITIALISMS.contains(&word) {
        return word.to_owned();
    }
    let lower = word.to_ascii_lowercase();
    let mut chars = lower.chars();
    chars.next().map(|first| first.to_ascii_uppercase().to_string() + chars.as_str()).unwrap_or_default()
}

/// `INVALID_UTF8` → `InvalidUTF8` (Go names, Swift and Kotlin types).
pub fn pascal(name: &str) -> String {
    words(name).map(|word| capitalized(&word)).collect()
}

/// `INVALID_UTF8` → `invalidUTF8`, `max_rounds` → `maxRounds` (Swift cases).
pub fn camel(name: &str) -> String {
    let mut words = words(name);
    let first = words.next().map(|word| word.to_ascii_lowercase());
    first.into_iter().chain(words.map(|word| capitalized(&word))).collect()
}

/// `max_rounds` → `MAX_ROUNDS` (Kotlin enum entries).
pub fn screaming(name: &str) -> String {
    words(name).collect::<Vec<_>>().join("_")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_each_style() {
        assert_eq!(pascal("INVALID_UTF8"), "InvalidUTF8");
        assert_eq!(pascal("PROVIDER_MALFORMED_STREAM"), "ProviderMalformedStream");
        assert_eq!(pascal("max_rounds"), "MaxRounds");
        assert_eq!(camel("INVALID_JSON"), "invalidJSON");
        assert_eq!(camel("NULL_ARG"), "nullArg");
        assert_eq!(camel("completed"), "completed");
        assert_eq!(screaming("max_rounds"), "MAX_ROUNDS");
    }
}
