//! The built-in tools against a hostile workspace and hostile arguments: links
//! that lead out (dangling, or swapped while calls run), patches that fail half way
//! on the disk, calls abandoned by their timeout, FIFOs, huge images, repeated keys.

use std::collections::BTreeMap;
use std::os::unix::fs::symlink;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::common::*;
use ferrule::agent::RunStatus;
use serde_json::{json, Value};

/// Runs one batch of calls in `dir` with `builtins`; returns each result's text
/// and error flag.
fn outcomes(dir: &Path, calls: Vec<Value>, builtins: Value) -> Vec<(String, bool)> {
    let (result, _) = run(&builtin_agent(dir, calls, builtins), "go");
    assert_eq!(result.status, RunStatus::Completed, "{:?}", result.error);
    tool_results(&result).iter().map(|r| (text(r), r["is_error"].as_bool().unwrap())).collect()
}

/// Every file (with its bytes) and directory under `root`, hidden ones included.
fn tree(root: &Path) -> BTreeMap<String, Option<Vec<u8>>> {
    let mut entries = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            let kind = std::fs::symlink_metadata(&path).unwrap().file_type();
            if kind.is_dir() {
                entries.insert(name, None);
                stack.push(path);
            } else if kind.is_symlink() {
                entries.insert(name, Some(std::fs::read_link(&path).unwrap().into_os_string().into_encoded_bytes()));
            } else {
                entries.insert(name, Some(std::fs::read(&path).unwrap()));
            }
        }
    }
    entries
}

fn patch(body: &str) -> Value {
    json!({"input": format!("*** Begin Patch\n{body}\n*** End Patch")})
}

#[test]
fn a_dangling_link_cannot_create_a_file_outside() {
    let work = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    symlink(outside.path().join("planted.txt"), work.path().join("file-link")).unwrap();
    symlink(outside.path().join("not-yet"), work.path().join("dir-link")).unwrap();
    std::fs::write(work.path().join("a.txt"), "one\n").unwrap();
    let before = tree(work.path());
    let calls = vec![
        call("w1", "write", json!({"path": "file-link", "content": "x"})),
        call("w2", "write", json!({"path": "dir-link/new.txt", "content": "x"})),
        call("p1", "apply_patch", patch("*** Add File: file-link\n+x")),
        call("p2", "apply_patch", patch("*** Add File: dir-link/new.txt\n+x")),
        call("p3", "apply_patch", patch("*** Update File: a.txt\n*** Move to: dir-link/moved.txt\n@@\n-one\n+two")),
        call("e1", "edit", json!({"path": "dir-link/x", "edits": [{"oldText": "a", "newText": "b"}]})),
    ];
    let results =
        outcomes(work.path(), calls, json!({"confine": true, "allowed": ["read", "write", "edit", "apply_patch"]}));
    for (text, is_error) in &results[..5] {
        assert!(*is_error && text.contains("outside the working directory"), "{text}");
    }
    assert!(results[5].1, "{}", results[5].0);
    assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0, "a file was created outside");
    assert_eq!(tree(work.path()), before, "a refused call changed the workspace");
}

#[test]
fn links_swapped_while_calls_run_never_reach_outside() {
    let work = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::create_dir(work.path().join("in")).unwrap();
    std::fs::write(work.path().join("in/secret.txt"), "inside").unwrap();
    std::fs::write(outside.path().join("secret.txt"), "OUTSIDE").unwrap();
    symlink("in", work.path().join("flip")).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let flipper = {
        let (stop, work, outside) = (stop.clone(), work.path().to_path_buf(), outside.path().to_path_buf());
        std::thread::spawn(move || {
            let (flip, next) = (work.join("flip"), work.join("flip.next"));
            while !stop.load(Ordering::Relaxed) {
                for target in [outside.as_path(), Path::new("in")] {
                    let _ = std::fs::remove_file(&next);
                    symlink(target, &next).unwrap();
                    std::fs::rename(&next, &flip).unwrap();
                }
            }
        })
    };
    let mut answered_inside = 0;
    for round in 0..6 {
        let calls = (0..100)
            .map(|i| match i % 4 {
                0 => call(&format!("w{i}"), "write", json!({"path": format!("flip/w{round}-{i}.txt"), "content": "x"})),
                1 => call(&format!("p{i}"), "apply_patch", patch(&format!("*** Add File: flip/p{round}-{i}.txt\n+x"))),
                _ => call(&format!("r{i}"), "read", json!({"path": "flip/secret.txt"})),
            })
            .collect();
        for (text, is_error) in
            outcomes(work.path(), calls, json!({"confine": true, "allowed": ["read", "write", "edit", "apply_patch"]}))
        {
            assert!(!text.contains("OUTSIDE"), "a read returned the outside file");
            answered_inside += usize::from(!is_error && text == "inside");
        }
    }
    stop.store(true, Ordering::Relaxed);
    flipper.join().unwrap();
    let names: Vec<_> = std::fs::read_dir(outside.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names, ["secret.txt"], "a write landed outside");
    assert!(answered_inside > 0, "no read got through at all, so the race was not exercised");
}

