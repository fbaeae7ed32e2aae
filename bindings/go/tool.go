package ferrule

/*
#include <stdlib.h>
#include "ferrule.h"
#include "shims.h"
*/
import "C"

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/cgo"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
)

// Tool is a Go function the model can call, made by NewTool or NewRawTool.
type Tool struct {
	name, description string
	schema            json.RawMessage
	options           toolOptions
	fn                func(ctx context.Context, call *Call, args json.RawMessage) (any, error)
	// err is a mistake found when the tool was made, reported by NewAgent.
	err error
	// agent is the agent of an AgentTool or a Handoff (mode "tool" or
	// "handoff"), which has no fn.
	agent *Agent
	mode  string
}

// ToolOption changes how a tool runs.
type ToolOption func(*toolOptions)

type toolOptions struct {
	Execution   string `json:"execution,omitempty"`
	TimeoutMS   int64  `json:"timeout_ms,omitempty"`
	Deferred    bool   `json:"deferred,omitempty"`
	Approval    bool   `json:"needs_approval,omitempty"`
	Strict      bool   `json:"strict,omitempty"`
	Nonblocking bool   `json:"nonblocking"`
	OnError     string `json:"on_error,omitempty"`
	// nonStrict lets arguments carry properties the schema does not name.
	nonStrict bool
	// handoffMessages is what a Handoff carries ("without_tool_calls").
	handoffMessages string
	// timeoutGiven tells Timeout(0) from no Timeout, which a Handoff refuses.
	timeoutGiven bool
	// inline runs the function inside ferrule's callback (Inline).
	inline bool
}

// Sequential makes any batch holding a call of the tool run one call at a time.
func Sequential() ToolOption { return func(o *toolOptions) { o.Execution = "sequential" } }

// Timeout bounds one call; its context is cancelled when the time is up.
func Timeout(d time.Duration) ToolOption {
	return func(o *toolOptions) { o.TimeoutMS, o.timeoutGiven = millis(d), true }
}

// Deferred withholds the tool from the model until another tool's result names
// it in AddedTools.
func Deferred() ToolOption { return func(o *toolOptions) { o.Deferred = true } }

// NeedsApproval makes every call of the tool wait for the host's decision: a
// batch with such a call runs nothing, and the run ends StatusInterrupted with
// the call in Result.Interruptions. Resume the run with Resume.
func NeedsApproval() ToolOption { return func(o *toolOptions) { o.Approval = true } }

// NonStrict lets arguments carry properties the schema does not name (NewTool
// then ignores them when decoding).
func NonStrict() ToolOption { return func(o *toolOptions) { o.nonStrict = true } }

// Strict asks the provider to guarantee arguments that match the schema (which
// must then list every property as required).
func Strict() ToolOption { return func(o *toolOptions) { o.Strict = true } }

// Inline runs the tool's function inside ferrule's callback, on ferrule's
// runtime thread, instead of on a goroutine: a call then costs no hand-off
// between threads, which for a function that returns within microseconds is
// most of what the call costs. Only for functions that never block (no I/O, no
// locks held for long, no waiting on channels): while one runs, its run and
// every run sharing that thread wait. Call.Update does not wait there: with the
// run's event queue full it returns an error of code WOULD_DEADLOCK. Its ctx is
// never cancelled (nothing can stop the run meanwhile), and it must not call
// runtime.Goexit (t.FailNow, for one).
func Inline() ToolOption { return func(o *toolOptions) { o.inline = true } }

// FailureIsFatal makes an error of the tool end the run (status failed, code
// TOOL_FAILED) instead of going back to the model.
func FailureIsFatal() ToolOption { return func(o *toolOptions) { o.OnError = "fatal" } }

// NewTool makes a tool of fn. Its input schema is reflected from Args (a struct:
// json tags name the properties; a field with omitempty or of pointer type is
// optional, every other one required; no other properties are allowed unless
// NonStrict; descriptions come from jsonschema tags). The arguments are decoded
// into Args before fn runs. fn's result becomes the tool result: a string is
// text, a ToolResult is used as it is, anything else is sent as JSON text. An
// error becomes an error result the model sees, and so does a panic.
func NewTool[Args, Res any](name, description string,
	fn func(ctx context.Context, call *Call, args Args) (Res, error), opts ...ToolOption) Tool {
	tool := Tool{name: name, description: description}
	for _, opt := range opts {
		opt(&tool.options)
	}
	tool.schema, tool.err = schemaFor[Args](!tool.options.nonStrict)
	nonStrict := tool.options.nonStrict
	tool.fn = func(ctx context.Context, call *Call, raw json.RawMessage) (any, error) {
		var args Args
		decoder := json.NewDecoder(bytes.NewReader(raw))
		if !nonStrict {
			decoder.DisallowUnknownFields()
		}
		if err := decoder.Decode(&args); err != nil {
			return nil, fmt.Errorf("the arguments do not fit the tool: %w", err)
		}
		return fn(ctx, call, args)
	}
	return tool
}

