//! The built-in tools through full scripted runs: selection, read, write, edit,
//! bash, list_files and same-path serialisation.

use std::path::Path;

use crate::common::*;
use base64::Engine;
use ferrule::agent::{AgentBuilder, RunStatus};
use ferrule::ErrorCode;
use serde_json::{json, Value};

/// Runs one batch of built-in calls in `dir`; returns each result's text and error flag.
fn results(dir: &Path, calls: Vec<Value>) -> Vec<(String, bool)> {
    let agent = builtin_agent(dir, calls, json!({"allowed": null}));
    let (result, events) = run(&agent, "go");
    assert_eq!(result.status, RunStatus::Completed, "{:?}", result.error);
    assert_event_invariants(&events);
    tool_results(&result).iter().map(|r| (text(r), r["is_error"].as_bool().unwrap())).collect()
}

fn selection(builtins: Value, host: &[&str]) -> Result<Vec<String>, ferrule::Error> {
    let dir = tempfile::tempdir().unwrap();
    let mut builtins = builtins;
    builtins["working_directory"] = json!(dir.path().to_str().unwrap());
    let config = json!({"model": {"provider": "scripted"}, "builtin_tools": builtins});
    let mut builder = AgentBuilder::from_json(&config.to_string())?;
    for name in host {
        builder.add_tool(echo(name))?;
    }
    Ok(builder.build()?.tool_names().into_iter().map(str::to_owned).collect())
}

#[test]
fn selection_follows_the_rules() {
    assert_eq!(selection(json!({}), &["lookup"]).unwrap(), ["read", "bash", "edit", "write", "lookup"]);
    assert_eq!(selection(json!({"allowed": []}), &["lookup"]).unwrap(), Vec::<String>::new());
    assert_eq!(selection(json!({"allowed": ["lookup", "read", "read"]}), &["lookup"]).unwrap(), ["read", "lookup"]);
    assert_eq!(
        selection(json!({"allowed": ["list_files", "apply_patch", "write"], "excluded": ["write"]}), &[]).unwrap(),
        ["apply_patch", "list_files"]
    );
    assert_eq!(selection(json!({"excluded": ["bash", "bash"]}), &[]).unwrap(), ["read", "edit", "write"]);
    assert_eq!(selection(json!({"disable": true}), &["lookup"]).unwrap(), ["lookup"]);
    let err = selection(json!({"allowed": ["reed"]}), &[]).unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidArg);
    assert!(err.message.contains("reed"), "{}", err.message);
    let err = selection(json!({"excluded": ["nope"]}), &[]).unwrap_err();
    assert!(err.message.contains("nope"), "{}", err.message);
    let err = selection(json!({"allowd": []}), &[]).unwrap_err();
    assert!(err.message.contains("allowd"), "{}", err.message);
}

#[test]
fn write_creates_parents_and_read_pages_with_a_notice() {
    let dir = tempfile::tempdir().unwrap();
    let lines: String = (1..=2500).map(|i| format!("line {i}\n")).collect();
    let out = results(
        dir.path(),
        vec![
            call("w", "write", json!({"path": "deep/er/notes.txt", "content": lines})),
            call("r1", "read", json!({"path": "deep/er/notes.txt"})),
            call("r2", "read", json!({"path": "deep/er/notes.txt", "offset": 2001})),
            call("r3", "read", json!({"path": "deep/er/notes.txt", "offset": 10, "limit": 2})),
            call("r4", "read", json!({"path": "deep/er/notes.txt", "offset": 9999})),
        ],
    );
    assert_eq!(std::fs::read_to_string(dir.path().join("deep/er/notes.txt")).unwrap(), lines);
    assert!(out[0].0.contains(&format!("Wrote {} bytes", lines.len())), "{}", out[0].0);
    assert!(out[1].0.starts_with("line 1\nline 2\n"));
    assert!(
        out[1].0.ends_with("[Showing lines 1-2000 of 2500. Use offset=2001 to continue.]"),
        "{}",
        &out[1].0[out[1].0.len() - 80..]
    );
    assert!(out[2].0.starts_with("line 2001\n") && out[2].0.ends_with("line 2500"), "{}", out[2].0);
    assert_eq!(out[3].0, "line 10\nline 11\n\n[Showing lines 10-11 of 2500. Use offset=12 to continue.]");
    assert!(out[4].1 && out[4].0.contains("past the end"), "{:?}", out[4]);
}