#[test]
fn a_patch_that_fails_on_the_disk_changes_nothing() {
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("a.txt"), "one\n").unwrap();
    std::fs::write(work.path().join("b.txt"), "bee\n").unwrap();
    std::fs::write(work.path().join("blocker"), "a file, not a directory\n").unwrap();
    let before = tree(work.path());
    let long_name = "n".repeat(300);
    let patches = [
        // A move whose destination is under a regular file.
        "*** Update File: a.txt\n*** Move to: blocker/a.txt\n@@\n-one\n+two".to_owned(),
        // Two sections that apply, then one that cannot be written.
        "*** Update File: a.txt\n@@\n-one\n+two\n*** Delete File: b.txt\n*** Add File: blocker/c.txt\n+c".to_owned(),
        format!("*** Update File: a.txt\n@@\n-one\n+two\n*** Add File: new.txt\n+n\n*** Add File: {long_name}\n+x"),
    ];
    let calls = patches.iter().enumerate().map(|(i, p)| call(&format!("p{i}"), "apply_patch", patch(p))).collect();
    for (text, is_error) in outcomes(work.path(), calls, json!({"allowed": ["apply_patch"]})) {
        assert!(is_error && text.contains("Nothing was changed"), "{text}");
    }
    assert_eq!(tree(work.path()), before, "a failed patch left changes or stray files behind");
}

#[test]
fn a_successful_patch_keeps_modes_and_leaves_no_side_files() {
    use std::os::unix::fs::PermissionsExt;
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("run.sh"), "echo one\n").unwrap();
    std::fs::set_permissions(work.path().join("run.sh"), std::fs::Permissions::from_mode(0o750)).unwrap();
    std::fs::write(work.path().join("gone.txt"), "x\n").unwrap();
    symlink("run.sh", work.path().join("alias.sh")).unwrap();
    let body = "*** Update File: alias.sh\n@@\n-echo one\n+echo two\n*** Delete File: gone.txt\n*** Add File: sub/dir/new.txt\n+new";
    let results =
        outcomes(work.path(), vec![call("p", "apply_patch", patch(body))], json!({"allowed": ["apply_patch"]}));
    assert!(!results[0].1, "{}", results[0].0);
    let after = tree(work.path());
    let names: Vec<&str> = after.keys().map(String::as_str).collect();
    assert_eq!(names, ["alias.sh", "run.sh", "sub", "sub/dir", "sub/dir/new.txt"]);
    assert_eq!(after["run.sh"], Some(b"echo two\n".to_vec()), "the link is written through");
    assert_eq!(after["alias.sh"], Some(b"run.sh".to_vec()), "the link stays a link");
    let mode = std::fs::metadata(work.path().join("run.sh")).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o750);
    // A dangling link inside is replaced by an ordinary file, not one with the link's mode.
    symlink("missing-target", work.path().join("dangling")).unwrap();
    let results =
        outcomes(work.path(), vec![call("w", "write", json!({"path": "dangling", "content": "x"}))], json!({}));
    assert!(!results[0].1, "{}", results[0].0);
    let replaced = std::fs::symlink_metadata(work.path().join("dangling")).unwrap();
    assert!(replaced.is_file());
    assert_eq!(replaced.permissions().mode() & 0o002, 0, "the new file is world-writable");
    // A replaced file keeps its mode but a set-id bit, as a write clears it:
    // new content never inherits the old's privilege.
    std::fs::set_permissions(work.path().join("run.sh"), std::fs::Permissions::from_mode(0o6755)).unwrap();
    let results =
        outcomes(work.path(), vec![call("w", "write", json!({"path": "run.sh", "content": "id\n"}))], json!({}));
    assert!(!results[0].1, "{}", results[0].0);
    let mode = std::fs::metadata(work.path().join("run.sh")).unwrap().permissions().mode();
    assert_eq!(mode & 0o7777, 0o755);
}

