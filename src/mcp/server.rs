//! One MCP server of an agent, kept running by a task of its own: started in
//! the background when the agent is built, its tool list kept current (list
//! changes of either era, coalesced), started again after it failed or went
//! away when a run next needs it (with backoff), and stopped when the agent
//! goes.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, watch};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::bounded::{bounded, NAME_BYTES, TEXT_BYTES};
use super::client::{McpClient, McpTool, ToolList};
use super::config::{McpServerConfig, NeedsApproval, Transport};
use super::error::McpError;
use super::http::HttpLink;
use super::log::{LogSource, ServerLog};
use super::naming::model_name;
use super::relisting::Relisting;
use super::report::LeftOutTool;
use super::rpc::{Rpc, ServerNotice};
use super::stdio::{StdioCommand, StdioServer};
use super::tool::McpToolFunction;
use crate::tool::{InputSchema, Tool, ToolOptions, ToolSpec};

/// How long a server has to exit after its stdin closed, and again after
/// SIGTERM, before SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(2);
/// A server that ran this long before it went away is started again at
/// once, and its backoff starts over.
const STABLE_AFTER: Duration = Duration::from_secs(30);
/// The pause before the second start after a failure, doubling up to the
/// longest.
const FIRST_BACKOFF: Duration = Duration::from_millis(500);
const LONGEST_BACKOFF: Duration = Duration::from_secs(30);
/// The pause before a subscription to list changes that ended is renewed,
/// doubling while renewals fail, up to the longest.
const RESUBSCRIBE_PAUSE: Duration = Duration::from_secs(1);
const LONGEST_RESUBSCRIBE_PAUSE: Duration = Duration::from_secs(60);
/// The bound on listing a running server's tools when the startup timeout
/// sets none.
const UNBOUNDED_LISTING: Duration = Duration::from_secs(60);
/// A time that never comes, for a timer with nothing to wait for.
pub(super) const FAR_AWAY: Duration = Duration::from_secs(365 * 24 * 3600);
/// The most bytes of the reason a server is down.
const DOWN_REASON_BYTES: usize = 4 * TEXT_BYTES;
/// How long a start waits for a new subscription to be acknowledged before
/// it lists the tools anyway.
const ACKNOWLEDGE_PATIENCE: Duration = Duration::from_secs(5);
/// The JSON-RPC error of a method the server does not offer.
const METHOD_NOT_FOUND: i64 = -32601;

/// What a server is, as runs see it.
#[derive(Clone)]
pub(crate) enum ServerState {
    /// Being started (or started again).
    Starting,
    /// Answering, with its tools.
    Ready(Arc<Ready>),
    /// Not running: why, and when it may be started again.
    Down(Arc<Down>),
}

/// A server that answers.
pub(crate) struct Ready {
    pub(crate) client: Arc<McpClient>,
    /// Its tools the model is offered (before names taken by other tools
    /// are left out), in the order listed, each with its name on the server.
    pub(crate) tools: Vec<(String, Arc<Tool>)>,
    pub(crate) left_out: Vec<LeftOutTool>,
    pub(crate) restarts: u32,
    pub(crate) generation: u64,
    /// The listing the tools were made of.
    listing: ToolList,
}

/// A server that is not running.
pub(crate) struct Down {
    pub(crate) reason: String,
    /// A run that needs it from then on starts it again.
    pub(crate) retry_at: Instant,
    pub(crate) restarts: u32,
    pub(crate) generation: u64,
}

/// One server and its state. Shared by its task, the agent's server set and
/// (weakly) its tools; any thread.
pub(crate) struct Server {
    pub(crate) name: String,
    pub(crate) config: McpServerConfig,
    /// The largest message read from it.
    max_message_bytes: usize,
    state: watch::Sender<ServerState>,
    /// The generation of the failure a run asked to start it again after.
    wanted: watch::Sender<u64>,
    /// How often runs asked the running server to take in the changes it
    /// announced, and how many of those asks it has answered.
    syncs_asked: watch::Sender<u64>,
    syncs_done: watch::Sender<u64>,
    /// Numbers the server set's states.
    generations: Arc<std::sync::atomic::AtomicU64>,
    stop: CancellationToken,
    pub(crate) log: Arc<ServerLog>,
    /// The names the model was last offered of its tools.
    known_names: std::sync::Mutex<Vec<String>>,
}