#[test]
fn read_bounds_bytes_and_cuts_long_lines() {
    let dir = tempfile::tempdir().unwrap();
    let wide: String = (0..100).map(|i| format!("{i:03}{}\n", "x".repeat(997))).collect();
    std::fs::write(dir.path().join("wide.txt"), &wide).unwrap();
    std::fs::write(dir.path().join("long.txt"), format!("{}\nshort\n", "y".repeat(10_000))).unwrap();
    let out = results(
        dir.path(),
        vec![call("a", "read", json!({"path": "wide.txt"})), call("b", "read", json!({"path": "long.txt"}))],
    );
    assert!(out[0].0.len() < 52 * 1024, "{}", out[0].0.len());
    assert!(out[0].0.contains("Use offset="), "a byte-limited page says how to continue");
    assert!(out[1].0.contains(" [line cut]") && out[1].0.contains("short"), "{}", &out[1].0[..50]);
    assert!(out[1].0.contains("longer than 2000 characters were cut"));
}

#[test]
fn binary_files_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("blob.bin"), [0u8, 1, 2, 3, 0, 255]).unwrap();
    let out = results(dir.path(), vec![call("a", "read", json!({"path": "blob.bin"}))]);
    assert!(out[0].1 && out[0].0.contains("binary file"), "{:?}", out[0]);
}

fn image_result(dir: &Path, name: &str) -> (String, image::DynamicImage, String) {
    let agent = builtin_agent(dir, vec![call("a", "read", json!({"path": name}))], json!({}));
    let (result, _) = run(&agent, "go");
    let message = &tool_results(&result)[0];
    let part = &message["content"][1];
    let bytes = base64::engine::general_purpose::STANDARD.decode(part["data"].as_str().unwrap()).unwrap();
    (text(message), image::load_from_memory(&bytes).unwrap(), part["media_type"].as_str().unwrap().to_owned())
}

#[test]
fn images_come_back_resized_to_fit() {
    let dir = tempfile::tempdir().unwrap();
    let small = image::RgbImage::from_fn(40, 20, |x, y| image::Rgb([x as u8, y as u8, 7]));
    small.save(dir.path().join("small.png")).unwrap();
    let (text, decoded, media) = image_result(dir.path(), "small.png");
    assert_eq!((decoded.width(), decoded.height(), media.as_str()), (40, 20, "image/png"), "{text}");

    let big = image::RgbImage::from_fn(3000, 1200, |x, y| {
        image::Rgb([(x * 7 % 255) as u8, (y * 13 % 255) as u8, ((x ^ y) % 255) as u8])
    });
    big.save(dir.path().join("big.jpg")).unwrap();
    let (text, decoded, _) = image_result(dir.path(), "big.jpg");
    assert_eq!((decoded.width(), decoded.height()), (2000, 800), "{text}");
    assert!(text.contains("was 3000x1200"), "{text}");

    // Noise does not compress: the PNG is too big for the base64 budget and is
    // re-encoded as JPEG.
    let noise = image::RgbImage::from_fn(1900, 1900, |x, y| {
        let v = (x.wrapping_mul(2654435761) ^ y.wrapping_mul(40503)).wrapping_mul(2246822519);
        image::Rgb([v as u8, (v >> 8) as u8, (v >> 16) as u8])
    });
    noise.save(dir.path().join("noise.png")).unwrap();
    let (text, decoded, media) = image_result(dir.path(), "noise.png");
    assert!(decoded.width() <= 2000 && decoded.height() <= 2000);
    assert_eq!(media, "image/jpeg", "{text}");
}