#[test]
fn a_timed_out_patch_makes_no_change_later() {
    let original: String = (0..200_000).map(|i| format!("line {i}\n")).collect();
    let chunks: String = (0..2_000).map(|i| format!("@@\n-line {}\n+LINE {}\n", i * 100, i * 100)).collect();
    let body = format!("*** Update File: big.txt\n{}", chunks.trim_end());
    let patch_run = |dir: &Path, timeout_ms: u64| {
        std::fs::write(dir.join("big.txt"), &original).unwrap();
        let builtins = json!({"working_directory": dir.to_str().unwrap(), "allowed": ["apply_patch"]});
        let script = json!([{"tool_calls": [call("p", "apply_patch", patch(&body))]}, {"text": "done"}]);
        let agent = agent(script, json!({"builtin_tools": builtins, "tool_timeout_ms": timeout_ms}), vec![]);
        let started = std::time::Instant::now();
        let (result, _) = run(&agent, "go");
        (text(&tool_results(&result)[0]), started.elapsed())
    };
    // How long the whole patch takes here, so the abandoned one is given time to finish.
    let reference = tempfile::tempdir().unwrap();
    let (done, took) = patch_run(reference.path(), 0);
    assert!(done.starts_with("Done"), "{done}");
    let work = tempfile::tempdir().unwrap();
    let (timed_out, _) = patch_run(work.path(), 1);
    assert!(timed_out.contains("timed out"), "{timed_out}");
    std::thread::sleep((took * 4).max(std::time::Duration::from_secs(1)));
    assert!(
        std::fs::read_to_string(work.path().join("big.txt")).unwrap() == original,
        "the abandoned patch wrote after its timeout"
    );
    assert_eq!(std::fs::read_dir(work.path()).unwrap().count(), 1, "side files were left behind");
}

#[test]
fn read_and_edit_refuse_fifos_without_blocking() {
    let work = tempfile::tempdir().unwrap();
    let fifo = work.path().join("pipe");
    let status = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(status.success());
    let calls = vec![
        call("r", "read", json!({"path": "pipe"})),
        call("e", "edit", json!({"path": "pipe", "edits": [{"oldText": "a", "newText": "b"}]})),
        call("d", "read", json!({"path": "/dev/zero"})),
    ];
    let builtins = json!({"allowed": ["read", "edit"]});
    for (text, is_error) in outcomes(work.path(), calls, builtins) {
        assert!(is_error && text.contains("not a regular file"), "{text}");
    }
}

/// A PNG whose header claims `width` x `height` pixels (its data is one pixel).
fn png_claiming(width: u32, height: u32) -> Vec<u8> {
    let mut png = Vec::new();
    image::DynamicImage::new_luma8(1, 1)
        .write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png)
        .unwrap();
    // The IHDR chunk: length (4), "IHDR" (4), width, height, ..., CRC over type and data.
    png[16..20].copy_from_slice(&width.to_be_bytes());
    png[20..24].copy_from_slice(&height.to_be_bytes());
    let crc = crc32(&png[12..29]);
    png[29..33].copy_from_slice(&crc.to_be_bytes());
    png
}

fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &byte in bytes {
        crc ^= u32::from(byte);
        for _ in 0..8 {
            crc = if crc & 1 == 1 { (crc >> 1) ^ 0xEDB8_8320 } else { crc >> 1 };
        }
    }
    !crc
}

#[test]
fn an_image_too_large_to_decode_is_refused_by_its_header() {
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("huge.png"), png_claiming(12_000, 12_000)).unwrap();
    let results = outcomes(work.path(), vec![call("r", "read", json!({"path": "huge.png"}))], json!({}));
    let (text, is_error) = &results[0];
    assert!(*is_error && text.contains("12000x12000 pixels"), "{text}");
}

