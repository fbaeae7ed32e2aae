//! An MCP `CallToolResult` as ferrule's tool result.
//!
//! Text stays text, and an image becomes an image part (placed for each
//! provider as a host tool's image is, `src/provider/images.rs`). What the model
//! cannot take is never dropped silently: audio, and content of a type this
//! client does not know, become a text note saying what was left out. A
//! `resource_link` is text with its URI and name; an embedded resource is its
//! text, or an image or file part for a blob. `structuredContent` goes into `details` as
//! it is, checked against the tool's `outputSchema` when it has one (a
//! mismatch, or none where one is declared, is an error result); when the
//! content is empty the model sees the structured content's JSON. `isError`
//! makes an error result.

use serde_json::Value;

use crate::message::Part;
use crate::tool::{json_kind, InputSchema, ToolResult};

/// ferrule's result for the MCP `result` of a call to `tool`, whose structured
/// content must satisfy `output_schema` when the tool declares one.
pub fn tool_result(tool: &str, result: &Value, output_schema: Option<&InputSchema>) -> ToolResult {
    let Some(content) = result.get("content").and_then(Value::as_array) else {
        let kind = result.get("content").map_or("none", json_kind);
        return ToolResult::error(format!("the MCP tool {tool} answered without a list of content ({kind})"));
    };
    let mut parts: Vec<Part> = content.iter().map(part_of).collect();
    let is_error = result.get("isError").and_then(Value::as_bool).unwrap_or(false);
    let structured = result.get("structuredContent").filter(|value| !value.is_null());
    if parts.is_empty() {
        if let Some(structured) = structured {
            parts.push(Part::text(structured.to_string()));
        }
    }
    let mut converted = ToolResult { content: parts, is_error, details: structured.cloned(), ..ToolResult::default() };
    if let (Some(schema), false) = (output_schema, is_error) {
        let mismatch = match structured {
            None => Some("it gave no structured content".to_owned()),
            Some(structured) => schema.validate(structured).err(),
        };
        if let Some(mismatch) = mismatch {
            converted.is_error = true;
            converted.content = vec![Part::text(format!(
                "the MCP tool {tool} answered with structured content that does not match its output schema: {mismatch}"
            ))];
        }
    }
    converted
}

/// The part for one item of MCP content.
fn part_of(item: &Value) -> Part {
    let text = |key: &str| item.get(key).and_then(Value::as_str);
    let kind = text("type").unwrap_or("");
    match kind {
        "text" => Part::text(text("text").unwrap_or_default()),
        "image" => match (text("data"), text("mimeType")) {
            (Some(data), Some(media_type)) => {
                Part::Image { media_type: Some(media_type.to_owned()), data: Some(data.to_owned()), url: None }
            }
            _ => Part::text("[an image without its data or MIME type was left out]"),
        },
        "audio" => Part::text(format!(
            "[audio ({}, {} bytes of base64) was left out: the model cannot take audio]",
            text("mimeType").unwrap_or("of no stated type"),
            text("data").map_or(0, str::len)
        )),
        "resource_link" => Part::text(link(item)),
        "resource" => {
            let resource = &item["resource"];
            let field = |key: &str| resource.get(key).and_then(Value::as_str);
            match (field("text"), field("blob")) {
                (Some(text), _) => Part::text(text),
                (None, Some(blob)) => match field("mimeType") {
                    Some(image) if image.starts_with("image/") => {
                        Part::Image { media_type: Some(image.to_owned()), data: Some(blob.to_owned()), url: None }
                    }
                    media_type => Part::File {
                        media_type: media_type.unwrap_or("application/octet-stream").to_owned(),
                        data: blob.to_owned(),
                        name: field("uri").and_then(|uri| uri.rsplit('/').next()).map(str::to_owned),
                    },
                },
                (None, None) => Part::text(format!(
                    "[an embedded resource without text or data was left out: {}]",
                    field("uri").unwrap_or("no URI")
                )),
            }
        }
        "" => Part::text("[content without a type was left out]"),
        other => Part::text(format!("[content of type {other} was left out: ferrule does not know it]")),
    }
}