/// A running server: the client, what must be stopped with it, its
/// notices, and (a modern server whose tools change) the subscription to
/// the changes, while it lasts.
struct Live {
    client: Arc<McpClient>,
    owner: Owner,
    notices: mpsc::Receiver<ServerNotice>,
    subscription: Option<Subscription>,
}

/// Work the serve loop polls beside everything else.
pub(super) type Pending<T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send>>;

/// A subscription to a server's list changes: ends when the server or the
/// connection ends it.
type Subscription = Pending<Result<(), McpError>>;

/// What a running server's connection holds.
enum Owner {
    Stdio(StdioServer),
    Http(Arc<HttpLink>),
}

impl Owner {
    /// Stops the server: its process ends (stdio), or its session (HTTP).
    async fn stop(self) {
        match self {
            Owner::Stdio(server) => server.stop(STOP_GRACE).await,
            Owner::Http(link) => link.end_session().await,
        }
    }
}

impl Server {
    /// The server `name` of `config`, not started yet.
    pub(crate) fn new(
        name: String,
        config: McpServerConfig,
        max_message_bytes: usize,
        generations: Arc<std::sync::atomic::AtomicU64>,
        stop: CancellationToken,
    ) -> Server {
        let log = Arc::new(ServerLog::new(&name));
        Server {
            name,
            config,
            max_message_bytes,
            state: watch::Sender::new(ServerState::Starting),
            wanted: watch::Sender::new(0),
            syncs_asked: watch::Sender::new(0),
            syncs_done: watch::Sender::new(0),
            generations,
            stop,
            log,
            known_names: std::sync::Mutex::default(),
        }
    }

    /// The state now.
    pub(crate) fn state(&self) -> ServerState {
        self.state.borrow().clone()
    }

    /// The server while it answers.
    pub(crate) fn ready(&self) -> Option<Arc<Ready>> {
        match &*self.state.borrow() {
            ServerState::Ready(ready) => Some(Arc::clone(ready)),
            _ => None,
        }
    }

    /// Waits until the server is no longer starting, or `cancel` is cancelled.
    pub(crate) async fn settled(&self, cancel: &CancellationToken) {
        let mut state = self.state.subscribe();
        tokio::select! {
            _ = cancel.cancelled() => {}
            _ = state.wait_for(|state| !matches!(state, ServerState::Starting)) => {}
        }
    }

    /// Asks for the server to be started again after the failure `down`
    /// (once its backoff is over), and waits until that start is over.
    pub(crate) async fn restart(&self, down: &Down, cancel: &CancellationToken) {
        let mut state = self.state.subscribe();
        self.wanted.send_if_modified(|wanted| {
            let asked = *wanted < down.generation;
            *wanted = (*wanted).max(down.generation);
            asked
        });
        let moved_on = |state: &ServerState| match state {
            ServerState::Starting => false,
            ServerState::Ready(_) => true,
            ServerState::Down(now) => now.generation != down.generation,
        };
        tokio::select! {
            _ = cancel.cancelled() => {}
            _ = self.stop.cancelled() => {}
            _ = state.wait_for(moved_on) => {}
        }
    }

    /// Waits until the running server took in every change of its tools it
    /// announced before now (listing them again when it announced one), or
    /// it stopped running, or `cancel` is cancelled.
    pub(crate) async fn synced(&self, cancel: &CancellationToken) {
        let mut asked = 0;
        self.syncs_asked.send_modify(|count| {
            *count += 1;
            asked = *count;
        });
        let mut done = self.syncs_done.subscribe();
        let mut state = self.state.subscribe();
        tokio::select! {
            _ = cancel.cancelled() => {}
            _ = done.wait_for(|done| *done >= asked) => {}
            _ = state.wait_for(|state| !matches!(state, ServerState::Ready(_))) => {}
        }
    }

    fn next_generation(&self) -> u64 {
        self.generations.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1
    }

