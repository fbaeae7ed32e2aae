//! An agent's MCP servers: each started in the background when the agent is
//! built and stopped when it goes, and the tools they offer together, as one
//! snapshot a turn takes.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::config::McpServerConfig;
use super::log::NewLines;
use super::report::{LeftOutTool, McpServerStatus, ServerReport};
use super::server::{Down, Server, ServerState};
use crate::tool::Tool;

/// The longest pause a run waits out for a required server to be started again.
const REQUIRED_PATIENCE: std::time::Duration = std::time::Duration::from_secs(60);

/// The servers of one agent. Owned by the agent: dropping it stops every
/// server (in the background: stdin closed, then SIGTERM and SIGKILL to its
/// process group after a grace period each). Any thread.
pub struct McpServers {
    /// In the order of their names.
    servers: Vec<Arc<Server>>,
    /// The names the agent's own tools take.
    taken: HashSet<String>,
    stop: CancellationToken,
    snapshot: Mutex<Option<Arc<McpSnapshot>>>,
}

/// The servers as they stood at one moment: what each offers, and the tools
/// offered, in the order of the servers' names and then as each listed them.
pub struct McpSnapshot {
    /// Each server's state generation (0 while starting), which identifies
    /// the snapshot.
    key: Vec<u64>,
    /// Each server, in the order of their names.
    pub servers: Vec<ServerReport>,
    /// The tools offered, in the order of the servers and then as listed.
    pub tools: Vec<Arc<Tool>>,
}

impl McpSnapshot {
    /// Whether it is the snapshot `other` was taken as (the same states).
    pub fn same_as(&self, other: &McpSnapshot) -> bool {
        self.key == other.key
    }
}

impl McpServers {
    /// Starts connecting to every server of `configs` on `runtime`, at once
    /// and in the background; `taken` are the names of the agent's own tools,
    /// which a server's tool never takes. Must be called where the runtime
    /// may spawn.
    pub fn start(
        configs: &BTreeMap<String, McpServerConfig>,
        taken: HashSet<String>,
        max_message_bytes: usize,
        runtime: &tokio::runtime::Handle,
    ) -> McpServers {
        let stop = CancellationToken::new();
        let generations = Arc::new(AtomicU64::new(0));
        let servers: Vec<Arc<Server>> = configs
            .iter()
            .map(|(name, config)| {
                let server = Server::new(
                    name.clone(),
                    config.clone(),
                    max_message_bytes,
                    Arc::clone(&generations),
                    stop.child_token(),
                );
                Arc::new(server)
            })
            .collect();
        for server in &servers {
            runtime.spawn(Arc::clone(server).supervise());
        }
        McpServers { servers, taken, stop, snapshot: Mutex::new(None) }
    }

    /// Waits, for every server at once, until the servers still starting are
    /// ready or failed, those that failed and are due to be started again
    /// were (once; a required server's pause is waited out), and those that
    /// announced a change of their tools listed them again; returns early
    /// when `cancel` is cancelled.
    pub async fn settle(&self, cancel: &CancellationToken) {
        let waits = self.servers.iter().map(|server| async move {
            let mut restarted = false;
            while !cancel.is_cancelled() {
                match server.state() {
                    ServerState::Starting => server.settled(cancel).await,
                    ServerState::Down(down) if !restarted && due(&down, server.config.required) => {
                        restarted = true;
                        tokio::select! {
                            _ = cancel.cancelled() => return,
                            _ = tokio::time::sleep_until(down.retry_at) => {}
                        }
                        server.restart(&down, cancel).await;
                    }
                    ServerState::Ready(_) => return server.synced(cancel).await,
                    ServerState::Down(_) => return,
                }
            }
        });
        futures_util::future::join_all(waits).await;
    }

    /// The servers and their tools now. A tool whose name the agent's own
    /// tools take is left out, and so is every tool whose name another
    /// server's tool has (as that server last listed it, running or not): which
    /// server a name calls never depends on which servers are up, so a call
    /// approved for one server's tool never runs another's.
    pub fn snapshot(&self) -> Arc<McpSnapshot> {
        let states: Vec<ServerState> = self.servers.iter().map(|server| server.state()).collect();
        let key: Vec<u64> = states
            .iter()
            .map(|state| match state {
                ServerState::Starting => 0,
                ServerState::Ready(ready) => ready.generation,
                ServerState::Down(down) => down.generation,
            })
            .collect();
        let mut cached = self.snapshot.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(snapshot) = cached.as_ref().filter(|snapshot| snapshot.key == key) {
            return Arc::clone(snapshot);
        }
        let known: Vec<Vec<String>> = self.servers.iter().map(|server| server.known_names()).collect();
        let mut holders: HashMap<&str, Vec<&str>> = HashMap::new();
        for (server, names) in self.servers.iter().zip(&known) {
            for name in names {
                holders.entry(name).or_default().push(&server.name);
            }
        }
        let mut tools = Vec::new();
        let mut servers = Vec::new();
        for (server, state) in self.servers.iter().zip(&states) {
            let mut report = ServerReport {
                server: server.name.clone(),
                required: server.config.required,
                status: McpServerStatus::Unavailable,
                tools: Vec::new(),
                left_out: Vec::new(),
                error: None,
                restarts: 0,
                protocol_version: None,
            };
            match state {
                ServerState::Starting => report.error = Some("it is starting".to_owned()),
                ServerState::Down(down) => {
                    report.error = Some(down.reason.clone());
                    report.restarts = down.restarts;
                }
                ServerState::Ready(ready) => {
                    report.status = McpServerStatus::Ready;
                    report.restarts = ready.restarts;
                    report.protocol_version = Some(ready.client.protocol_version.clone());
                    report.left_out = ready.left_out.clone();
                    for (own_name, tool) in &ready.tools {
                        let name = tool.name();
                        let others = holders.get(name).into_iter().flatten().filter(|holder| **holder != server.name);
                        let others: Vec<&str> = others.copied().collect();
                        let reason = if self.taken.contains(name) {
                            Some(format!("its name {name} is that of the agent's own tool"))
                        } else if !others.is_empty() {
                            Some(format!(
                                "its name {name} is also that of a tool of the server \"{}\"",
                                others.join("\", \"")
                            ))
                        } else if report.tools.iter().any(|offered| offered == name) {
                            Some(format!("its name {name} is that of another of its tools"))
                        } else {
                            None
                        };
                        if let Some(reason) = reason {
                            report.left_out.push(LeftOutTool { name: own_name.clone(), reason });
                            continue;
                        }
                        report.tools.push(name.to_owned());
                        tools.push(Arc::clone(tool));
                    }
                }
            }
            servers.push(report);
        }
        let snapshot = Arc::new(McpSnapshot { key, servers, tools });
        *cached = Some(Arc::clone(&snapshot));
        snapshot
    }

    /// The lines of the server `server`'s log numbered `from` and later.
    pub fn log_since(&self, server: &str, from: u64) -> NewLines {
        let found = self.servers.iter().find(|s| s.name == server);
        found.map(|s| s.log.since(from)).unwrap_or(NewLines { next: from, ..NewLines::default() })
    }
}

/// Whether a run starts `down`'s server again now: once its pause is over,
/// or, for a required server, after waiting out a pause of the usual length.
fn due(down: &Down, required: bool) -> bool {
    let now = Instant::now();
    down.retry_at <= now || (required && down.retry_at <= now + REQUIRED_PATIENCE)
}

impl Drop for McpServers {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}
