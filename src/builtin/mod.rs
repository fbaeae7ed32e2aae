//! The built-in tools: read, bash, edit, write (the default set, in that order),
//! apply_patch and list_files (when `allowed` names them).
//!
//! The file tools run with the host process's permissions; `confine: true`
//! keeps their paths inside the working directory. Bash runs in the sandbox
//! `sandbox` describes (sandbox/), on by default when `confine` is.

pub(crate) mod apply_patch;
mod bash;
mod changes;
pub(crate) mod edit;
mod list_files;
pub(crate) mod matching;
mod read;
mod read_image;
mod sandbox;
pub(crate) mod workspace;
mod write;

use std::collections::HashSet;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use crate::error::{Error, Result};
use crate::tool::{Execution, Invocation, Tool, ToolOptions, ToolOutcome, ToolResult};
use sandbox::Sandbox;
pub use sandbox::{SandboxConfig, SandboxMode};
use workspace::Workspace;

/// The `builtin_tools` configuration. Unknown fields are rejected.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BuiltinToolsConfig {
    /// Where relative paths resolve and commands run; captured when the agent is
    /// built. Empty or absent: the process directory.
    #[serde(default)]
    pub working_directory: Option<String>,
    /// The tools to offer, built-in and host alike; absent selects every candidate,
    /// an empty list none.
    #[serde(default)]
    pub allowed: Option<Vec<String>>,
    /// Tools to leave out; applied last, always wins.
    #[serde(default)]
    pub excluded: Vec<String>,
    /// Remove the built-ins, keep the host tools.
    #[serde(default)]
    pub disable: bool,
    /// Refuse paths outside the working directory (symlinks followed).
    #[serde(default)]
    pub confine: bool,
    /// The bash timeout in seconds when a call gives none (default: none).
    #[serde(default)]
    pub bash_timeout_s: Option<u64>,
    /// Key variables bash commands may see after all: `OPENAI_API_KEY`,
    /// `ANTHROPIC_API_KEY` and the model's `api_key_env` are removed from their
    /// environment unless named here.
    #[serde(default)]
    pub bash_pass_env: Vec<String>,
    /// Built-ins whose calls run only once the host approved them (as the tool
    /// option `needs_approval`).
    #[serde(default)]
    pub needs_approval: Vec<String>,
    /// The sandbox bash commands run in. Absent: `workspace_write` without
    /// network when `confine` is on, none otherwise.
    #[serde(default)]
    pub sandbox: Option<SandboxConfig>,
}

/// Every built-in, in the order they are offered.
const BUILTINS: [&str; 6] = ["read", "bash", "edit", "write", "apply_patch", "list_files"];
/// The built-ins offered unless `allowed` says otherwise.
const DEFAULTS: [&str; 4] = ["read", "bash", "edit", "write"];

/// Applies the selection rules to the built-ins and the host's tools;
/// `model_key_variable` is the variable the model's key comes from, hidden from bash.
pub(crate) fn select(
    config: &BuiltinToolsConfig,
    host: Vec<Tool>,
    model_key_variable: Option<&str>,
) -> Result<Vec<Tool>> {
    for name in config.allowed.iter().flatten().chain(&config.excluded) {
        if !BUILTINS.contains(&name.as_str()) && !host.iter().any(|t| t.name() == name) {
            return Err(Error::invalid_arg(format!(
                "builtin_tools: no tool is called \"{name}\" (built-ins: {})",
                BUILTINS.join(", ")
            )));
        }
    }
    if let Some(name) = config.needs_approval.iter().find(|name| !BUILTINS.contains(&name.as_str())) {
        return Err(Error::invalid_arg(format!(
            "builtin_tools: needs_approval names \"{name}\", which is not a built-in (built-ins: {}); a host tool sets the option itself",
            BUILTINS.join(", ")
        )));
    }
    let allowed: Option<HashSet<&str>> = config.allowed.as_ref().map(|l| l.iter().map(String::as_str).collect());
    let excluded: HashSet<&str> = config.excluded.iter().map(String::as_str).collect();
    let wanted = |name: &str, by_default: bool| {
        !excluded.contains(name) && allowed.as_ref().map_or(by_default, |a| a.contains(name))
    };
    let workspace = Arc::new(Workspace::new(config.working_directory.as_deref(), config.confine)?);
    let sandbox = Sandbox::from_config(config.sandbox.as_ref(), config.confine, workspace.root())?;
    let mut tools = Vec::new();
    if !config.disable {
        for name in BUILTINS {
            if wanted(name, DEFAULTS.contains(&name)) {
                tools.push(builtin(name, &workspace, config, &sandbox, model_key_variable)?);
            }
        }
    }
    tools.extend(host.into_iter().filter(|tool| wanted(tool.name(), true)));
    Ok(tools)
}