    /// Keeps the server running until the agent goes; runs on ferrule's
    /// runtime (a server's death signal is tied to the thread that started it,
    /// which must live as long as it: a worker's). A panic of its own leaves
    /// the server down for good, never a run waiting for it.
    pub(crate) async fn supervise(self: Arc<Self>) {
        use futures_util::FutureExt;
        let kept = std::panic::AssertUnwindSafe(Arc::clone(&self).keep_running()).catch_unwind().await;
        if let Err(payload) = kept {
            let reason = format!("ferrule's task for it failed: {}", crate::panic::describe(payload.as_ref()));
            crate::log::log!(Error, "ferrule::mcp", format!("the server is down for good: {reason}"), "server" => self.name);
            let down =
                Down { reason, retry_at: Instant::now() + FAR_AWAY, restarts: 0, generation: self.next_generation() };
            self.state.send_replace(ServerState::Down(Arc::new(down)));
        }
    }

    /// The supervisor's loop: start, serve, go down, start again when asked.
    async fn keep_running(self: Arc<Self>) {
        let mut failures = 0u32;
        let mut restarts = 0u32;
        loop {
            self.state.send_replace(ServerState::Starting);
            let started = self.start().await;
            if self.stop.is_cancelled() {
                return;
            }
            let reason = match started {
                Ok((mut live, listing)) => {
                    let up_since = Instant::now();
                    self.publish(&live.client, &listing, restarts);
                    let why = bounded(&self.serve(&mut live).await, DOWN_REASON_BYTES);
                    // The server's tools see it gone at once.
                    self.state.send_replace(ServerState::Starting);
                    live.owner.stop().await;
                    if self.stop.is_cancelled() {
                        return;
                    }
                    if up_since.elapsed() >= STABLE_AFTER {
                        failures = 0;
                    }
                    why
                }
                Err(why) => why,
            };
            failures += 1;
            let backoff = match failures {
                1 => Duration::ZERO,
                n => FIRST_BACKOFF.saturating_mul(1 << (n - 2).min(16)).min(LONGEST_BACKOFF),
            };
            crate::log::log!(
                Warn,
                "ferrule::mcp",
                format!("the server is down: {reason}"),
                "server" => self.name,
                "restarts" => restarts,
                "retry_after_ms" => backoff.as_millis() as u64,
            );
            let generation = self.next_generation();
            let down = Down { reason, retry_at: Instant::now() + backoff, restarts, generation };
            self.state.send_replace(ServerState::Down(Arc::new(down)));
            let mut wanted = self.wanted.subscribe();
            tokio::select! {
                _ = self.stop.cancelled() => return,
                _ = wanted.wait_for(|wanted| *wanted >= generation) => {}
            }
            restarts += 1;
        }
    }

    /// The startup timeout; without bound when it is 0.
    fn startup_timeout(&self) -> Duration {
        match self.config.startup_timeout_ms {
            0 => Duration::MAX,
            ms => Duration::from_millis(ms),
        }
    }

    /// Starts the server, finds its era and lists its tools, within the
    /// startup timeout; why not, with the last lines of its stderr. A server
    /// the agent's going interrupts is stopped as a running one is.
    async fn start(&self) -> Result<(Live, ToolList), String> {
        let timeout = self.startup_timeout();
        let (rpc, owner) = self.open().map_err(|error| bounded(&error.to_string(), DOWN_REASON_BYTES))?;
        let attempt = async {
            let client = Arc::new(McpClient::connect(rpc, timeout, self.config.transport()).await?);
            let mut notices = client.notices();
            // Subscribed before the listing, no change after it is missed.
            let subscription = match client.modern && client.tools_change() {
                true => self.subscribe(&client, &mut notices).await,
                false => None,
            };
            let listing = client.list_tools(timeout).await?;
            Ok::<_, McpError>((client, notices, subscription, listing))
        };
        let outcome = tokio::select! {
            _ = self.stop.cancelled() => None,
            outcome = tokio::time::timeout(timeout, attempt) => Some(outcome),
        };
        match outcome {
            Some(Ok(Ok((client, notices, subscription, listing)))) => {
                Ok((Live { client, owner, notices, subscription }, listing))
            }
            None => {
                owner.stop().await;
                Err("ferrule stopped it".to_owned())
            }
            // A server that started but failed afterwards is stopped as any
            // other (in the background: the run waiting for it need not).
            Some(Ok(Err(error))) if !matches!(error, McpError::TimedOut { .. }) => {
                tokio::spawn(owner.stop());
                Err(bounded(&error.to_string(), DOWN_REASON_BYTES))
            }
            // The whole start, or a request of it, ran out of time.
            Some(_) => {
                tokio::spawn(owner.stop());
                let stderr = self.log.stderr_tail(4);
                let tail = match stderr.is_empty() {
                    true => String::new(),
                    false => format!("; its stderr ended: {}", stderr.join(" | ")),
                };
                Err(format!("it was not ready within its startup timeout of {} ms{tail}", timeout.as_millis()))
            }
        }
    }

