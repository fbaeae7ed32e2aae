//! The MCP test servers (`tests/mcp`) and the Python that runs them, and
//! checks that a process is gone.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// The Python of `build/mcp-python` (made by `scripts/setup.sh`), with the
/// pinned MCP SDK 2.x; `FERRULE_MCP_PYTHON` names another.
pub fn python() -> String {
    python_of("build/mcp-python", "FERRULE_MCP_PYTHON")
}

/// The Python of `build/mcp-python-1`, with the pinned MCP SDK 1.x (the
/// handshake era only); `FERRULE_MCP_PYTHON_1` names another.
pub fn python_1() -> String {
    python_of("build/mcp-python-1", "FERRULE_MCP_PYTHON_1")
}

fn python_of(environment: &str, variable: &str) -> String {
    let default = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(environment).join("bin/python");
    let python = std::env::var(variable).map(PathBuf::from).unwrap_or(default);
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

/// A test server over HTTP, running until dropped (its stdin's end stops
/// it): `script` run by `python` with `options`, which prints its port first.
pub struct HttpServer {
    child: Child,
    /// Its endpoint.
    pub url: String,
}

impl HttpServer {
    pub fn start(python: &str, script: &str, options: &[&str]) -> HttpServer {
        let mut child = Command::new(python)
            .arg(script)
            .args(options)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("the HTTP test server starts");
        let mut port = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut port).unwrap();
        let url = format!("http://127.0.0.1:{}/mcp", port.trim());
        HttpServer { child, url }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
