//! An agent's configuration, read and built.

use crate::agent::{AgentBuilder, AgentConfig};
use crate::error::ErrorCode;

/// Input: configuration JSON. Holds: it is read, or refused as not JSON or
/// not a configuration, with a message, the same way each time; a
/// configuration that reads builds an agent or is refused as such (never a
/// panic or an internal error). Configurations that would reach outside the
/// process when built (MCP servers, an OTLP exporter, a recording's file) are
/// only read.
pub fn agent_config(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let config = match AgentConfig::from_json(text) {
        Ok(config) => config,
        Err(error) => {
            let again = AgentConfig::from_json(text).err();
            assert_eq!(again.as_ref(), Some(&error), "the same text read twice differs");
            assert!(matches!(error.code, ErrorCode::InvalidJson | ErrorCode::InvalidArg), "{error:?}");
            assert!(!error.message.is_empty(), "a refusal without a reason");
            return;
        }
    };
    if !config.mcp_servers.is_empty() || config.trace.otlp.is_some() || config.model.record.is_some() {
        return;
    }
    if let Err(error) = AgentBuilder::new(config).and_then(AgentBuilder::build) {
        assert!(
            matches!(
                error.code,
                ErrorCode::InvalidArg | ErrorCode::InvalidSchema | ErrorCode::ProviderAuth | ErrorCode::DuplicateTool
            ),
            "{error:?}"
        );
        assert!(!error.message.is_empty(), "a refusal without a reason");
    }
}