// NewRawTool makes a tool with a JSON schema of its own (Draft 2020-12; empty
// means any object); fn gets the arguments as the model wrote them. Results as
// for NewTool.
func NewRawTool(name, description string, schema json.RawMessage,
	fn func(ctx context.Context, call *Call, args json.RawMessage) (any, error), opts ...ToolOption) Tool {
	tool := Tool{name: name, description: description, schema: schema, fn: fn}
	for _, opt := range opts {
		opt(&tool.options)
	}
	return tool
}

// Name is the tool's name (a Handoff's is "transfer_to_" and its name).
func (t Tool) Name() string {
	if t.mode == "handoff" {
		return "transfer_to_" + t.name
	}
	return t.name
}

// register adds the tool to a builder. Every Go tool is nonblocking: its
// callback hands the call to a goroutine and returns, or runs an Inline tool's
// function and completes the call before it returns.
func (t Tool) register(builder *C.ferrule_agent_builder) error {
	if t.mode != "" {
		return t.registerAgent(builder)
	}
	if t.err != nil {
		return &Error{Code: CodeInvalidSchema, Message: fmt.Sprintf("tool %q: %v", t.name, t.err)}
	}
	options := t.options
	options.Nonblocking = true
	optionsJSON, err := json.Marshal(options)
	if err != nil {
		return err
	}
	name, nameLen, freeName := cBytes([]byte(t.name))
	defer freeName()
	description, descriptionLen, freeDescription := cBytes([]byte(t.description))
	defer freeDescription()
	schema, schemaLen, freeSchema := cBytes(t.schema)
	defer freeSchema()
	opts, optsLen, freeOpts := cBytes(optionsJSON)
	defer freeOpts()
	handle := cgo.NewHandle(&registeredTool{fn: t.fn, inline: options.inline})
	spec := (*C.ferrule_tool_spec)(C.calloc(1, C.sizeof_ferrule_tool_spec))
	defer C.free(unsafe.Pointer(spec))
	*spec = C.ferrule_tool_spec{
		struct_size: C.sizeof_ferrule_tool_spec,
		name:        name, name_len: nameLen,
		description: description, description_len: descriptionLen,
		input_schema: schema, input_schema_len: schemaLen,
		options: opts, options_len: optsLen,
		execute:        C.ferrule_tool_fn(C.ferrule_go_tool),
		user_data:      handleData(handle),
		free_user_data: C.ferrule_free_fn(C.ferrule_go_free),
	}
	if err := takeError(C.ferrule_agent_builder_add_tool(builder, spec)); err != nil {
		handle.Delete() // not taken: still ours
		return err
	}
	return nil
}

// registeredTool is a tool as ferrule holds it (behind a cgo handle).
type registeredTool struct {
	fn     func(ctx context.Context, call *Call, args json.RawMessage) (any, error)
	inline bool
}

// invoke runs on ferrule's runtime and must return at once: it runs an inline
// tool's function, or registers the cancel handler and hands the call to a
// goroutine.
func (t *registeredTool) invoke(handle *C.ferrule_tool_call) {
	var id, name, arguments C.ferrule_str
	C.ferrule_tool_call_strings(handle, &id, &name, &arguments)
	call := &Call{handle: handle, id: goStr(id), name: goStr(name), arguments: json.RawMessage(goBytes(arguments))}
	if t.inline {
		call.run(context.Background(), func() {}, t.fn)
		return
	}
	ctx, cancel, forget := cancelledWith(func(onCancel C.ferrule_cancel_fn, key unsafe.Pointer) *C.ferrule_error {
		return C.ferrule_tool_call_on_cancel(handle, onCancel, key, nil)
	})
	dispatch(func() {
		defer forget()
		call.run(ctx, cancel, t.fn)
	})
}

// cancelledWith is a context cancelled when ferrule stops waiting for a
// request (a tool call, a model request): onCancel registers ferrule's cancel
// handler with the request. forget lets the handler go once the request is
// answered. The handler gets a key into liveCalls, not a cgo handle: with no
// free_user_data, ferrule has nothing to hand to a thread when the request
// ends, and a handler that comes late finds nothing to cancel.
func cancelledWith(onCancel func(C.ferrule_cancel_fn, unsafe.Pointer) *C.ferrule_error) (
	ctx context.Context, cancel context.CancelFunc, forget func()) {
	ctx, cancel = context.WithCancel(context.Background())
	key := nextCallKey.Add(1)
	liveCalls.Store(key, cancel)
	if takeError(onCancel(C.ferrule_cancel_fn(C.ferrule_go_cancel), handleData(cgo.Handle(key)))) != nil {
		// The request is over already: nothing waits for its answer.
		liveCalls.Delete(key)
		cancel()
	}
	return ctx, cancel, func() { liveCalls.Delete(key) }
}

// liveCalls are the cancel functions of calls still running, by key.
var (
	liveCalls   sync.Map
	nextCallKey atomic.Uintptr
)

