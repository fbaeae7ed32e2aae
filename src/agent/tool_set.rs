//! A set of tools a turn may offer: the agent's own (built-in and host) and,
//! after them, those of its MCP servers as they stood when the turn began.

use std::collections::HashMap;
use std::sync::Arc;

use crate::provider::ToolDefinition;
use crate::tool::Tool;

/// Tools by name, with their definitions as providers describe them.
/// Immutable and shared: a run holds the set of its turn while newer ones
/// replace it for later turns.
pub(crate) struct ToolSet {
    tools: Vec<Arc<Tool>>,
    by_name: HashMap<String, usize>,
    /// The definitions, in the order of `tools`.
    definitions: Vec<ToolDefinition>,
}

impl ToolSet {
    /// The set of `tools`, in their order; their names are distinct.
    pub(crate) fn new(tools: Vec<Arc<Tool>>) -> ToolSet {
        let by_name = tools.iter().enumerate().map(|(i, t)| (t.name().to_owned(), i)).collect();
        let definitions = tools
            .iter()
            .map(|t| ToolDefinition {
                name: t.name().to_owned(),
                description: t.description().to_owned(),
                input_schema: t.schema().document().clone(),
                strict: t.options().strict,
            })
            .collect();
        ToolSet { tools, by_name, definitions }
    }

    /// The tool called `name`, with its place in the set.
    pub(crate) fn get(&self, name: &str) -> Option<(usize, &Tool)> {
        self.by_name.get(name).map(|&i| (i, &*self.tools[i]))
    }

    /// Whether the set has a tool called `name`.
    pub(crate) fn contains(&self, name: &str) -> bool {
        self.by_name.contains_key(name)
    }

    /// The tools, in their order.
    pub(crate) fn tools(&self) -> &[Arc<Tool>] {
        &self.tools
    }

    /// The definition of the tool at `index`.
    pub(crate) fn definition(&self, index: usize) -> &ToolDefinition {
        &self.definitions[index]
    }

    /// The names of the tools, in their order.
    pub(crate) fn names(&self) -> impl Iterator<Item = &str> {
        self.tools.iter().map(|t| t.name())
    }
}
