//! Platforms without a sandbox yet (macOS's would be Seatbelt): a mode other
//! than `off` fails closed, every bash call an error result saying so.

use std::io;
use std::path::Path;

use super::Sandbox;

/// Never made: preparing one is the error the model sees.
pub(crate) enum Confinement {}

impl Confinement {
    /// Always the error: this platform has no sandbox for bash.
    pub(crate) fn prepare(_: &Sandbox, _: &Path, _: &[&Path]) -> Result<Self, String> {
        Err(format!(
            "bash cannot run in the sandbox: ferrule has no sandbox for {} yet, and the agent's builtin_tools.sandbox asks for one (\"mode\": \"off\" runs commands unconfined). The command did not run.",
            std::env::consts::OS
        ))
    }

    /// Unreachable: no confinement is ever made.
    pub(crate) fn install(self, _: &mut tokio::process::Command) -> FailedStep {
        match self {}
    }
}

/// Unreachable: no confinement is ever made.
pub(crate) struct FailedStep;

impl FailedStep {
    /// Unreachable: no confinement is ever made.
    pub(crate) fn explain(self, error: &io::Error) -> String {
        format!("Could not start bash in the sandbox: {error}")
    }
}
