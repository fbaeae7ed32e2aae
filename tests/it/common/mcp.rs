//! The MCP test servers (`tests/mcp`) and the Python that runs them, and
//! checks that a process is gone.

use std::path::PathBuf;
use std::time::Duration;

/// The Python of `build/mcp-python` (made by `scripts/setup.sh`), with the
/// pinned MCP SDK; `FERRULE_MCP_PYTHON` names another.
pub fn python() -> String {
    let default = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("build/mcp-python/bin/python");
    let python = std::env::var("FERRULE_MCP_PYTHON").map(PathBuf::from).unwrap_or(default);
    assert!(python.exists(), "{} is missing: run scripts/setup.sh (make test does)", python.display());
    python.display().to_string()
}

/// The path of a file under `tests/mcp`.
pub fn script(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/mcp").join(name).display().to_string()
}

/// Whether the process `pid` is gone: for one reaped by us, gone from the
/// table; for another (whose reaper is not ours to wait for), at least a zombie.
pub fn gone(pid: i32, reaped: bool) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => !reaped && stat.rsplit(')').next().is_some_and(|rest| rest.trim_start().starts_with('Z')),
    }
}

/// Waits up to 30 s for [`gone`].
pub fn until_gone(pid: i32, reaped: bool) -> bool {
    for _ in 0..600 {
        if gone(pid, reaped) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}
