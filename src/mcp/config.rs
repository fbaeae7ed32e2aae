//! The `mcp_servers` part of the agent configuration: how to reach each server
//! and which of its tools the model sees.

use std::collections::{BTreeMap, BTreeSet};

use schemars::JsonSchema;
use serde::Deserialize;

use crate::error::{Error, Result};

/// One MCP server: a command ferrule starts and speaks to over its stdin and
/// stdout, or the URL of a server speaking streamable HTTP (never both), and
/// which of its tools the model sees. Unknown fields are rejected.
#[derive(Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct McpServerConfig {
    /// The program to start (found on `PATH` when it is not a path).
    #[serde(default)]
    pub command: Option<String>,
    /// The program's arguments.
    #[serde(default)]
    pub args: Vec<String>,
    /// Variables added to the server's environment, which otherwise holds only
    /// the host's `PATH`, `HOME`, `LANG` and the like, never its whole
    /// environment.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// The server's working directory; the host's when absent.
    #[serde(default)]
    pub cwd: Option<String>,
    /// The server's streamable HTTP endpoint (`http` or `https`).
    #[serde(default)]
    pub url: Option<String>,
    /// HTTP headers sent with every request to `url`. Their values never
    /// appear in an event or an error.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// The environment variable whose value is sent as `Authorization: Bearer`
    /// to `url`, read each time ferrule connects. It never appears in an event
    /// or an error.
    #[serde(default)]
    pub bearer_token_env: Option<String>,
    /// How long in milliseconds a run's first model request waits for the
    /// server to start, answer and list its tools; 0 means without bound.
    #[serde(default = "default_startup_timeout_ms")]
    pub startup_timeout_ms: u64,
    /// Bound on one call of the server's tools in milliseconds; 0 means the
    /// agent's `tool_timeout_ms`.
    #[serde(default = "default_tool_timeout_ms")]
    pub tool_timeout_ms: u64,
    /// The server's tools to offer, by the server's own names; absent offers
    /// every one, an empty list none.
    #[serde(default)]
    pub allowed_tools: Option<Vec<String>>,
    /// The server's tools never offered, by the server's own names; applied
    /// last, always wins.
    #[serde(default)]
    pub excluded_tools: Vec<String>,
    /// Whether calls of the server's tools run only once the host approved
    /// them: `true`, `false` (default), or a list of the server's tool names.
    #[serde(default)]
    pub needs_approval: NeedsApproval,
    /// The model sees the tool `t` of the server `s` as `s__t` (true, default),
    /// or as `t`, when no other tool has that name.
    #[serde(default = "default_prefix")]
    pub prefix: bool,
    /// A run fails with `MCP_UNAVAILABLE` when the server is not ready by its
    /// startup timeout (or cannot be restarted); otherwise its tools are simply
    /// absent.
    #[serde(default)]
    pub required: bool,
}

/// The configuration without the values of `env` and `headers` (which may
/// be secrets).
impl std::fmt::Debug for McpServerConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names =
            |map: &BTreeMap<String, String>| map.keys().map(|key| format!("{key}: [redacted]")).collect::<Vec<_>>();
        f.debug_struct("McpServerConfig")
            .field("command", &self.command)
            .field("args", &self.args)
            .field("env", &names(&self.env))
            .field("cwd", &self.cwd)
            .field("url", &self.url)
            .field("headers", &names(&self.headers))
            .field("bearer_token_env", &self.bearer_token_env)
            .field("startup_timeout_ms", &self.startup_timeout_ms)
            .field("tool_timeout_ms", &self.tool_timeout_ms)
            .field("allowed_tools", &self.allowed_tools)
            .field("excluded_tools", &self.excluded_tools)
            .field("needs_approval", &self.needs_approval)
            .field("prefix", &self.prefix)
            .field("required", &self.required)
            .finish()
    }
}

/// Which of a server's tools need the host's approval.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum NeedsApproval {
    /// Every tool, or none.
    All(bool),
    /// The tools named, by the server's own names.
    Named(BTreeSet<String>),
}

impl Default for NeedsApproval {
    fn default() -> Self {
        NeedsApproval::All(false)
    }
}

impl NeedsApproval {
    /// Whether the server's tool `tool` needs approval.
    pub fn covers(&self, tool: &str) -> bool {
        match self {
            NeedsApproval::All(all) => *all,
            NeedsApproval::Named(named) => named.contains(tool),
        }
    }
}

fn default_startup_timeout_ms() -> u64 {
    30_000
}

fn default_tool_timeout_ms() -> u64 {
    300_000
}

fn default_prefix() -> bool {
    true
}

/// How a server is reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// A child process, over its stdin and stdout.
    Stdio,
    /// Streamable HTTP.
    Http,
}

impl McpServerConfig {
    /// How the server is reached (the configuration is checked).
    pub fn transport(&self) -> Transport {
        match self.url {
            Some(_) => Transport::Http,
            None => Transport::Stdio,
        }
    }

    /// Whether the model is offered the server's tool `tool` (its own name).
    pub fn offers(&self, tool: &str) -> bool {
        let allowed = self.allowed_tools.as_ref().is_none_or(|allowed| allowed.iter().any(|a| a == tool));
        allowed && !self.excluded_tools.iter().any(|e| e == tool)
    }

