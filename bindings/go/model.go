package ferrule

/*
#include <stdlib.h>
#include "ferrule.h"
#include "shims.h"
*/
import "C"

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/cgo"
	"strings"
	"sync"
	"unsafe"
)

// HostModel is a model the host runs: an on-device model, a local engine, a
// gateway with a protocol of its own. Set it as Config.Model.Host with
// Model{Provider: "host", Name: ...}; everything after the model (call
// validation, approvals, hooks, events, retries) is as for a built-in provider.
type HostModel interface {
	// Generate answers one request, streaming the answer into out as it comes
	// (from any goroutine, until Generate returns). Returning nil completes the
	// answer; returning an error fails the request (a *ModelError says its code
	// and whether it may be asked again). ctx is cancelled when the run no
	// longer waits (it was cancelled or timed out): return soon.
	Generate(ctx context.Context, request *ModelRequest, out *ModelOutput) error
}

// HostModelFunc is a function as a HostModel.
type HostModelFunc func(ctx context.Context, request *ModelRequest, out *ModelOutput) error

// Generate calls f.
func (f HostModelFunc) Generate(ctx context.Context, request *ModelRequest, out *ModelOutput) error {
	return f(ctx, request, out)
}

// ModelRequest is one request to a host model (see docs/host-model.md).
type ModelRequest struct {
	// Model is the configuration's model name.
	Model string `json:"model"`
	// RunID is the id of the run making the request, as in its events: an
	// engine that keeps a cache per conversation keys it by this.
	RunID string `json:"run_id"`
	// Turn is the run's round, from 1.
	Turn int `json:"turn"`
	// System is the agent's system prompt ("" for none).
	System string `json:"system"`
	// MessageCount is how many messages the transcript holds.
	MessageCount int `json:"message_count"`
	// FirstNewMessage is the index of the first message the run's previous
	// request did not hold (0 on a run's first request, and after the history
	// was compacted), for engines that keep their own cache: NewMessages.
	FirstNewMessage int `json:"first_new_message"`
	// Tools are the tools the model may call this round.
	Tools []ModelTool `json:"tools"`
	// ToolChoice is "auto", "none", "required" or {"name": ...}.
	ToolChoice json.RawMessage `json:"tool_choice"`
	// OutputSchema is the schema the final answer must meet, or null.
	OutputSchema json.RawMessage `json:"output_schema"`
	// MaxTokens is the configuration's output limit (0 for none).
	MaxTokens int `json:"max_tokens"`

	newMessages []byte
	out         *ModelOutput
}

// Messages decodes the whole transcript. It reads it from ferrule, so it
// must be called before Generate returns (an ALREADY_COMPLETED error after).
func (r *ModelRequest) Messages() ([]Message, error) {
	r.out.mu.RLock()
	defer r.out.mu.RUnlock()
	if r.out.handle == nil {
		return nil, &Error{Code: CodeAlreadyCompleted, Message: "the model's answer is over"}
	}
	var whole struct {
		Messages []Message `json:"messages"`
	}
	err := json.Unmarshal(lentBytes(C.ferrule_model_request_json(r.out.handle)), &whole)
	return whole.Messages, err
}

// NewMessages decodes the messages from FirstNewMessage on: what an engine
// that keeps its own cache has not read yet. It costs what is new, not the
// whole history.
func (r *ModelRequest) NewMessages() ([]Message, error) {
	var messages []Message
	err := json.Unmarshal(r.newMessages, &messages)
	return messages, err
}

// ModelTool is a tool as a host model is told of it.
type ModelTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
	Strict      bool            `json:"strict"`
}

// ModelError fails a host model's request with a code of the provider family
// (CodeProviderRateLimited, ...), CodeTimeout or CodeResourceExhausted. A
// Retryable failure is asked again, as the model's MaxRetries allows, when
// nothing had streamed yet. Any other error fails the request with
// CodeProviderServer, not retried.
type ModelError struct {
	Code      Code
	Message   string
	Retryable bool
}

func (e *ModelError) Error() string { return fmt.Sprintf("%v: %s", e.Code, e.Message) }

// ModelOutput takes a host model's answer as it streams. Its methods may be
// called from any goroutine until Generate returns; after that they return an
// error of code ALREADY_COMPLETED.
type ModelOutput struct {
	// mu orders the pieces before the answer's end, after which handle is gone.
	mu         sync.RWMutex
	handle     *C.ferrule_model_request
	stopReason string
}

// Text streams answer text.
func (o *ModelOutput) Text(text string) error {
	return o.piece(func(h *C.ferrule_model_request) *C.ferrule_error {
		p, n := cArg([]byte(text))
		return C.ferrule_model_request_text_delta(h, p, n)
	})
}

// Thinking streams reasoning text.
func (o *ModelOutput) Thinking(text string) error {
	return o.piece(func(h *C.ferrule_model_request) *C.ferrule_error {
		p, n := cArg([]byte(text))
		return C.ferrule_model_request_thinking_delta(h, p, n)
	})
}