// cancelCall cancels a live call's context; a call already over is left alone.
func cancelCall(key uintptr) {
	if cancel, ok := liveCalls.Load(key); ok {
		cancel.(context.CancelFunc)()
	}
}

// Call is one call of a tool, given to its function.
type Call struct {
	id, name  string
	arguments json.RawMessage
	// mu orders updates before the completion, after which handle is gone.
	mu     sync.RWMutex
	handle *C.ferrule_tool_call
}

// ID is the call id the model gave.
func (c *Call) ID() string { return c.id }

// Name is the tool's name.
func (c *Call) Name() string { return c.name }

// Arguments are the arguments as the model wrote them.
func (c *Call) Arguments() json.RawMessage { return c.arguments }

// Attempt is which time the call runs: 1, unless the host runs a call a run
// returned again and says so (Invoke with an attempt), as a durable workflow
// does after a crash. A tool that must not do its work twice keys it by the
// call id and looks for an earlier attempt's. 0 once the call is over.
func (c *Call) Attempt() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.handle == nil {
		return 0
	}
	return int(C.ferrule_tool_call_attempt(c.handle))
}

// Traceparent is the W3C traceparent of the call's execute_tool span, for the
// tool's own spans to go under it (see the otel package's ContextOf); empty
// when the run records no spans, or once the call is over.
func (c *Call) Traceparent() string {
	// Exclusive: an update ferrule finds invalid ends the call, which frees
	// the string this borrows.
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.handle == nil {
		return ""
	}
	return goStr(C.ferrule_tool_call_traceparent(c.handle))
}

// Update sends a provisional result (a string, a ToolResult or a RawResult) as
// a tool_execution_update event; it never reaches the model. It may wait while
// the run's events are slow to be read. After the call is over it returns an
// error of code ALREADY_COMPLETED. An update ferrule finds invalid (an image
// without a media type, say) fails the call, as the C ABI does: the model sees
// that error, and the tool's later result is discarded.
func (c *Call) Update(partial any) error {
	data, err := resultJSON(partial)
	if err != nil {
		return err
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.handle == nil {
		return &Error{Code: CodeAlreadyCompleted, Message: "the call is over"}
	}
	p, n := cArg(data)
	return takeError(C.ferrule_tool_call_update(c.handle, p, n))
}

// run calls fn and completes the call with what it gave. Whatever fn does
// (panic, runtime.Goexit, a result that cannot be encoded) the call is
// completed or failed exactly once.
func (c *Call) run(ctx context.Context, cancel context.CancelFunc, fn func(context.Context, *Call, json.RawMessage) (any, error)) {
	defer cancel()
	finished := false
	defer func() {
		if !finished {
			// runtime.Goexit (t.FailNow, for one) ends the goroutine past every recover.
			c.finish(nil, errors.New("the tool exited without returning a result"))
		}
	}()
	data, err := outcome(ctx, c, fn)
	c.finish(data, err)
	finished = true
}

// outcome runs fn and encodes its result; a panic anywhere in that (fn, an
// error's Error method, a MarshalJSON) becomes an error.
func outcome(ctx context.Context, c *Call, fn func(context.Context, *Call, json.RawMessage) (any, error)) (data []byte, err error) {
	defer func() {
		if p := recover(); p != nil {
			data, err = nil, fmt.Errorf("the tool panicked: %v", p)
		}
	}()
	result, err := fn(ctx, c, c.arguments)
	if err != nil {
		return nil, errors.New(err.Error())
	}
	return resultJSON(result)
}

// finish completes the call with data, or fails it with err's text (made valid
// UTF-8, which ferrule requires); the handle is gone afterwards.
func (c *Call) finish(data []byte, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	handle := c.handle
	c.handle = nil
	if handle == nil {
		return
	}
	if err != nil {
		p, n := cArg([]byte(strings.ToValidUTF8(err.Error(), "\uFFFD")))
		_ = takeError(C.ferrule_tool_call_fail(handle, p, n))
		return
	}
	p, n := cArg(data)
	_ = takeError(C.ferrule_tool_call_complete(handle, p, n))
}

// RawResult is result JSON exactly as given: a JSON string (a text result) or
// a tool result object. ferrule checks it; an invalid one becomes an error
// result the model sees.
type RawResult []byte

// resultJSON is a tool's value as result JSON: a string is text, a ToolResult
// is itself, a RawResult is sent as it is, anything else becomes JSON text.
func resultJSON(value any) ([]byte, error) {
	switch v := value.(type) {
	case string:
		return appendJSONString(nil, v), nil
	case ToolResult:
		if v.Content == nil {
			v.Content = []Part{}
		}
		return json.Marshal(v)
	case *ToolResult:
		if v == nil {
			return resultJSON(ToolResult{})
		}
		return resultJSON(*v)
	case RawResult:
		return v, nil
	}
	text, err := json.Marshal(value)
	if err != nil {
		return nil, fmt.Errorf("the tool's result is not JSON: %w", err)
	}
	return json.Marshal(string(text))
}