    /// Checks the server `name`'s configuration: INVALID_ARG naming the field.
    pub fn check(&self, name: &str) -> Result<()> {
        let field = |field: &str, problem: &str| {
            Error::invalid_arg(format!("agent config: mcp_servers.{name}.{field}: {problem}"))
        };
        if name.is_empty() {
            return Err(Error::invalid_arg("agent config: mcp_servers: a server's name is empty"));
        }
        if name.contains("__") {
            return Err(Error::invalid_arg(format!(
                "agent config: mcp_servers: the name {name:?} contains \"__\", which separates a server's name from its tools'"
            )));
        }
        match (&self.command, &self.url) {
            (Some(_), Some(_)) => return Err(field("url", "a server has a command or a url, not both")),
            (None, None) => return Err(field("command", "a server needs a command (stdio) or a url (HTTP)")),
            (Some(command), None) => {
                if command.is_empty() || command.contains('\0') {
                    return Err(field("command", "must be a program's name or path"));
                }
                for (key, what) in
                    [("headers", !self.headers.is_empty()), ("bearer_token_env", self.bearer_token_env.is_some())]
                {
                    if what {
                        return Err(field(key, "is for a server reached by url"));
                    }
                }
                if let Some(arg) = self.args.iter().find(|arg| arg.contains('\0')) {
                    return Err(field("args", &format!("{arg:?} contains a NUL character")));
                }
                if let Some(key) = self.env.iter().find_map(|(key, value)| {
                    (key.is_empty() || key.contains(['=', '\0']) || value.contains('\0')).then_some(key)
                }) {
                    return Err(field("env", &format!("{key:?} is not a variable name with a value")));
                }
                if self.cwd.as_ref().is_some_and(|cwd| cwd.is_empty() || cwd.contains('\0')) {
                    return Err(field("cwd", "must be a directory's path"));
                }
            }
            (None, Some(url)) => {
                let parsed = reqwest::Url::parse(url).map_err(|e| field("url", &format!("{e}")))?;
                if !matches!(parsed.scheme(), "http" | "https") || parsed.host().is_none() {
                    return Err(field("url", "must be an http or https URL"));
                }
                for (key, what) in
                    [("args", !self.args.is_empty()), ("env", !self.env.is_empty()), ("cwd", self.cwd.is_some())]
                {
                    if what {
                        return Err(field(key, "is for a server started by command"));
                    }
                }
                for (header, value) in &self.headers {
                    // The value is never quoted: it may be a secret.
                    if reqwest::header::HeaderName::try_from(header.as_str()).is_err() {
                        return Err(field("headers", &format!("{header:?} is not an HTTP header name")));
                    }
                    if reqwest::header::HeaderValue::try_from(value.as_str()).is_err() {
                        return Err(field("headers", &format!("the value of {header} is not an HTTP header value")));
                    }
                }
                if self.bearer_token_env.as_ref().is_some_and(|v| v.is_empty() || v.contains(['=', '\0'])) {
                    return Err(field("bearer_token_env", "must name an environment variable"));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;

    fn parse(json: &str) -> McpServerConfig {
        crate::json::parse_document("server", json).unwrap()
    }

    #[test]
    fn defaults_are_those_of_the_contract() {
        let config = parse(r#"{"command": "node"}"#);
        assert_eq!((config.startup_timeout_ms, config.tool_timeout_ms), (30_000, 300_000));
        assert!(config.prefix && !config.required);
        assert_eq!(config.needs_approval, NeedsApproval::All(false));
        assert!(config.offers("anything"));
        assert_eq!(config.transport(), Transport::Stdio);
    }

    #[test]
    fn selection_follows_the_builtins_rules() {
        let config = parse(r#"{"command": "x", "allowed_tools": ["a", "b"], "excluded_tools": ["b"]}"#);
        assert!(config.offers("a") && !config.offers("b") && !config.offers("c"));
        assert!(!parse(r#"{"command": "x", "allowed_tools": []}"#).offers("a"), "an empty list allows none");
        let approval = parse(r#"{"command": "x", "needs_approval": ["write"]}"#).needs_approval;
        assert!(approval.covers("write") && !approval.covers("read"));
        assert!(parse(r#"{"command": "x", "needs_approval": true}"#).needs_approval.covers("read"));
    }

    #[test]
    fn bad_servers_are_invalid_arg_naming_the_field() {
        for (name, json, named) in [
            ("s", r#"{"command": "x", "url": "http://127.0.0.1/mcp"}"#, "url"),
            ("s", r#"{}"#, "command"),
            ("", r#"{"command": "x"}"#, "name"),
            ("a__b", r#"{"command": "x"}"#, "__"),
            ("s", r#"{"command": ""}"#, "command"),
            ("s", r#"{"url": "ftp://host/x"}"#, "url"),
            ("s", r#"{"url": "not a url"}"#, "url"),
            ("s", r#"{"url": "http://h/mcp", "args": ["x"]}"#, "args"),
            ("s", r#"{"command": "x", "headers": {"A": "b"}}"#, "headers"),
            ("s", r#"{"url": "http://h/mcp", "headers": {"bad name": "b"}}"#, "headers"),
            ("s", r#"{"url": "http://h/mcp", "headers": {"X": "line\nbreak"}}"#, "headers"),
            ("s", r#"{"command": "x", "env": {"A=B": "c"}}"#, "env"),
        ] {
            let error = parse(json).check(name).unwrap_err();
            assert_eq!(error.code, ErrorCode::InvalidArg, "{json}");
            assert!(error.message.contains(named), "{json}: {}", error.message);
        }
        let secret = parse(r#"{"url": "http://h/mcp", "headers": {"X": "sec\nret"}}"#).check("s").unwrap_err();
        assert!(!secret.message.contains("sec"), "a header's value is never quoted: {}", secret.message);
        let unknown = crate::json::parse_document::<McpServerConfig>("server", r#"{"command": "x", "tiemout": 1}"#);
        assert!(unknown.unwrap_err().message.contains("tiemout"));
    }
}
