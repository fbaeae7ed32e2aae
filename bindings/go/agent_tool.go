package ferrule

/*
#include <stdlib.h>
#include "ferrule.h"
*/
import "C"

import (
	"encoding/json"
	"fmt"
	"unsafe"
)

// AgentTool offers agent to the model as the tool name. A call runs the agent
// nested in the calling run, with the call's "input" argument as its prompt,
// and its answer is the call's result. Its events arrive inside the call as
// *AgentEventEvent, its tokens count once in the call's and the run's Usage,
// cancelling the run (or the call's Timeout) cancels it at once, and an
// approval it waits for interrupts the calling run: the Interruption's Path
// and Key lead to it, and Resume with decisions by Key goes on inside it.
// Timeout and NeedsApproval apply; other options are refused by NewAgent.
// The agent may be closed once the calling agent is built.
func AgentTool(name, description string, agent *Agent, opts ...ToolOption) Tool {
	return agentTool(name, description, agent, "tool", opts)
}

// Handoff offers agent to the model as the tool "transfer_to_"+name. When the
// model calls it, the run goes on with that agent's system prompt, tools and
// model (a *HandoffEvent marks it, and Result.Agent names the agent that
// answered). The transcript goes along whole, or without tool calls and their
// results with WithoutToolCalls. NeedsApproval applies too.
func Handoff(name, description string, agent *Agent, opts ...ToolOption) Tool {
	return agentTool(name, description, agent, "handoff", opts)
}

// WithoutToolCalls makes a Handoff carry the transcript without tool calls,
// their results and the reasoning of the responses that made them.
func WithoutToolCalls() ToolOption {
	return func(o *toolOptions) { o.handoffMessages = "without_tool_calls" }
}

func agentTool(name, description string, agent *Agent, mode string, opts []ToolOption) Tool {
	tool := Tool{name: name, description: description, agent: agent, mode: mode}
	for _, opt := range opts {
		opt(&tool.options)
	}
	return tool
}

// agentOptions is the options JSON of an agent added to a builder.
type agentOptions struct {
	TimeoutMS       int64  `json:"timeout_ms,omitempty"`
	NeedsApproval   bool   `json:"needs_approval,omitempty"`
	HandoffMessages string `json:"handoff_messages,omitempty"`
}

// registerAgent adds the tool's agent to a builder, which takes a handle of
// its own.
func (t Tool) registerAgent(builder *C.ferrule_agent_builder) error {
	o := t.options
	if o.Execution != "" || o.Deferred || o.Strict || o.OnError != "" || o.nonStrict {
		return &Error{Code: CodeInvalidArg, Message: fmt.Sprintf(
			"agent %q: an agent takes only Timeout and NeedsApproval (and a Handoff WithoutToolCalls)", t.name)}
	}
	if t.mode == "handoff" && o.timeoutGiven {
		return &Error{Code: CodeInvalidArg, Message: fmt.Sprintf(
			"agent %q: a Handoff answers at once, so it takes no Timeout", t.name)}
	}
	if t.agent == nil {
		return &Error{Code: CodeNullArg, Message: fmt.Sprintf("agent %q: the agent is nil", t.name)}
	}
	optionsJSON, err := json.Marshal(agentOptions{o.TimeoutMS, o.Approval, o.handoffMessages})
	if err != nil {
		return err
	}
	t.agent.mu.RLock()
	defer t.agent.mu.RUnlock()
	if t.agent.handle == nil {
		return errClosed(fmt.Sprintf("the agent %q", t.name))
	}
	name, nameLen, freeName := cBytes([]byte(t.name))
	defer freeName()
	description, descriptionLen, freeDescription := cBytes([]byte(t.description))
	defer freeDescription()
	mode, modeLen, freeMode := cBytes([]byte(t.mode))
	defer freeMode()
	opts, optsLen, freeOpts := cBytes(optionsJSON)
	defer freeOpts()
	spec := (*C.ferrule_agent_tool_spec)(C.calloc(1, C.sizeof_ferrule_agent_tool_spec))
	defer C.free(unsafe.Pointer(spec))
	*spec = C.ferrule_agent_tool_spec{
		struct_size: C.sizeof_ferrule_agent_tool_spec,
		name:        name, name_len: nameLen,
		description: description, description_len: descriptionLen,
		agent: t.agent.handle,
		mode:  mode, mode_len: modeLen,
		options: opts, options_len: optsLen,
	}
	return takeError(C.ferrule_agent_builder_add_agent(builder, spec))
}