// ToolCall streams a piece of the call at index (its position in the answer,
// from 0): its id and name when this piece carries them ("" when not), and
// more argument text. A call that never gets an id gets one made up.
func (o *ModelOutput) ToolCall(index int, id, name, arguments string) error {
	if index < 0 || index > 1<<31 {
		return &Error{Code: CodeInvalidArg, Message: fmt.Sprintf("tool call index %d is out of range", index)}
	}
	return o.piece(func(h *C.ferrule_model_request) *C.ferrule_error {
		idp, idn := cArg([]byte(id))
		np, nn := cArg([]byte(name))
		ap, an := cArg([]byte(arguments))
		return C.ferrule_model_request_tool_call_delta(h, C.uint32_t(index), idp, idn, np, nn, ap, an)
	})
}

// Usage sets the answer's token counts (the last call wins).
func (o *ModelOutput) Usage(usage Usage) error {
	return o.piece(func(h *C.ferrule_model_request) *C.ferrule_error {
		return C.ferrule_model_request_usage(h, C.uint64_t(usage.InputTokens), C.uint64_t(usage.OutputTokens),
			C.uint64_t(usage.CachedTokens))
	})
}

// Stop sets the stop reason the answer completes with: "end_turn",
// "tool_use", "length" or "content_filter" ("" by default: tool_use when
// calls came, end_turn otherwise).
func (o *ModelOutput) Stop(reason string) {
	o.mu.Lock()
	o.stopReason = reason
	o.mu.Unlock()
}

func (o *ModelOutput) piece(send func(*C.ferrule_model_request) *C.ferrule_error) error {
	o.mu.RLock()
	defer o.mu.RUnlock()
	if o.handle == nil {
		return &Error{Code: CodeAlreadyCompleted, Message: "the model's answer is over"}
	}
	return takeError(send(o.handle))
}

// finish ends the request: complete when err is nil, fail otherwise. The
// handle is gone afterwards.
func (o *ModelOutput) finish(err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	handle := o.handle
	o.handle = nil
	if handle == nil {
		return
	}
	if err == nil {
		p, n := cArg([]byte(o.stopReason))
		_ = takeError(C.ferrule_model_request_complete(handle, p, n))
		return
	}
	code, retryable, text := CodeProviderServer, false, err.Error()
	var failure *ModelError
	if errors.As(err, &failure) {
		code, retryable, text = failure.Code, failure.Retryable, failure.Message
	}
	p, n := cArg([]byte(strings.ToValidUTF8(text, "\uFFFD")))
	// A code ferrule does not take fails the request as a server error.
	_ = takeError(C.ferrule_model_request_fail(handle, C.uint32_t(code), p, n, C.bool(retryable)))
}

// registerModel sets a host model on a builder. The callback is nonblocking:
// it hands the request to a goroutine and returns.
func registerModel(builder *C.ferrule_agent_builder, name string, model HostModel) error {
	cname, nameLen, freeName := cBytes([]byte(name))
	defer freeName()
	handle := cgo.NewHandle(&registeredModel{model: model})
	spec := (*C.ferrule_model_spec)(C.calloc(1, C.sizeof_ferrule_model_spec))
	defer C.free(unsafe.Pointer(spec))
	*spec = C.ferrule_model_spec{
		struct_size:    C.sizeof_ferrule_model_spec,
		name:           cname,
		name_len:       nameLen,
		generate:       C.ferrule_model_fn(C.ferrule_go_model),
		user_data:      handleData(handle),
		free_user_data: C.ferrule_free_fn(C.ferrule_go_free),
		nonblocking:    true,
	}
	if err := takeError(C.ferrule_agent_builder_set_model(builder, spec)); err != nil {
		handle.Delete() // not taken: still ours
		return err
	}
	return nil
}

// registeredModel is a host model as ferrule holds it (behind a cgo handle).
type registeredModel struct {
	model HostModel
}

// generate runs on ferrule's runtime and must return at once: it registers the
// cancel handler and hands the request to a goroutine.
func (m *registeredModel) generate(handle *C.ferrule_model_request) {
	raw := goBytes(C.ferrule_model_request_options_json(handle))
	newMessages := goBytes(C.ferrule_model_request_new_messages_json(handle))
	out := &ModelOutput{handle: handle}
	ctx, cancel, forget := cancelledWith(func(onCancel C.ferrule_cancel_fn, key unsafe.Pointer) *C.ferrule_error {
		return C.ferrule_model_request_on_cancel(handle, onCancel, key, nil)
	})
	dispatch(func() {
		defer forget()
		defer cancel()
		finished := false
		defer func() {
			if !finished {
				// runtime.Goexit ends the goroutine past every recover.
				out.finish(errors.New("the model exited without answering"))
			}
		}()
		out.finish(m.answer(ctx, raw, newMessages, out))
		finished = true
	})
}

// answer decodes the request and runs the model; a panic becomes an error.
func (m *registeredModel) answer(ctx context.Context, raw, newMessages []byte, out *ModelOutput) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("the model panicked: %v", p)
		}
	}()
	request := ModelRequest{newMessages: newMessages, out: out}
	if err := json.Unmarshal(raw, &request); err != nil {
		return fmt.Errorf("the request could not be read: %w", err)
	}
	return m.model.Generate(ctx, &request, out)
}