    /// Starts the server's process (stdio) or makes its link (HTTP).
    fn open(&self) -> Result<(Arc<dyn Rpc>, Owner), McpError> {
        let config = &self.config;
        Ok(match config.transport() {
            Transport::Stdio => {
                let command = StdioCommand {
                    command: config.command.clone().unwrap_or_default(),
                    args: config.args.clone(),
                    env: config.env.clone(),
                    cwd: config.cwd.as_ref().map(Into::into),
                };
                let server = StdioServer::spawn(&command, self.max_message_bytes, Arc::clone(&self.log))?;
                (server.connection().clone(), Owner::Stdio(server))
            }
            Transport::Http => {
                let link = Arc::new(HttpLink::new(config, self.max_message_bytes, Arc::clone(&self.log))?);
                (link.clone(), Owner::Http(link))
            }
        })
    }

    /// Makes the server ready with the tools of `listing`.
    fn publish(self: &Arc<Self>, client: &Arc<McpClient>, listing: &ToolList, restarts: u32) {
        let (tools, left_out) = self.tools_of(listing);
        crate::log::log!(
            Info,
            "ferrule::mcp",
            format!("the server is ready with {} tools", tools.len()),
            "server" => self.name,
            "restarts" => restarts,
        );
        self.remember(&tools);
        let generation = self.next_generation();
        let ready =
            Ready { client: Arc::clone(client), tools, left_out, restarts, generation, listing: listing.clone() };
        self.state.send_replace(ServerState::Ready(Arc::new(ready)));
    }

    /// Remembers the names the model sees for `tools`, which stay the
    /// server's (for telling names that collide) while it is not running.
    fn remember(&self, tools: &[(String, Arc<Tool>)]) {
        if let Ok(mut known) = self.known_names.lock() {
            *known = tools.iter().map(|(_, tool)| tool.name().to_owned()).collect();
        }
    }

    /// The names the model was last offered of the server's tools, whether it
    /// runs or not.
    pub(crate) fn known_names(&self) -> Vec<String> {
        self.known_names.lock().map(|known| known.clone()).unwrap_or_default()
    }

    /// Subscribes `client` to its server's list changes, and waits a while
    /// for the server to say the subscription is in place (on `notices`).
    async fn subscribe(
        &self,
        client: &Arc<McpClient>,
        notices: &mut mpsc::Receiver<ServerNotice>,
    ) -> Option<Subscription> {
        let mut subscription: Subscription = Box::pin(Arc::clone(client).listen());
        let acknowledged = tokio::time::sleep(ACKNOWLEDGE_PATIENCE);
        tokio::pin!(acknowledged);
        loop {
            tokio::select! {
                ended = &mut subscription => {
                    return match self.unsubscribed(ended) {
                        true => Some(Box::pin(resubscribe(Arc::clone(client), 1))),
                        false => None,
                    };
                }
                _ = &mut acknowledged => break,
                notice = notices.recv() => match notice {
                    Some(ServerNotice::Subscribed) | None => break,
                    // A change before the listing is in the listing.
                    Some(ServerNotice::ToolsChanged) => {
                        client.rpc().take_tools_changed();
                    }
                    Some(ServerNotice::Ignored(what)) => self.log.push(LogSource::Ferrule, what),
                },
            }
        }
        Some(subscription)
    }

    /// Notes why a subscription ended; whether to subscribe again (not when
    /// the server does not offer subscriptions).
    fn unsubscribed(&self, ended: Result<(), McpError>) -> bool {
        let why = match &ended {
            Ok(()) => "the server ended it".to_owned(),
            Err(error) => error.to_string(),
        };
        self.log.push(LogSource::Ferrule, format!("the subscription to list changes ended: {why}"));
        !matches!(ended, Err(error) if error.code() == Some(METHOD_NOT_FOUND))
    }

