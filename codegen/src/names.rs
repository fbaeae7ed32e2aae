//! Identifiers in each language's style, from the JSON spellings
//! (`INVALID_UTF8`, `max_rounds`): the words split at underscores, the
//! initialisms Go and Swift spell in capitals kept so (`InvalidUTF8`).

/// Words that Go and Swift write in capitals inside an identifier.
pub(crate) const INITIALISMS: &[&str] = &["UTF8", "JSON", "ID", "URL", "MCP"];

fn words(name: &str) -> impl Iterator<Item = String> + '_ {
    name.split('_').filter(|word| !word.is_empty()).map(str::to_ascii_uppercase)
}

/// A word with its first letter in capitals, or all of it for one of
/// `initialisms`.
fn capitalized(word: &str, initialisms: &[&str]) -> String {
    if initialisms.contains(&word) {
        return word.to_owned();
    }
    let lower = word.to_ascii_lowercase();
    let mut chars = lower.chars();
    chars.next().map(|first| first.to_ascii_uppercase().to_string() + chars.as_str()).unwrap_or_default()
}

/// Upper camel case, keeping `initialisms` in capitals.
pub(crate) fn pascal_with(name: &str, initialisms: &[&str]) -> String {
    words(name).map(|word| capitalized(&word, initialisms)).collect()
}

/// Lower camel case, keeping `initialisms` in capitals after the first word.
pub(crate) fn camel_with(name: &str, initialisms: &[&str]) -> String {
    let mut words = words(name);
    let first = words.next().map(|word| word.to_ascii_lowercase());
    first.into_iter().chain(words.map(|word| capitalized(&word, initialisms))).collect()
}

/// `INVALID_UTF8` → `InvalidUTF8` (Go names, Swift and Kotlin types).
pub fn pascal(name: &str) -> String {
    pascal_with(name, INITIALISMS)
}

/// `INVALID_UTF8` → `invalidUTF8`, `max_rounds` → `maxRounds` (Swift cases).
pub fn camel(name: &str) -> String {
    camel_with(name, INITIALISMS)
}

/// The definitions every binding has a type of by the schema's name.
const SAME_NAME: &[&str] = &[
    "Message",
    "Part",
    "Interruption",
    "Decision",
    "Usage",
    "RunStartPayload",
    "TurnStartPayload",
    "ToolCallPayload",
    "ToolResultPayload",
    "FinalAnswerPayload",
    "Timeouts",
    "Thinking",
    "RunStartDecision",
    "TurnStartDecision",
    "ToolCallDecision",
    "ToolResultDecision",
    "FinalAnswerDecision",
    "ToolOptions",
    "AgentToolOptions",
    "LeftOutTool",
    "UnusedExchange",
    "LogRecord",
    "LogLevel",
];

/// The binding's type for the schema definition `name`: from `table` (pairs of
/// schema and binding names, in `codegen/src/<language>.rs`), else the
/// definition's own name when every binding has it ([`SAME_NAME`]).
pub(crate) fn reference<'a>(
    name: Option<&'a str>,
    table: &[(&str, &'a str)],
    language: &str,
) -> Result<&'a str, String> {
    let name = name.ok_or("a reference without its definition")?;
    let found = table.iter().find(|(schema, _)| *schema == name).map(|(_, binding)| *binding);
    found.or_else(|| SAME_NAME.contains(&name).then_some(name)).ok_or_else(|| {
        format!("no {language} type for the definition {name} (codegen/src/{}.rs)", language.to_lowercase())
    })
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
