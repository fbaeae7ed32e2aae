//! Agents and runs: an [`Agent`] is built once from a configuration and tools, is
//! immutable, and starts any number of concurrent [`Run`]s.
//!
//! One concept per file. The run's steps (`run_loop`, `turn`, `batch_step`,
//! `final_answer`) each take the run's fixed [`context`](context::RunContext)
//! and its one mutable [`RunProgress`], and say what comes next as a
//! [`NextStep`](next_step::NextStep). No module here uses one that uses it back
//! (`tests/it/module_graph.rs` checks).

mod agent_tool;
mod agent_tool_options;
mod approval;
mod batch;
mod batch_step;
mod builder;
mod built;
mod call_progress;
mod call_site;
mod call_updates;
mod config;
mod context;
mod deadline;
mod eager;
mod event;
mod event_queue;
mod final_answer;
mod handle;
mod handoff;
mod history;
mod hook_caller;
mod hook_stages;
mod host_calls;
mod injection;
mod input;
mod invoke;
mod mcp_tools;
mod model_request;
mod nesting;
mod next_step;
mod origin;
mod progress;
mod recorder;
mod request_caches;
mod result;
mod run_loop;
mod run_task;
mod run_tools;
mod state;
mod tool_scope;
mod tool_set;
mod transcript;
mod transcript_json;
mod turn;
mod validation;

pub use agent_tool::AgentToolSpec;
pub use agent_tool_options::{AgentToolMode, AgentToolOptions, HandoffMessages};
pub use approval::{Decision, Interruption};
pub use builder::AgentBuilder;
pub use built::Agent;
pub use config::AgentConfig;
pub use event::{Event, EventKind, EventSink};
pub use handle::Run;
pub use history::HistoryConfig;
pub use host_calls::{CallMode, CallOutcome};
pub use input::{EventSelection, ResultMessages, RunInput, RunSource};
pub use progress::RunProgress;
pub use result::{RunResult, RunStatus};
pub use state::RunState;

pub(crate) use input::InputRepr;
