package ferrule

import "encoding/json"

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

// Input is what a run starts from: Prompt, Messages, Execute, Resume,
// ResumeWithResults or Invoke.
type Input struct {
	json []byte
	err  error // why the input cannot be made; Start returns it
	// Tools, when not nil, limits the run to these tools (host and built-in):
	// only they are offered and callable. A name the agent lacks makes Start
	// fail with INVALID_ARG. Not for Resume (the state keeps the run's set).
	Tools []string
	// WithoutMessages leaves the transcript out of the result: Messages is
	// empty, and the transcript is neither written nor read, which is most of
	// what a run of many calls costs at its end. Final, Output, Usage and an
	// interrupted run's State are as always. Start refuses it (INVALID_ARG)
	// for Execute and for the Resume of an execute-only run, whose results
	// are their Messages.
	WithoutMessages bool
	// ReturnCalls makes the run stop, StatusInterrupted, where it would start
	// the calls of a batch that passed validation, hooks and approval, and
	// return them in Result.Calls instead (at most as many as would run at
	// once; one for a sequential batch), for the host to run: each with an
	// Invoke run, or code of its own. ResumeWithResults goes on. Calls of
	// agents and handoffs still run inside the run. Not for Execute or
	// Invoke.
	ReturnCalls bool
}

// withField is input JSON (an object this package wrote, without key) with
// the field key set to the JSON value; input that is no object (the zero
// Input has none) is left for ferrule to refuse.
func withField(input []byte, key string, value []byte) []byte {
	if len(input) < 2 || input[0] != '{' || input[len(input)-1] != '}' {
		return input
	}
	with := make([]byte, 0, len(input)+len(key)+len(value)+4)
	with = append(with, input[:len(input)-1]...) // all but the closing brace
	if len(input) > 2 {
		with = append(with, ',')
	}
	with = appendJSONString(with, key)
	with = append(with, ':')
	with = append(with, value...)
	return append(with, '}')
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

// ResumeWithResults goes on with a run that returned calls (Input.ReturnCalls),
// from its state (Result.State), with how each returned call ended, by call
// id: an Invoke run's Result.Outcome, or ResultOutcome or FailedOutcome for a
// call the host ran with code of its own. Every returned call needs one.
func ResumeWithResults(state json.RawMessage, results map[string]json.RawMessage) Input {
	if results == nil {
		results = map[string]json.RawMessage{}
	}
	if len(state) == 0 {
		state = json.RawMessage("null")
	}
	data, err := json.Marshal(struct {
		Resume  json.RawMessage            `json:"resume"`
		Results map[string]json.RawMessage `json:"results"`
	}{state, results})
	if err != nil {
		return Input{err: &Error{Code: CodeInvalidJSON, Message: "run input: resume: the state or a result is not JSON: " + err.Error()}}
	}
	return Input{json: data}
}

// Invoke runs one call a run returned (Result.Calls) by its tool alone: the
// arguments are checked against the tool's schema, no hook or approval is
// asked (the returning run asked them), and the function runs bounded by the
// tool's timeout, with its updates as events; cancelling the run cancels the
// call. attempt is which time the host runs the call (1 the first time; 0
// means 1), which the tool reads with Call.Attempt to do its work once.
// handedTo are the handoffs the returning run had made (its state's
// "handed_to"), which lead to the agent whose tool the call is. The result's
// Outcome is what ResumeWithResults takes for the call.
func Invoke(call ToolCall, attempt int, handedTo ...string) Input {
	if attempt == 0 {
		attempt = 1
	}
	data, err := json.Marshal(struct {
		Invoke   ToolCall `json:"invoke"`
		Attempt  int      `json:"attempt"`
		HandedTo []string `json:"handed_to,omitempty"`
	}{call, attempt, handedTo})
	if err != nil {
		panic(err) // a ToolCall always marshals
	}
	return Input{json: data}
}

// ResultOutcome is the outcome of a call the host ran that produced result
// (which may be an error result the model sees), for ResumeWithResults.
func ResultOutcome(result ToolResult) json.RawMessage {
	data, err := json.Marshal(struct {
		Result ToolResult `json:"result"`
	}{result})
	if err != nil {
		panic(err) // a ToolResult always marshals
	}
	return data
}

// FailedOutcome is the outcome of a call whose tool failed, why written for
// the model, for ResumeWithResults: the tool's FailureIsFatal decides what it
// means for the run.
func FailedOutcome(why string) json.RawMessage {
	data, err := json.Marshal(struct {
		Failed string `json:"failed"`
	}{why})
	if err != nil {
		panic(err) // a string always marshals
	}
	return data
}

// Text joins the result's text parts.
func (r ToolResult) Text() string { return Message{Content: r.Content}.Text() }