    /// Serves the running server: list changes, notes, runs' asks to take
    /// in changes, until it goes away (why) or the agent goes. A listing runs
    /// beside all of that, so a server that never answers one holds up no run
    /// past the listing's own bound, and never its stop.
    async fn serve(self: &Arc<Self>, live: &mut Live) -> String {
        let client = Arc::clone(&live.client);
        let client = &client;
        let notices = &mut live.notices;
        let mut relisting = Relisting::new();
        // Asks answered when the listing under way ends, and an ask made
        // after a change announced since it began, answered by the next.
        let mut asked_during_listing: Option<u64> = None;
        let mut asked_for_next: Option<u64> = None;
        // A modern server announces list changes on a subscription, renewed
        // (with backoff) when it ends, after listing again: changes may have
        // been missed meanwhile.
        let mut subscription = live.subscription.take();
        let mut renewals = 0u32;
        let mut dropped_reported = 0;
        // Runs may have asked before this subscription: their asks are answered first.
        let mut syncs = self.syncs_asked.subscribe();
        syncs.mark_changed();
        loop {
            let next_listing = relisting.next_at();
            tokio::select! {
                // A run's turn begins: changes announced so far take effect now.
                Ok(()) = syncs.changed() => {
                    let asked = *syncs.borrow_and_update();
                    while let Ok(notice) = notices.try_recv() {
                        self.noticed(notice, client, &mut relisting);
                    }
                    self.noticed_changes(client, &mut relisting, &mut dropped_reported);
                    if !relisting.under_way() && relisting.is_due() {
                        relisting.begin(self.list_again(client));
                    }
                    match (relisting.under_way(), relisting.is_due()) {
                        (true, true) => asked_for_next = Some(asked),
                        (true, false) => asked_during_listing = Some(asked),
                        (false, _) => self.syncs_done.send_modify(|done| *done = (*done).max(asked)),
                    }
                }
                _ = self.stop.cancelled() => return "ferrule stopped it".to_owned(),
                why = client.rpc().closed() => return why,
                Some(notice) = notices.recv() => self.noticed(notice, client, &mut relisting),
                ended = until_ended(&mut subscription) => {
                    relisting.changed();
                    subscription = match self.unsubscribed(ended) {
                        true => {
                            renewals += 1;
                            Some(Box::pin(resubscribe(Arc::clone(client), renewals)))
                        }
                        false => None,
                    };
                }
                _ = tokio::time::sleep_until(next_listing), if relisting.is_due() && !relisting.under_way() => {
                    relisting.begin(self.list_again(client));
                }
                listed = relisting.ended() => {
                    match listed {
                        Ok(listed) => {
                            // A subscription that lasted until a listing is a working one.
                            renewals = 0;
                            self.relisted(client, &listed);
                        }
                        Err(error) => self.log.push(LogSource::Ferrule, format!("listing its tools failed: {error}")),
                    }
                    if let Some(asked) = asked_during_listing.take() {
                        self.syncs_done.send_modify(|done| *done = (*done).max(asked));
                    }
                    if let Some(asked) = asked_for_next.take() {
                        relisting.begin(self.list_again(client));
                        asked_during_listing = Some(asked);
                    }
                }
            }
        }
    }

    /// Takes in one notice: a change of the tools makes a listing due.
    fn noticed(&self, notice: ServerNotice, client: &McpClient, relisting: &mut Relisting) {
        match notice {
            ServerNotice::ToolsChanged => {
                client.rpc().take_tools_changed();
                relisting.changed();
            }
            ServerNotice::Ignored(what) => self.log.push(LogSource::Ferrule, what),
            ServerNotice::Subscribed => {}
        }
    }

    /// Takes in what the notices could not carry: a change of the tools
    /// announced while the queue was full, and how many notices were dropped.
    fn noticed_changes(&self, client: &McpClient, relisting: &mut Relisting, reported: &mut u64) {
        if client.rpc().take_tools_changed() {
            relisting.changed();
        }
        let dropped = client.rpc().dropped_notices();
        if dropped > *reported {
            self.log.push(LogSource::Ferrule, format!("{} of its notices were dropped unread", dropped - *reported));
            *reported = dropped;
        }
    }

