//! What a tool returns: model-visible content plus host-only presentation fields.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{Error, ErrorCode};
use crate::json::JsonError;
use crate::message::{deserialize_content, Content, Part, Usage};

/// A tool's result (final, or provisional in an update).
///
/// `content` and `is_error` reach the model; `details`, `display`, `title` and
/// `summary` are for the host's UI only.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolResult {
    /// What the model sees.
    #[serde(default, deserialize_with = "deserialize_content")]
    #[schemars(with = "Content")]
    pub content: Vec<Part>,
    /// The call failed; the content says why, for the model.
    #[serde(default)]
    pub is_error: bool,
    /// Ask the run to stop after this batch (honoured only when every call asks).
    #[serde(default)]
    pub terminate: bool,
    /// Structured data for the UI and logs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
    /// A renderer hint: `diff`, `terminal`, `table`, `json`, `markdown`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display: Option<String>,
    /// A card heading when the tool name is not it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// A one-line account of what happened.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// Tokens the tool spent on model calls of its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// Deferred tools this result discloses to the model for the rest of the run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub added_tools: Vec<String>,
}

/// What a tool gives `ferrule_tool_call_complete` and `ferrule_tool_call_update`
/// (and a `tool_result` hook's `result` decision): a JSON string, which is a text
/// result, or a `ToolResult` object.
#[derive(Debug, Clone, PartialEq, JsonSchema)]
#[serde(untagged)]
pub enum ToolCompletion {
    /// A successful text result.
    Text(String),
    /// A result with more than text.
    Result(ToolResult),
}

impl ToolResult {
    /// A successful text result.
    pub fn text(text: impl Into<String>) -> Self {
        ToolResult { content: vec![Part::text(text)], ..ToolResult::default() }
    }

    /// An error result whose text, written for the model, says what went wrong.
    pub fn error(text: impl Into<String>) -> Self {
        ToolResult { is_error: true, ..ToolResult::text(text) }
    }

    /// Reads a result from the JSON a tool produced: a string (a text result) or
    /// an object of this shape. `INVALID_JSON` when it does not parse, `INVALID_ARG`
    /// when it has the wrong shape or names a key twice in one object; the message
    /// says what is wrong.
    pub fn from_json(json: &str) -> Result<Self, Error> {
        let value = crate::json::parse_unique(json).map_err(|e| match e {
            JsonError::Syntax(e) => Error::new(ErrorCode::InvalidJson, format!("not JSON: {e}")),
            duplicate => Error::invalid_arg(duplicate.to_string()),
        })?;
        ToolResult::from_value(value)
    }

    /// Reads a result from a JSON value: a string (a text result) or an object of
    /// this shape. `INVALID_ARG` saying what is wrong otherwise.
    pub fn from_value(value: Value) -> Result<Self, Error> {
        let completion = match value {
            Value::String(text) => ToolCompletion::Text(text),
            Value::Object(_) => {
                ToolCompletion::Result(serde_json::from_value(value).map_err(|e| Error::invalid_arg(e.to_string()))?)
            }
            other => {
                return Err(Error::invalid_arg(format!(
                    "expected a string or an object with \"content\", got {}",
                    json_kind(&other)
                )))
            }
        };
        let result = match completion {
            ToolCompletion::Text(text) => ToolResult::text(text),
            ToolCompletion::Result(result) => result,
        };
        result.check().map_err(Error::invalid_arg)?;
        Ok(result)
    }

    /// Cuts the text parts so that together they hold at most `max_bytes` bytes
    /// (on a character boundary), and says so in the text. A result cut
    /// before is not cut again to the same bound: the note an earlier cut
    /// left does not count.
    pub fn truncate_text(&mut self, max_bytes: usize) {
        let noted = matches!(self.content.last(), Some(Part::Text { text, .. }) if text.starts_with(TRUNCATION_NOTE));
        let counted = self.content.len() - usize::from(noted);
        let total: usize = self.content[..counted].iter().map(text_len).sum();
        if total <= max_bytes {
            return;
        }
        if noted {
            self.content.pop();
        }
        let mut budget = max_bytes;
        for part in &mut self.content {
            if let Part::Text { text, .. } = part {
                let mut keep = budget.min(text.len());
                while !text.is_char_boundary(keep) {
                    keep -= 1;
                }
                text.truncate(keep);
                budget -= keep;
            }
        }
        self.content.retain(|part| !matches!(part, Part::Text { text, .. } if text.is_empty()));
        self.content.push(Part::text(format!("{TRUNCATION_NOTE}{max_bytes} of {total} bytes shown]")));
    }

    /// Checks the parts (see [`Part::check`]).
    pub fn check(&self) -> Result<(), String> {
        self.content.iter().try_for_each(Part::check)
    }
}

/// How the note a cut result ends with begins.
const TRUNCATION_NOTE: &str = "\n[result truncated: ";

fn text_len(part: &Part) -> usize {
    match part {
        Part::Text { text, .. } => text.len(),
        _ => 0,
    }
}

/// A short name for a JSON value's kind, for messages.
pub(crate) fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_json_string_is_a_text_result() {
        assert_eq!(ToolResult::from_json("\"done\"").unwrap(), ToolResult::text("done"));
    }

    #[test]
    fn object_result_keeps_host_fields() {
        let result = ToolResult::from_json(
            r#"{"content": [{"type":"text","text":"3 rows"}], "display": "table", "details": {"rows": 3}, "terminate": true}"#,
        )
        .unwrap();
        assert!(result.terminate);
        assert_eq!(result.display.as_deref(), Some("table"));
    }

    #[test]
    fn unknown_result_field_is_rejected_by_name() {
        let err = ToolResult::from_json(r#"{"content": "x", "colour": "red"}"#).unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidArg);
        assert!(err.message.contains("colour"), "{}", err.message);
    }

    #[test]
    fn truncation_keeps_a_char_boundary_and_says_so() {
        let mut result = ToolResult::text("héllo world");
        result.truncate_text(2);
        assert_eq!(crate::message::text_of(&result.content), "h\n[result truncated: 2 of 12 bytes shown]");
    }

    #[test]
    fn a_result_cut_before_is_not_cut_again_to_the_same_bound() {
        let mut result = ToolResult::text("x".repeat(5000));
        result.truncate_text(100);
        let once = result.clone();
        result.truncate_text(100);
        assert_eq!(result, once);
        result.truncate_text(10);
        let text = crate::message::text_of(&result.content);
        assert_eq!(text, format!("{}\n[result truncated: 10 of 100 bytes shown]", "x".repeat(10)));
    }

    #[test]
    fn a_number_is_not_a_result() {
        assert!(ToolResult::from_json("42").unwrap_err().message.contains("a number"));
    }

    #[test]
    fn an_image_without_media_type_is_invalid() {
        let err = ToolResult::from_json(r#"{"content": [{"type": "image", "data": "AAAA"}]}"#).unwrap_err();
        assert!(err.message.contains("media_type"), "{}", err.message);
    }
}
