package ferrule

import "encoding/json"

// Event is one event of a run, in order. Switch on its concrete type; types
// added to ferrule later arrive as *UnknownEvent.
type Event interface {
	// EventType is the event's snake_case type name ("run_start").
	EventType() string
	// RunID is the id of the run it belongs to.
	RunID() string
}

type eventBase struct {
	Run string `json:"run_id"`
}

// RunID is the id of the event's run.
func (e eventBase) RunID() string { return e.Run }

// RunStartEvent opens every run.
type RunStartEvent struct{ eventBase }

// TurnStartEvent starts a round.
type TurnStartEvent struct {
	eventBase
	Turn int `json:"turn"`
}

// MessageDeltaEvent is a piece of streamed text or reasoning.
type MessageDeltaEvent struct {
	eventBase
	Turn     int    `json:"turn"`
	Text     string `json:"text,omitempty"`
	Thinking string `json:"thinking,omitempty"`
}

// ToolCallDeltaEvent is a piece of a streamed tool call.
type ToolCallDeltaEvent struct {
	eventBase
	Turn           int    `json:"turn"`
	Index          int    `json:"index"`
	ID             string `json:"id,omitempty"`
	Name           string `json:"name,omitempty"`
	ArgumentsDelta string `json:"arguments_delta"`
}

// MessageEndEvent carries a complete assistant message.
type MessageEndEvent struct {
	eventBase
	Turn    int     `json:"turn"`
	Message Message `json:"message"`
}

// ToolExecutionStartEvent says a call begins (invalid calls too).
type ToolExecutionStartEvent struct {
	eventBase
	Call ToolCall `json:"call"`
}

// ToolExecutionUpdateEvent is a provisional result; it never reaches the model.
type ToolExecutionUpdateEvent struct {
	eventBase
	CallID  string     `json:"call_id"`
	Name    string     `json:"name"`
	Partial ToolResult `json:"partial"`
}

// ToolExecutionEndEvent is a call's final result, as the transcript records it.
type ToolExecutionEndEvent struct {
	eventBase
	CallID  string     `json:"call_id"`
	Name    string     `json:"name"`
	Result  ToolResult `json:"result"`
	IsError bool       `json:"is_error"`
}

// RetryEvent says a failed model request is tried again after Delay.
type RetryEvent struct {
	eventBase
	Attempt int   `json:"attempt"`
	Error   Error `json:"error"`
	DelayMS int   `json:"delay_ms"`
}

// MessageInjectedEvent reports a message that entered the transcript from
// outside the model (Run.Inject, or a turn start hook's Inject).
type MessageInjectedEvent struct {
	eventBase
	Message Message `json:"message"`
}

// HistoryCompactedEvent reports a request that left out the oldest messages to
// stay within Config.History; the transcript keeps them.
type HistoryCompactedEvent struct {
	eventBase
	Turn    int `json:"turn"`
	Dropped int `json:"dropped"`
}

// TurnEndEvent ends a round.
type TurnEndEvent struct {
	eventBase
	Turn int `json:"turn"`
}

// RunEndEvent is always the last event of a run.
type RunEndEvent struct {
	eventBase
	Status Status  `json:"status"`
	Result *Result `json:"result"`
	Error  *Error  `json:"error,omitempty"`
}

// UnknownEvent is an event of a type this package does not know yet.
type UnknownEvent struct {
	eventBase
	Type string
	Raw  json.RawMessage
}

func (*RunStartEvent) EventType() string            { return "run_start" }
func (*TurnStartEvent) EventType() string           { return "turn_start" }
func (*MessageDeltaEvent) EventType() string        { return "message_delta" }
func (*ToolCallDeltaEvent) EventType() string       { return "tool_call_delta" }
func (*MessageEndEvent) EventType() string          { return "message_end" }
func (*ToolExecutionStartEvent) EventType() string  { return "tool_execution_start" }
func (*ToolExecutionUpdateEvent) EventType() string { return "tool_execution_update" }
func (*ToolExecutionEndEvent) EventType() string    { return "tool_execution_end" }
func (*RetryEvent) EventType() string               { return "retry" }
func (*MessageInjectedEvent) EventType() string     { return "message_injected" }
func (*HistoryCompactedEvent) EventType() string    { return "history_compacted" }
func (*TurnEndEvent) EventType() string             { return "turn_end" }
func (*RunEndEvent) EventType() string              { return "run_end" }
func (e *UnknownEvent) EventType() string           { return e.Type }

// decodeEvent reads one event's JSON.
func decodeEvent(data []byte) Event {
	var head struct {
		Type string `json:"type"`
		eventBase
	}
	_ = json.Unmarshal(data, &head)
	var event Event
	switch head.Type {
	case "run_start":
		event = &RunStartEvent{}
	case "turn_start":
		event = &TurnStartEvent{}
	case "message_delta":
		event = &MessageDeltaEvent{}
	case "tool_call_delta":
		event = &ToolCallDeltaEvent{}
	case "message_end":
		event = &MessageEndEvent{}
	case "tool_execution_start":
		event = &ToolExecutionStartEvent{}
	case "tool_execution_update":
		event = &ToolExecutionUpdateEvent{}
	case "tool_execution_end":
		event = &ToolExecutionEndEvent{}
	case "retry":
		event = &RetryEvent{}
	case "message_injected":
		event = &MessageInjectedEvent{}
	case "history_compacted":
		event = &HistoryCompactedEvent{}
	case "turn_end":
		event = &TurnEndEvent{}
	case "run_end":
		event = &RunEndEvent{}
	}
	if event == nil || json.Unmarshal(data, event) != nil {
		return &UnknownEvent{eventBase: head.eventBase, Type: head.Type, Raw: data}
	}
	return event
}