    /// A listing of the tools, bounded in time as a start is (a minute
    /// when the startup timeout sets no bound).
    fn list_again(&self, client: &Arc<McpClient>) -> Pending<Result<ToolList, McpError>> {
        let client = Arc::clone(client);
        let bound = match self.config.startup_timeout_ms {
            0 => UNBOUNDED_LISTING,
            ms => Duration::from_millis(ms),
        };
        Box::pin(async move {
            match tokio::time::timeout(bound, client.list_tools(bound)).await {
                Ok(listed) => listed,
                Err(_) => Err(McpError::TimedOut { method: "tools/list".into(), millis: bound.as_millis() }),
            }
        })
    }

    /// Publishes a new listing when it changed what runs see.
    fn relisted(self: &Arc<Self>, client: &Arc<McpClient>, listing: &ToolList) {
        let Some(current) = self.ready() else { return };
        if *listing != current.listing {
            self.publish(client, listing, current.restarts);
        }
    }

    /// The tools of `listing` the configuration offers, as ferrule's tools,
    /// and those left out with why.
    fn tools_of(self: &Arc<Self>, listing: &ToolList) -> (Vec<(String, Arc<Tool>)>, Vec<LeftOutTool>) {
        let mut left_out: Vec<LeftOutTool> =
            listing.left_out.iter().map(|(name, reason)| left_out_tool(name, reason)).collect();
        let mut tools = Vec::new();
        for listed in listing.tools.iter().filter(|tool| self.config.offers(&tool.name)) {
            match self.tool(listed) {
                Ok(tool) => tools.push((listed.name.clone(), Arc::new(tool))),
                Err(reason) => left_out.push(left_out_tool(&listed.name, &reason)),
            }
        }
        let approval = match &self.config.needs_approval {
            NeedsApproval::Named(names) => names.iter().collect(),
            NeedsApproval::All(_) => Vec::new(),
        };
        let named = [
            ("allowed_tools", self.config.allowed_tools.iter().flatten().collect::<Vec<_>>()),
            ("excluded_tools", self.config.excluded_tools.iter().collect()),
            ("needs_approval", approval),
        ];
        for (field, names) in named {
            for name in names.into_iter().filter(|name| !listing.tools.iter().any(|tool| &tool.name == *name)) {
                let reason = format!("{field} names it, but the server has no such tool");
                left_out.push(LeftOutTool { name: name.clone(), reason });
            }
        }
        (tools, left_out)
    }

    /// One listed tool as ferrule's.
    fn tool(self: &Arc<Self>, listed: &McpTool) -> Result<Tool, String> {
        let schema = InputSchema::compile_declared(listed.input_schema.clone())
            .map_err(|e| format!("its inputSchema was refused: {}", e.message))?;
        let output = match &listed.output_schema {
            None => None,
            Some(document) => Some(Arc::new(
                InputSchema::compile_declared(document.clone())
                    .map_err(|e| format!("its outputSchema was refused: {}", e.message))?,
            )),
        };
        let options = ToolOptions {
            timeout_ms: self.config.tool_timeout_ms,
            needs_approval: self.config.needs_approval.covers(&listed.name),
            ..ToolOptions::default()
        };
        let name = model_name(&self.name, &listed.name, self.config.prefix);
        let description = listed.description.clone().unwrap_or_default();
        let spec = ToolSpec::with_schema(name, description, schema, options).map_err(|e| e.message)?;
        let function = McpToolFunction { server: Arc::downgrade(self), tool: listed.name.clone(), output };
        Ok(spec.implement(function))
    }
}

/// A tool left out, its name and reason (a server's words) cut short.
fn left_out_tool(name: &str, reason: &str) -> LeftOutTool {
    LeftOutTool { name: bounded(name, NAME_BYTES), reason: bounded(reason, TEXT_BYTES) }
}

/// What `work` ends with; pending forever without work.
pub(super) async fn until_ended<T>(work: &mut Option<Pending<T>>) -> T {
    match work {
        Some(work) => work.await,
        None => std::future::pending().await,
    }
}

/// A subscription made again, after a pause that doubles with each
/// `renewal` (from 1) up to a minute.
async fn resubscribe(client: Arc<McpClient>, renewal: u32) -> Result<(), McpError> {
    let pause = RESUBSCRIBE_PAUSE.saturating_mul(1 << renewal.saturating_sub(1).min(16)).min(LONGEST_RESUBSCRIBE_PAUSE);
    tokio::time::sleep(pause).await;
    client.listen().await
}
