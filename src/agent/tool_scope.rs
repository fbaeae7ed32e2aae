//! Which tools a run offers the model in a turn, and so which ones its calls may
//! name.

use std::collections::BTreeSet;

use super::tool_set::ToolSet;
use crate::tool::Tool;

/// Which tools a call may name: the turn's tool set, narrowed to the run's set
/// (run input `tools`) and then to the turn's (a `turn_start` hook's choice,
/// which may name deferred tools); without a turn's set, deferred tools only
/// once disclosed.
#[derive(Clone, Copy)]
pub(crate) struct ToolScope<'a> {
    pub(crate) tools: &'a ToolSet,
    pub(crate) run: Option<&'a BTreeSet<String>>,
    pub(crate) turn: Option<&'a [String]>,
    pub(crate) disclosed: &'a BTreeSet<String>,
}

impl<'a> ToolScope<'a> {
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

    /// The tool called `name`, when the model is offered it.
    pub(crate) fn offered_tool(self, name: &str) -> Option<&'a Tool> {
        self.tools.get(name).map(|(_, tool)| tool).filter(|tool| self.offers(tool))
    }

    /// The tools the model is offered, with their places in the set, in the
    /// order offered.
    pub(crate) fn offered(self) -> impl Iterator<Item = (usize, &'a Tool)> + 'a {
        self.tools.tools().iter().enumerate().map(|(i, tool)| (i, &**tool)).filter(move |(_, tool)| self.offers(tool))
    }
}
