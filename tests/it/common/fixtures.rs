//! The shared provider recordings (never part of this repository): where they are,
//! and how a recorded file becomes an HTTP response body.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// `FERRULE_FIXTURES`, or `../shared/fixtures` beside the checkout. `None` (after
/// saying so loudly) when they are absent; `.ci/run` refuses to run without them.
pub fn fixtures_dir() -> Option<PathBuf> {
    let dir = match std::env::var_os("FERRULE_FIXTURES") {
        Some(dir) => PathBuf::from(dir),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/fixtures"),
    };
    if dir.join("providers").is_dir() {
        Some(dir)
    } else {
        eprintln!("\n*** SKIPPED: provider fixtures not found at {} (set FERRULE_FIXTURES) ***\n", dir.display());
        None
    }
}

/// The body to serve for a recorded stream. `.chunks.jsonl` files hold one JSON
/// object per line without SSE framing; each becomes `event: <type>` (when it has
/// one) and `data: <line>`, and Chat Completions streams get their `[DONE]`.
pub fn stream_body(path: &Path) -> Vec<u8> {
    let raw = std::fs::read(path).expect("fixture");
    if !path.to_string_lossy().ends_with(".chunks.jsonl") {
        return raw;
    }
    let text = String::from_utf8(raw).expect("UTF-8 fixture");
    let mut body = String::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let value: serde_json::Value = serde_json::from_str(line).expect("JSON line");
        if let Some(kind) = value.get("type").and_then(|t| t.as_str()) {
            body.push_str(&format!("event: {kind}\n"));
        }
        body.push_str(&format!("data: {line}\n\n"));
    }
    let dir = path.parent().unwrap().file_name().unwrap().to_string_lossy();
    if dir == "openai-chat" || dir == "openai-compatible" {
        body.push_str("data: [DONE]\n\n");
    }
    body.into_bytes()
}