#[test]
fn edit_keeps_bom_and_crlf_and_explains_failures() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("win.txt");
    std::fs::write(&path, "\u{FEFF}first\r\nsecond \u{201C}quoted\u{201D}\r\nthird\r\n").unwrap();
    let out = results(
        dir.path(),
        vec![
            call(
                "a",
                "edit",
                json!({"path": "win.txt", "edits": [
                {"oldText": "first\nsecond \"quoted\"", "newText": "1st\n2nd"}]}),
            ),
            call("b", "edit", json!({"path": "win.txt", "edits": [{"oldText": "absent", "newText": "x"}]})),
        ],
    );
    assert!(!out[0].1, "{:?}", out[0]);
    assert!(out[0].0.contains("normalising"), "{}", out[0].0);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "\u{FEFF}1st\r\n2nd\r\nthird\r\n");
    assert!(out[1].1 && out[1].0.contains("Edit 1 of 1") && out[1].0.contains("not found"), "{:?}", out[1]);
}

#[test]
fn list_files_lists_breadth_first_and_says_when_cut() {
    let dir = tempfile::tempdir().unwrap();
    for path in ["b/c/d/deep.txt", "a.txt", "b/b1.txt"] {
        let full = dir.path().join(path);
        std::fs::create_dir_all(full.parent().unwrap()).unwrap();
        std::fs::write(full, "x").unwrap();
    }
    std::os::unix::fs::symlink("a.txt", dir.path().join("link")).unwrap();
    let agent = builtin_agent(
        dir.path(),
        vec![call("a", "list_files", json!({"depth": 2})), call("b", "list_files", json!({"limit": 2}))],
        json!({"allowed": ["list_files"]}),
    );
    let (result, _) = run(&agent, "go");
    let out: Vec<String> = tool_results(&result).iter().map(text).collect();
    assert_eq!(out[0], "a.txt\nb/\nlink@\nb/b1.txt\nb/c/\n[directories deeper than 2 levels are not shown; use a higher depth to see them]");
    assert!(out[1].starts_with("a.txt\nb/\n[listing cut at 2 entries"), "{}", out[1]);
}

#[test]
fn confinement_refuses_paths_outside() {
    let dir = tempfile::tempdir().unwrap();
    let agent = builtin_agent(
        dir.path(),
        vec![
            call("a", "read", json!({"path": "/etc/hostname"})),
            call("b", "write", json!({"path": "../escape.txt", "content": "x"})),
        ],
        json!({"confine": true}),
    );
    let (result, _) = run(&agent, "go");
    for message in tool_results(&result) {
        assert!(message["is_error"].as_bool().unwrap() && text(&message).contains("outside the working directory"));
    }
    assert!(!dir.path().parent().unwrap().join("escape.txt").exists());
}

#[test]
fn same_path_edits_from_concurrent_runs_are_serialised() {
    // Every run of one agent makes the same edit: put a line before END. Without
    // the per-path lock, concurrent read-change-write cycles would lose lines.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shared.txt");
    std::fs::write(&path, "START\nEND\n").unwrap();
    let agent = builtin_agent(
        dir.path(),
        vec![call("e", "edit", json!({"path": "shared.txt", "edits": [{"oldText": "END", "newText": "+\nEND"}]}))],
        json!({}),
    );
    let runs: Vec<_> = (0..32).map(|_| start(&agent, "go")).collect();
    for (run_handle, _) in runs {
        let result = run_handle.wait_blocking().unwrap();
        assert!(!tool_results(&result)[0]["is_error"].as_bool().unwrap());
    }
    let content = std::fs::read_to_string(&path).unwrap();
    assert_eq!(content.matches('+').count(), 32, "{content}");
}
