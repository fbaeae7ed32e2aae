//! Platforms without a sandbox yet (macOS's would be Seatbelt): a mode other
//! than `off` fails closed, every bash call an error result saying so.

use std::io;
use std::path::Path;

use super::{Root, Sandbox};

/// Never made: preparing one is the error the model sees.
pub(crate) enum Confinement {}

impl Confinement {
    /// Always the error: this platform has no sandbox for bash.
    pub(crate) fn prepare(_: &Sandbox, _: &Root, _: &[&Path]) -> Result<Self, String> {
        Err(format!(
            "bash cannot run in the sandbox: ferrule has no sandbox for {} yet, and the agent's builtin_tools.sandbox asks for one (\"mode\": \"off\" runs commands unconfined). The command did not run.",
            std::env::consts::OS
        ))
    }

    /// Unreachable: no confinement is ever made.
    pub(crate) fn install(self, _: &mut tokio::process::Command) -> Confined {
        match self {}
    }
}

/// Never made: no confinement is.
pub(crate) enum Confined {}

impl Confined {
    /// Unreachable: no confinement is ever made.
    pub(crate) fn explain(&self, _: &io::Error) -> String {
        match *self {}
    }

    /// Unreachable: no confinement is ever made.
    pub(crate) async fn release(self) {
        match self {}
    }
}