fn builtin(
    name: &str,
    workspace: &Arc<Workspace>,
    config: &BuiltinToolsConfig,
    sandbox: &Option<Sandbox>,
    model_key_variable: Option<&str>,
) -> Result<Tool> {
    let needs_approval = config.needs_approval.iter().any(|n| n == name);
    let parallel = ToolOptions { needs_approval, ..ToolOptions::default() };
    let sequential = ToolOptions { execution: Execution::Sequential, ..parallel.clone() };
    match name {
        "read" => blocking(name, read::DESCRIPTION, read::schema(), parallel, workspace, read::run),
        "write" => blocking(name, write::DESCRIPTION, write::schema(), sequential, workspace, write::run),
        "edit" => blocking(name, edit::DESCRIPTION, edit::schema(), sequential, workspace, edit::run),
        "apply_patch" => {
            blocking(name, apply_patch::DESCRIPTION, apply_patch::schema(), sequential, workspace, apply_patch::run)
        }
        "list_files" => {
            blocking(name, list_files::DESCRIPTION, list_files::schema(), parallel, workspace, list_files::run)
        }
        "bash" => bash::tool(
            workspace.clone(),
            bash::BashSettings::new(config.bash_timeout_s, model_key_variable, &config.bash_pass_env, sandbox.clone()),
            parallel,
        ),
        other => unreachable!("unknown built-in {other}"),
    }
}

/// A built-in whose work is synchronous file I/O, run on the blocking pool. The
/// function's error text is what the model sees.
fn blocking(
    name: &str,
    description: &str,
    schema: Value,
    options: ToolOptions,
    workspace: &Arc<Workspace>,
    run: fn(&Workspace, &Value, &Stop) -> Result<ToolResult, String>,
) -> Result<Tool> {
    let workspace = workspace.clone();
    Tool::new(name, description, schema, options, move |call: Invocation| {
        let workspace = workspace.clone();
        let arguments = call.arguments().clone();
        let stop = Stop(call.cancellation().clone());
        async move {
            // A call dropped without being cancelled (its run went away) stops too.
            let _stop_when_dropped = stop.0.clone().drop_guard();
            match tokio::task::spawn_blocking(move || run(&workspace, &arguments, &stop)).await {
                Ok(Ok(result)) => ToolOutcome::Completed(result),
                Ok(Err(message)) => ToolOutcome::Failed(message),
                Err(_) => ToolOutcome::Failed("The tool failed unexpectedly.".to_owned()),
            }
        }
    })
}

/// Tells a blocking built-in that its call timed out or was cancelled, so that
/// it makes no further change; the work itself goes on off the run.
pub(crate) struct Stop(CancellationToken);

impl Stop {
    /// `Err` once the call is over; checked before every step that changes a file
    /// and inside long searches.
    pub(crate) fn check(&self) -> Result<(), String> {
        match self.stopped() {
            true => Err("The call was cancelled or timed out, so nothing was changed.".to_owned()),
            false => Ok(()),
        }
    }

    /// Whether the call is over.
    pub(crate) fn stopped(&self) -> bool {
        self.0.is_cancelled()
    }
}

#[cfg(any(test, feature = "fuzzing"))]
impl Stop {
    /// A stop for a call nothing cancels.
    pub(crate) fn never() -> Self {
        Stop(CancellationToken::new())
    }
}

/// An object schema with `properties`, those named in `required` required, and no others allowed.
fn object_schema(properties: Value, required: &[&str]) -> Value {
    json!({"type": "object", "properties": properties, "required": required, "additionalProperties": false})
}

/// A character as the loose matches of edit and apply_patch compare it: curly
/// quotes straight, dashes and minus signs as `-`, tabs and odd spaces as a space.
fn fold_typography(c: char) -> char {
    match c {
        '\u{2018}' | '\u{2019}' | '\u{201A}' | '\u{201B}' | '\u{2032}' => '\'',
        '\u{201C}' | '\u{201D}' | '\u{201E}' | '\u{201F}' | '\u{2033}' => '"',
        '\u{2010}'..='\u{2015}' | '\u{2212}' => '-',
        '\u{00A0}' | '\u{2000}'..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}' | '\t' => ' ',
        c => c,
    }
}

/// Reads an optional positive integer argument.
fn positive(arguments: &Value, name: &str) -> Result<Option<usize>, String> {
    match arguments.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(value) => match value.as_u64() {
            Some(n) if n >= 1 => Ok(Some(n as usize)),
            _ => Err(format!("{name} must be a whole number of at least 1.")),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bash tool's description, for the builtin_tools configuration `config`.
    fn bash_description(config: Value) -> String {
        let config: BuiltinToolsConfig = serde_json::from_value(config).unwrap();
        let tools = select(&config, Vec::new(), None).unwrap();
        tools.iter().find(|tool| tool.name() == "bash").unwrap().description().to_owned()
    }

    #[test]
    fn the_bash_description_tells_the_model_the_sandbox_rules() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap().display().to_string();
        let with = |sandbox: Value| bash_description(json!({"working_directory": dir.path(), "sandbox": sandbox}));
        let confined = with(json!({"mode": "workspace_write"}));
        assert!(confined.starts_with(bash::DESCRIPTION), "{confined}");
        assert!(confined.contains(&format!("write only in {root} and $TMPDIR")), "{confined}");
        assert!(confined.contains("There is no network"), "{confined}");
        let read_only = with(json!({"mode": "read_only", "network": true}));
        assert!(read_only.contains("write only in $TMPDIR") && read_only.contains("Network access is allowed"));
        assert_eq!(with(json!({"mode": "off"})), bash::DESCRIPTION);
        assert_eq!(bash_description(json!({"working_directory": dir.path()})), bash::DESCRIPTION);
        assert_ne!(bash_description(json!({"working_directory": dir.path(), "confine": true})), bash::DESCRIPTION);
    }
}
