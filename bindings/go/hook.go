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
)

// Hook is a function ferrule consults at one stage of every run of an agent
// (Config.Hooks): OnRunStart, OnTurnStart, OnToolCall, OnToolResult or
// OnFinalAnswer. Hooks of one stage are consulted in the order given, each
// seeing the previous one's effect. A hook's error aborts the run: it ends
// failed with code HOOK_ABORTED and the error's text. Its ctx is cancelled when
// the run stops waiting for it (the run was cancelled, or Config.HookTimeout
// passed). Hooks run on goroutines, one consultation at a time per run.
type Hook struct {
	stage  string
	decide func(ctx context.Context, payload json.RawMessage) (any, error)
}

// MarshalJSON writes the decision JSON, Result as a tool's result (a string, a
// ToolResult or a RawResult; an invalid one becomes an error result).
func (d ToolResultDecision) MarshalJSON() ([]byte, error) {
	type plain ToolResultDecision
	decision := plain(d)
	if r, ok := d.Result.(*ToolResult); ok && r == nil {
		decision.Result = nil
	}
	if decision.Result != nil {
		result, err := resultJSON(decision.Result)
		if err != nil {
			return nil, err
		}
		decision.Result = json.RawMessage(result)
	}
	return json.Marshal(decision)
}

// RawHook is consulted at stage with the payload JSON and answers with decision
// JSON, as the C ABI does (for decisions the typed forms do not cover).
func RawHook(stage string, fn func(ctx context.Context, payload json.RawMessage) (json.RawMessage, error)) Hook {
	return Hook{stage: stage, decide: func(ctx context.Context, payload json.RawMessage) (any, error) {
		return fn(ctx, payload)
	}}
}

func typedHook[P, D any](stage string, fn func(context.Context, P) (D, error)) Hook {
	return Hook{stage: stage, decide: func(ctx context.Context, raw json.RawMessage) (any, error) {
		var payload P
		if err := json.Unmarshal(raw, &payload); err != nil {
			return nil, fmt.Errorf("the %s payload did not decode: %w", stage, err)
		}
		return fn(ctx, payload)
	}}
}

// register adds the hook to a builder.
func (h Hook) register(builder *C.ferrule_agent_builder) error {
	if h.decide == nil {
		return &Error{Code: CodeInvalidArg, Message: "a Hook must be made with OnRunStart, OnTurnStart, OnToolCall, OnToolResult, OnFinalAnswer or RawHook"}
	}
	// Nonblocking: the callback hands the consultation to a goroutine, which
	// responds (as Go tools complete their calls).
	stages, _ := json.Marshal(map[string]any{"stages": []string{h.stage}, "nonblocking": true})
	text, length, free := cBytes(stages)
	defer free()
	handle := cgo.NewHandle(&h)
	err := takeError(C.ferrule_agent_builder_add_hook(builder, text, length, C.ferrule_hook_fn(C.ferrule_go_hook),
		handleData(handle), C.ferrule_free_fn(C.ferrule_go_free)))
	if err != nil {
		handle.Delete() // not taken: still ours
	}
	return err
}

// consult runs on ferrule's runtime and must return at once: a goroutine
// decides and responds.
func (h *Hook) consult(handle *C.ferrule_hook) {
	dispatch(func() { h.decideAndRespond(handle) })
}

// decideAndRespond decides and responds, exactly once whatever the function
// does.
func (h *Hook) decideAndRespond(handle *C.ferrule_hook) {
	payload := json.RawMessage(goStr(C.ferrule_hook_payload(handle)))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	key := nextCallKey.Add(1)
	liveCalls.Store(key, cancel)
	defer liveCalls.Delete(key)
	if takeError(C.ferrule_hook_on_cancel(handle, C.ferrule_cancel_fn(C.ferrule_go_cancel),
		handleData(cgo.Handle(key)), nil)) != nil {
		cancel() // the run stopped waiting already
	}
	responded := false
	defer func() {
		if !responded {
			// runtime.Goexit ends the function past every recover.
			respond(handle, nil, errors.New("the hook exited without deciding"))
		}
	}()
	decision, err := decideSafely(ctx, h, payload)
	respond(handle, decision, err)
	responded = true
}

// decideSafely runs the hook and encodes its decision; a panic becomes an error.
func decideSafely(ctx context.Context, h *Hook, payload json.RawMessage) (data []byte, err error) {
	defer func() {
		if p := recover(); p != nil {
			data, err = nil, fmt.Errorf("the hook panicked: %v", p)
		}
	}()
	decision, err := h.decide(ctx, payload)
	if err != nil {
		return nil, errors.New(err.Error())
	}
	if raw, ok := decision.(json.RawMessage); ok {
		return raw, nil
	}
	return json.Marshal(decision)
}

// respond answers with the decision, or with an abort carrying err's text.
func respond(handle *C.ferrule_hook, decision []byte, err error) {
	if err != nil {
		decision, _ = json.Marshal(map[string]string{"abort": strings.ToValidUTF8(err.Error(), "\uFFFD")})
	}
	p, n := cArg(decision)
	_ = takeError(C.ferrule_hook_respond(handle, p, n))
}
