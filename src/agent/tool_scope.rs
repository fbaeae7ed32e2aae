//! Which tools a run offers the model in a turn, and so which ones its calls may
//! name.

use std::collections::BTreeSet;

use super::built::AgentInner;
use crate::tool::Tool;

/// Which tools a call may name: the agent's, narrowed to the run's set (run input
/// `tools`) and then to the turn's (a `turn_start` hook's choice, which may name
/// deferred tools); without a turn's set, deferred tools only once disclosed.
#[derive(Clone, Copy)]
pub(crate) struct ToolScope<'a> {
    pub(crate) run: Option<&'a BTreeSet<String>>,
    pub(crate) turn: Option<&'a [String]>,
    pub(crate) disclosed: &'a BTreeSet<String>,
}

impl ToolScope<'_> {
    /// Whether the model is offered `tool` and may call it.
    pub(crate) fn offers(&self, tool: &Tool) -> bool {
        let name = tool.name();
        if self.run.is_some_and(|run| !run.contains(name)) {
            return false;
        }
        match self.turn {
            Some(turn) => turn.iter().any(|t| t == name),
            None => !tool.options().deferred || self.disclosed.contains(name),
        }
    }
}

impl<'s> ToolScope<'s> {
    /// The agent's tools the model is offered, with their places in the agent's
    /// list, in the order offered.
    pub(crate) fn offered<'t>(self, agent: &'t AgentInner) -> impl Iterator<Item = (usize, &'t Tool)> + 't
    where
        's: 't,
    {
        agent.tools.iter().enumerate().filter(move |(_, tool)| self.offers(tool))
    }
}