/// A resource link as text: its name and URI, and what else it says of itself.
fn link(item: &Value) -> String {
    let field = |key: &str| item.get(key).and_then(Value::as_str);
    let mut text = format!("[resource {}: {}", field("name").unwrap_or("without a name"), field("uri").unwrap_or(""));
    for key in ["mimeType", "description"] {
        if let Some(value) = field(key) {
            text.push_str(&format!("; {value}"));
        }
    }
    text.push(']');
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_kind_of_content_reaches_the_model_or_says_it_was_left_out() {
        let result = json!({"content": [
            {"type": "text", "text": "hello"},
            {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
            {"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"},
            {"type": "resource_link", "uri": "file:///srv/a.txt", "name": "a.txt", "mimeType": "text/plain"},
            {"type": "resource", "resource": {"uri": "file:///srv/b.txt", "text": "inside b"}},
            {"type": "resource", "resource": {"uri": "file:///srv/c.pdf", "blob": "JVBERi0=", "mimeType": "application/pdf"}},
            {"type": "hologram", "data": "?"},
            {"type": "resource", "resource": {"uri": "file:///srv/d.png", "blob": "iVBO", "mimeType": "image/png"}},
        ]});
        let converted = tool_result("t", &result, None);
        assert!(!converted.is_error);
        assert_eq!(converted.content[0], Part::text("hello"));
        assert_eq!(
            converted.content[1],
            Part::Image { media_type: Some("image/png".into()), data: Some("iVBORw0KGgo=".into()), url: None }
        );
        assert_eq!(
            converted.content[2],
            Part::text("[audio (audio/wav, 8 bytes of base64) was left out: the model cannot take audio]")
        );
        assert_eq!(converted.content[3], Part::text("[resource a.txt: file:///srv/a.txt; text/plain]"));
        assert_eq!(converted.content[4], Part::text("inside b"));
        assert_eq!(
            converted.content[5],
            Part::File { media_type: "application/pdf".into(), data: "JVBERi0=".into(), name: Some("c.pdf".into()) }
        );
        assert_eq!(
            converted.content[6],
            Part::text("[content of type hologram was left out: ferrule does not know it]")
        );
        assert_eq!(
            converted.content[7],
            Part::Image { media_type: Some("image/png".into()), data: Some("iVBO".into()), url: None }
        );
        assert!(converted.check().is_ok());
    }

    #[test]
    fn structured_content_is_details_checked_against_the_output_schema() {
        let schema = InputSchema::compile_declared(json!({"type": "object", "required": ["sum"],
            "properties": {"sum": {"type": "integer"}}}))
        .unwrap();
        let fits = json!({"content": [], "structuredContent": {"sum": 3}});
        let converted = tool_result("add", &fits, Some(&schema));
        assert_eq!((converted.is_error, converted.details.clone()), (false, Some(json!({"sum": 3}))));
        assert_eq!(converted.content, [Part::text("{\"sum\":3}")], "the model sees the structured content");
        let wrong = json!({"content": [{"type": "text", "text": "3"}], "structuredContent": {"sum": "three"}});
        let converted = tool_result("add", &wrong, Some(&schema));
        assert!(converted.is_error);
        let text = crate::message::text_of(&converted.content);
        assert!(text.contains("does not match its output schema") && text.contains("/sum"), "{text}");
        let missing = tool_result("add", &json!({"content": [{"type": "text", "text": "3"}]}), Some(&schema));
        assert!(missing.is_error && crate::message::text_of(&missing.content).contains("no structured content"));
        let failed = json!({"content": [{"type": "text", "text": "overflow"}], "isError": true});
        let converted = tool_result("add", &failed, Some(&schema));
        assert_eq!((converted.is_error, crate::message::text_of(&converted.content)), (true, "overflow".into()));
        let shapeless = tool_result("add", &json!({"content": "3"}), None);
        assert!(shapeless.is_error && crate::message::text_of(&shapeless.content).contains("a string"));
    }
}
