//! ferrule's Rust integration tests, one binary of modules (one link instead of
//! one per file). Shared helpers are in `common`.

mod common;

mod agent_loop;
mod agents;
mod agents_hostile;
mod agents_review;
mod apply_patch_scenarios;
mod approval;
mod builtin_bash;
mod builtin_bash_env;
mod builtin_hostile;
mod builtin_sandbox;
mod builtin_tools;
mod conformance;
mod events;
mod ffi_providers;
mod hooks;
mod host_calls;
mod host_json;
mod invocation;
mod logs;
mod mcp_agent;
mod mcp_http;
mod mcp_legacy;
mod mcp_registry;
mod mcp_stdio;
mod module_graph;
mod otlp;
mod provider_gemini;
mod provider_http;
mod provider_record;
mod provider_replay;
mod schema_file;
mod traces;
mod version;
