//! The bash built-in: combined output, exit codes, timeouts and cancellation that
//! kill the whole process group, bounded output, background children.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Duration;

use crate::common::*;
use ferrule::agent::{Agent, RunStatus};
use serde_json::{json, Value};

fn bash_agent(dir: &Path, arguments: Value, builtins: Value) -> Agent {
    let mut builtins = builtins;
    builtins["working_directory"] = json!(dir.to_str().unwrap());
    builtins["allowed"] = json!(["bash"]);
    let script = json!([{"tool_calls": [{"id": "b", "name": "bash", "arguments": arguments}]}, {"text": "done"}]);
    agent(script, json!({"builtin_tools": builtins}), vec![])
}

fn bash(dir: &Path, arguments: Value) -> (String, bool, Vec<Value>) {
    let (result, events) = run(&bash_agent(dir, arguments, json!({})), "go");
    assert_eq!(result.status, RunStatus::Completed, "{:?}", result.error);
    let message = &tool_results(&result)[0];
    (text(message), message["is_error"].as_bool().unwrap(), events)
}

/// Whether `pid` is a live process (a zombie counts as gone).
fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat.rsplit(')').next().and_then(|rest| rest.split_whitespace().next()) != Some("Z"),
        Err(_) => false,
    }
}

fn wait_until_gone(pid: i32) -> bool {
    for _ in 0..500 {
        if !alive(pid) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    false
}

fn read_pid(path: &Path) -> i32 {
    for _ in 0..1000 {
        if let Some(pid) = std::fs::read_to_string(path).ok().and_then(|t| t.trim().parse().ok()) {
            return pid;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("no pid in {}", path.display());
}

#[test]
fn output_is_combined_and_the_exit_code_stated() {
    let dir = tempfile::tempdir().unwrap();
    let (text, is_error, _) = bash(dir.path(), json!({"command": "pwd; echo out; echo err >&2; exit 3"}));
    let root = dir.path().canonicalize().unwrap();
    assert_eq!(text, format!("{}\nout\nerr\n[exit code 3]", root.display()));
    assert!(is_error);
    let (text, is_error, _) = bash(dir.path(), json!({"command": "read line; echo \"got [$line]\""}));
    assert_eq!(text, "got []\n[exit code 0]", "stdin is empty");
    assert!(!is_error);
}

#[test]
fn a_timeout_kills_the_runaway_child_too() {
    let dir = tempfile::tempdir().unwrap();
    let (text, is_error, _) = bash(
        dir.path(),
        json!({"command": "sleep 300 & echo $! > child.pid; echo started; sleep 300", "timeout": 0.5}),
    );
    assert!(is_error);
    assert!(text.starts_with("started\n") && text.contains("[timed out after 0.5 s"), "{text}");
    assert!(wait_until_gone(read_pid(&dir.path().join("child.pid"))), "the background child survived");
}

#[test]
fn the_configured_default_timeout_applies() {
    let dir = tempfile::tempdir().unwrap();
    let agent = bash_agent(dir.path(), json!({"command": "sleep 300"}), json!({"bash_timeout_s": 1}));
    let (result, _) = run(&agent, "go");
    assert!(text(&tool_results(&result)[0]).contains("[timed out after 1 s"));
}

#[test]
fn huge_output_keeps_a_bounded_tail_and_spills_the_start_privately() {
    let dir = tempfile::tempdir().unwrap();
    let agent =
        bash_agent(dir.path(), json!({"command": "yes 0123456789 | head -c 100000000; echo; echo LAST"}), json!({}));
    let (result, _) = run(&agent, "go");
    let text = text(&tool_results(&result)[0]);
    assert!(text.len() < 52 * 1024, "{} bytes kept", text.len());
    assert!(text.ends_with("LAST\n[exit code 0]"), "{}", &text[text.len() - 40..]);
    let spill = Path::new(text.split("bytes are in ").nth(1).unwrap().split(']').next().unwrap()).to_path_buf();
    let kept = std::fs::symlink_metadata(&spill).unwrap();
    assert!(kept.is_file());
    assert_eq!(kept.len(), 64 << 20, "the spill file is bounded");
    assert_eq!(kept.permissions().mode() & 0o777, 0o600);
    let private = std::fs::symlink_metadata(spill.parent().unwrap()).unwrap();
    assert_eq!(private.permissions().mode() & 0o777, 0o700);
    assert_eq!(std::fs::read(&spill).unwrap()[..11], *b"0123456789\n");
    drop(agent);
    assert!(!spill.exists() && !spill.parent().unwrap().exists(), "dropping the agent removes its spill files");
}

#[test]
fn a_spill_file_never_follows_a_planted_link() {
    // The names spill files once had: predictable from the process id.
    let victim = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(victim.path(), "precious").unwrap();
    let planted: Vec<_> = (1..=20)
        .map(|n| std::env::temp_dir().join(format!("ferrule-bash-{}-{n}.log", std::process::id())))
        .filter(|path| std::os::unix::fs::symlink(victim.path(), path).is_ok())
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let (text, _, _) = bash(dir.path(), json!({"command": "seq 1 100000"}));
    assert!(text.contains("the whole output is in"), "{}", &text[..200]);
    for path in planted {
        std::fs::remove_file(path).unwrap();
    }
    assert_eq!(std::fs::read_to_string(victim.path()).unwrap(), "precious");
}

#[test]
fn a_background_writer_cannot_hold_the_call_past_the_shell() {
    let dir = tempfile::tempdir().unwrap();
    let command = "(while true; do echo tick; sleep 0.05; done) & echo $! > loop.pid; exit 0";
    let agent = bash_agent(dir.path(), json!({"command": command, "timeout": 2}), json!({}));
    let (result, _) = run(&agent, "go");
    let loop_pid = read_pid(&dir.path().join("loop.pid"));
    unsafe { libc::kill(loop_pid, libc::SIGKILL) };
    let message = &tool_results(&result)[0];
    assert!(text(message).ends_with("[exit code 0]"), "{}", text(message));
}

#[test]
fn a_background_flood_ends_with_the_call() {
    let dir = tempfile::tempdir().unwrap();
    let command = "(yes | head -c 20G) & echo $! > flood.pid; exit 0";
    let agent = bash_agent(dir.path(), json!({"command": command, "timeout": 600}), json!({}));
    let (result, _) = run(&agent, "go");
    let text = text(&tool_results(&result)[0]);
    assert!(text.ends_with("[exit code 0]"), "{}", &text[text.len().saturating_sub(200)..]);
    if let Some(spill) = text.split(" in ").nth(1).and_then(|rest| rest.split(']').next()) {
        assert!(std::fs::metadata(spill).unwrap().len() <= 64 << 20);
    }
    // Its pipe closed with the call, so the flood dies of SIGPIPE.
    assert!(wait_until_gone(read_pid(&dir.path().join("flood.pid"))), "the flood outlived the call");
}

#[test]
fn an_absurd_timeout_is_no_timeout_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    for timeout in [1e20, 1e300, f64::MAX] {
        let (text, is_error, _) = bash(dir.path(), json!({"command": "echo ok", "timeout": timeout}));
        assert_eq!((text.as_str(), is_error), ("ok\n[exit code 0]", false));
    }
}

#[test]
fn a_background_child_holding_the_pipe_does_not_hold_the_call() {
    let dir = tempfile::tempdir().unwrap();
    let (text, is_error, _) = bash(dir.path(), json!({"command": "sleep 300 & echo $!"}));
    assert!(!is_error, "{text}");
    let pid: i32 = text.lines().next().unwrap().parse().unwrap();
    assert!(alive(pid), "the call returned while the child lives on");
    unsafe { libc::kill(pid, libc::SIGKILL) };
}

#[test]
fn cancelling_mid_command_leaves_no_process_behind() {
    let dir = tempfile::tempdir().unwrap();
    let command = "echo $$ > shell.pid; sleep 300 & echo $! > child.pid; wait";
    let agent = bash_agent(dir.path(), json!({"command": command}), json!({}));
    let (run_handle, events) = start(&agent, "go");
    let shell = read_pid(&dir.path().join("shell.pid"));
    let child = read_pid(&dir.path().join("child.pid"));
    run_handle.cancel();
    assert_eq!(run_handle.wait_blocking().unwrap().status, RunStatus::Cancelled);
    assert!(wait_until_gone(shell), "the shell survived");
    assert!(wait_until_gone(child), "the child survived");
    assert_event_invariants(&events.lock().unwrap());
}

#[test]
fn progress_updates_show_output_as_it_comes() {
    let dir = tempfile::tempdir().unwrap();
    let (_, _, events) = bash(dir.path(), json!({"command": "for i in 1 2 3; do echo tick $i; sleep 0.7; done"}));
    let updates = of_type(&events, "tool_execution_update");
    assert!(!updates.is_empty());
    assert!(updates[0]["partial"]["content"][0]["text"].as_str().unwrap().contains("tick 1"));
}
