package ferrule

import "encoding/json"

// Result is a run's outcome. Messages is the whole transcript, replayable:
// Messages(res.Messages...) continues the conversation.
type Result struct {
	Status   Status    `json:"status"`
	Final    *Message  `json:"final"`
	Messages []Message `json:"messages"`
	Usage    Usage     `json:"usage"`
	Rounds   int       `json:"rounds"`
	// Error says why a failed run failed.
	Error *Error `json:"error"`
	// Output is the final answer as JSON when the agent has an OutputSchema and
	// the answer satisfied it; nil otherwise. See Output.
	Output json.RawMessage `json:"output"`
	// Interruptions are the calls an interrupted run waits on a decision for.
	Interruptions []Interruption `json:"interruptions"`
	// State is what an interrupted run needs to go on: store it as it is (it is
	// plain JSON, portable to another process) and give it to Resume. Nil
	// unless the run was interrupted.
	State json.RawMessage `json:"state"`
}

// UnmarshalJSON reads a run result; a null Output or State becomes nil.
func (r *Result) UnmarshalJSON(data []byte) error {
	type plain Result
	if err := json.Unmarshal(data, (*plain)(r)); err != nil {
		return err
	}
	for _, field := range []*json.RawMessage{&r.Output, &r.State} {
		if string(*field) == "null" {
			*field = nil
		}
	}
	return nil
}

// Interruption is a call that needs the host's decision before it can run.
type Interruption struct {
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// Decision is the host's answer for one interrupted call. A rejected call gets
// an error result whose text is Message (by default, that the user rejected
// it). Always makes the decision stand for every later call of the same tool in
// the run.
type Decision struct {
	Approve bool   `json:"approve"`
	Message string `json:"message,omitempty"`
	Always  bool   `json:"always,omitempty"`
}

// Output decodes a run's structured output (Config.OutputSchema) into T. An
// error when the run has none (it failed, or the agent has no schema) or when
// it does not fit T.
func Output[T any](res *Result) (T, error) {
	var out T
	if res == nil || len(res.Output) == 0 || string(res.Output) == "null" {
		return out, &Error{Code: CodeInvalidOutput, Message: "the run has no structured output"}
	}
	if err := json.Unmarshal(res.Output, &out); err != nil {
		return out, &Error{Code: CodeInvalidOutput, Message: "the output does not fit the Go type: " + err.Error()}
	}
	return out, nil
}

// Input is what a run starts from: Prompt, Messages, Execute or Resume.
type Input struct {
	json []byte
	err  error // why the input cannot be made; Start returns it
	// Tools, when not nil, limits the run to these tools (host and built-in):
	// only they are offered and callable. A name the agent lacks makes Start
	// fail with INVALID_ARG. Not for Resume (the state keeps the run's set).
	Tools []string
}

// withTools is input JSON with a "tools" field.
func withTools(input []byte, tools []string) ([]byte, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(input, &fields); err != nil {
		return nil, &Error{Code: CodeInvalidJSON, Message: "run input: " + err.Error()}
	}
	fields["tools"], _ = json.Marshal(tools)
	return json.Marshal(fields)
}

// Prompt starts a run from one user message.
func Prompt(text string) Input {
	data, _ := json.Marshal(struct {
		Prompt string `json:"prompt"`
	}{text})
	return Input{json: data}
}

// Messages starts a run from a transcript, such as an earlier run's messages
// followed by a new user message.
func Messages(msgs ...Message) Input {
	if msgs == nil {
		msgs = []Message{}
	}
	data, err := json.Marshal(struct {
		Messages []Message `json:"messages"`
	}{msgs})
	if err != nil {
		// Only a Part's Details-free fields are marshalled; this cannot fail.
		panic(err)
	}
	return Input{json: data}
}

// Execute starts an execute-only run: the calls of msg (an assistant message
// from the host's own model) are validated and executed once, as one batch,
// after the context messages, with no model request. The result's Messages are
// the context, msg and the tool results.
func Execute(msg Message, context ...Message) Input {
	if context == nil {
		context = []Message{}
	}
	msg.Role = "assistant"
	data, err := json.Marshal(struct {
		Messages []Message `json:"messages"`
		Execute  Message   `json:"execute"`
	}{context, msg})
	if err != nil {
		panic(err) // as in Messages: these types always marshal
	}
	return Input{json: data}
}

// Resume goes on with an interrupted run from its State, with a decision for
// every interrupted call, keyed by call id. The agent must have the tools the
// state names (an agent built from the same configuration and tools, in this
// process or another); Start refuses a state that does not fit, naming the call
// id, version or tool (ErrInvalidArg). Rounds, usage and MaxRounds count across
// resumes. The interrupted batch runs first, outside any turn.
func Resume(state json.RawMessage, decisions map[string]Decision) Input {
	if decisions == nil {
		decisions = map[string]Decision{}
	}
	if len(state) == 0 {
		state = json.RawMessage("null")
	}
	data, err := json.Marshal(struct {
		Resume    json.RawMessage     `json:"resume"`
		Decisions map[string]Decision `json:"decisions"`
	}{state, decisions})
	if err != nil {
		return Input{err: &Error{Code: CodeInvalidJSON, Message: "run input: resume: the state is not JSON: " + err.Error()}}
	}
	return Input{json: data}
}

// ToolResult is a tool's result with more than text: content for the model,
// and details for the host's UI that never reach the model.
type ToolResult struct {
	Content    []Part   `json:"content"`
	IsError    bool     `json:"is_error,omitempty"`
	Terminate  bool     `json:"terminate,omitempty"`
	Details    any      `json:"details,omitempty"`
	Display    string   `json:"display,omitempty"`
	Title      string   `json:"title,omitempty"`
	Summary    string   `json:"summary,omitempty"`
	AddedTools []string `json:"added_tools,omitempty"`
}

// Text joins the result's text parts.
func (r ToolResult) Text() string { return Message{Content: r.Content}.Text() }