#[test]
fn arguments_with_a_repeated_key_are_refused_before_the_tool_runs() {
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("safe.txt"), "safe").unwrap();
    let builtins = json!({"working_directory": work.path().to_str().unwrap(), "allowed": ["read"]});
    let raw = r#"{"path":"/etc/passwd","path":"safe.txt"}"#;
    let script = json!([{"tool_calls": [{"id": "r", "name": "read", "arguments": raw}]}, {"text": "done"}]);
    let (result, _) = run(&agent(script, json!({"builtin_tools": builtins}), vec![]), "go");
    let message = &tool_results(&result)[0];
    assert!(message["is_error"].as_bool().unwrap());
    assert!(text(message).starts_with("The arguments for \"read\" give the key \"path\" twice"), "{}", text(message));
}

#[test]
fn two_names_for_one_file_are_one_file_in_a_patch() {
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("a.txt"), "one\n").unwrap();
    std::fs::write(work.path().join("b.txt"), "l1\nl2\n").unwrap();
    symlink("a.txt", work.path().join("alias")).unwrap();
    symlink("b.txt", work.path().join("balias")).unwrap();
    let patches = [
        // A move onto a link to the source itself.
        "*** Update File: a.txt\n*** Move to: alias\n@@\n-one\n+two",
        // Two sections on one file under two names: the second sees the first.
        "*** Update File: balias\n@@\n-l1\n+L1\n*** Update File: b.txt\n@@\n-l2\n+L2",
        // A file added and deleted again is no change at all.
        "*** Add File: brief.txt\n+x\n*** Delete File: brief.txt",
    ];
    let calls = patches.iter().enumerate().map(|(i, p)| call(&format!("p{i}"), "apply_patch", patch(p))).collect();
    for (text, is_error) in outcomes(work.path(), calls, json!({"allowed": ["apply_patch"]})) {
        assert!(!is_error, "{text}");
    }
    let after = tree(work.path());
    assert_eq!(after["a.txt"], Some(b"two\n".to_vec()), "the moved content was lost");
    assert_eq!(after["b.txt"], Some(b"L1\nL2\n".to_vec()), "a section's change was lost");
    let names: Vec<&str> = after.keys().map(String::as_str).collect();
    assert_eq!(names, ["a.txt", "alias", "b.txt", "balias"]);
}

#[test]
fn a_path_ending_in_a_slash_names_no_file() {
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("file"), "kept").unwrap();
    let calls = vec![
        call("w1", "write", json!({"path": "file/", "content": "x"})),
        call("w2", "write", json!({"path": "file/.", "content": "x"})),
        call("w3", "write", json!({"path": "newfile/", "content": "x"})),
        call("r", "read", json!({"path": "file/"})),
        call("p", "apply_patch", patch("*** Delete File: file/")),
    ];
    for (text, is_error) in outcomes(work.path(), calls, json!({"allowed": ["read", "write", "apply_patch"]})) {
        assert!(is_error && text.contains("names a directory, not a file"), "{text}");
    }
    assert_eq!(tree(work.path()).len(), 1);
    assert_eq!(std::fs::read_to_string(work.path().join("file")).unwrap(), "kept");
}

#[test]
fn a_patch_removes_a_link_only_on_its_own() {
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("a.txt"), "A1\n").unwrap();
    symlink("a.txt", work.path().join("alias")).unwrap();
    symlink("alias", work.path().join("l2")).unwrap();
    let before = tree(work.path());
    let refused = [
        "*** Delete File: alias\n*** Add File: alias\n+NEW",
        "*** Delete File: alias\n*** Add File: l2\n+NEW",
        "*** Update File: alias\n*** Move to: b.txt\n@@\n-A1\n+B1\n*** Add File: c.txt\n+c",
        "*** Update File: a.txt\n*** Move to: a.txt\n@@\n-A1\n+A2",
    ];
    let calls = refused.iter().enumerate().map(|(i, p)| call(&format!("p{i}"), "apply_patch", patch(p))).collect();
    for (text, is_error) in outcomes(work.path(), calls, json!({"allowed": ["apply_patch"]})) {
        assert!(is_error && text.contains("Nothing was changed"), "{text}");
    }
    assert_eq!(tree(work.path()), before);
    // Alone, a link's removal removes the link, never its target.
    let calls = vec![call("d", "apply_patch", patch("*** Delete File: l2"))];
    assert!(!outcomes(work.path(), calls, json!({"allowed": ["apply_patch"]}))[0].1);
    let names: Vec<String> = tree(work.path()).into_keys().collect();
    assert_eq!(names, ["a.txt", "alias"]);
}
