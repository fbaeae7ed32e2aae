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
	"reflect"
	"runtime/cgo"
	"strings"
	"unsafe"
)

// Hook is a function ferrule consults at one stage of every run of an agent
// (Config.Hooks): OnRunStart, OnTurnStart, OnToolCall, OnToolResult or
// OnFinalAnswer. Hooks of one stage are consulted in the order given, each
// seeing the previous one's effect. A hook's error aborts the run: it ends
// failed with code HOOK_ABORTED and the error's text. Its ctx is cancelled when
// the run stops waiting for it (the run was cancelled, or Config.HookTimeout
// passed). Hooks run on goroutines, one consultation at a time per run. The
// Messages of a turn_start payload are shared with the hook's later payloads
// in the run (each message is decoded once, when it is new): read them, and
// copy what is to be changed.
type Hook struct {
	stage string
	// decide reads the payload of the consultation, borrowed from ferrule
	// until the hook is responded to (a function that keeps it copies it),
	// and gives the decision's JSON.
	decide  func(ctx context.Context, consultation *C.ferrule_hook, payload []byte) ([]byte, error)
	options hookOptions
	// keepsHistory: the hook is given the new messages of each payload and
	// keeps the rest (kept_history.go).
	keepsHistory bool
}

// HookOption changes how a hook is consulted.
type HookOption func(*hookOptions)

type hookOptions struct {
	// inline decides inside ferrule's callback (InlineHook).
	inline bool
	// withoutHistory leaves the history out of the payloads (WithoutHistory).
	withoutHistory bool
}

// InlineHook decides inside ferrule's callback, on ferrule's runtime thread,
// instead of on a goroutine, as Inline does for a tool: for hooks that return
// within microseconds and never block. Its ctx is never cancelled, and it must
// not call runtime.Goexit.
func InlineHook() HookOption { return func(o *hookOptions) { o.inline = true } }

// WithoutHistory leaves the history out of the hook's run_start and turn_start
// payloads: Messages is empty and MessageCount says how many there are. A
// consultation then costs the same at the thousandth turn as at the first,
// where copying the whole history into Go costs in proportion to its length.
func WithoutHistory() HookOption { return func(o *hookOptions) { o.withoutHistory = true } }

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
func RawHook(stage string, fn func(ctx context.Context, payload json.RawMessage) (json.RawMessage, error),
	opts ...HookOption) Hook {
	return newHook(stage, func(ctx context.Context, _ *C.ferrule_hook, payload []byte) ([]byte, error) {
		return fn(ctx, bytes.Clone(payload))
	}, opts)
}

func typedHook[P, D any](stage string, fn func(context.Context, P) (D, error), opts []HookOption) Hook {
	var zero P
	_, keepsHistory := any(&zero).(*TurnStartPayload)
	hook := newHook(stage, func(ctx context.Context, consultation *C.ferrule_hook, raw []byte) ([]byte, error) {
		var payload P
		if err := decodeAny(raw, &payload); err != nil {
			return nil, fmt.Errorf("the %s payload did not decode: %w", stage, err)
		}
		if keepsHistory {
			if err := completeHistory(consultation, raw, any(&payload).(*TurnStartPayload)); err != nil {
				return nil, fmt.Errorf("the %s payload's history: %w", stage, err)
			}
		}
		decision, err := fn(ctx, payload)
		if err != nil {
			return nil, err
		}
		if reflect.ValueOf(&decision).Elem().IsZero() {
			return goOn, nil
		}
		return json.Marshal(decision)
	}, opts)
	hook.keepsHistory = keepsHistory
	return hook
}

// goOn is the decision of most consultations.
var goOn = []byte("{}")

func newHook(stage string, decide func(context.Context, *C.ferrule_hook, []byte) ([]byte, error), opts []HookOption) Hook {
	hook := Hook{stage: stage, decide: decide}
	for _, opt := range opts {
		opt(&hook.options)
	}
	return hook
}

// register adds the hook to a builder.
func (h Hook) register(builder *C.ferrule_agent_builder) error {
	if h.decide == nil {
		return &Error{Code: CodeInvalidArg, Message: "a Hook must be made with OnRunStart, OnTurnStart, OnToolCall, OnToolResult, OnFinalAnswer or RawHook"}
	}
	// Nonblocking: the callback hands the consultation to a goroutine, which
	// responds (as Go tools complete their calls), or decides inline.
	options := map[string]any{"stages": []string{h.stage}, "nonblocking": true}
	switch {
	case h.options.withoutHistory:
		options["history"] = "none"
	case h.keepsHistory:
		options["history"] = "new"
	}
	stages, _ := json.Marshal(options)
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

// consult runs on ferrule's runtime and must return at once: an inline hook
// decides and responds, else a goroutine does.
func (h *Hook) consult(handle *C.ferrule_hook) {
	if h.options.inline {
		h.decideAndRespond(context.Background(), handle)
		return
	}
	dispatch(func() {
		ctx, cancel, forget := cancelledWith(func(onCancel C.ferrule_cancel_fn, key unsafe.Pointer) *C.ferrule_error {
			return C.ferrule_hook_on_cancel(handle, onCancel, key, nil)
		})
		defer forget()
		defer cancel()
		h.decideAndRespond(ctx, handle)
	})
}

// decideAndRespond decides and responds, exactly once whatever the function
// does.
func (h *Hook) decideAndRespond(ctx context.Context, handle *C.ferrule_hook) {
	// Lent until the response below.
	payload := lentBytes(C.ferrule_hook_payload(handle))
	responded := false
	defer func() {
		if !responded {
			// runtime.Goexit ends the function past every recover.
			respond(handle, nil, errors.New("the hook exited without deciding"))
		}
	}()
	decision, err := decideSafely(withHookTraceparent(ctx, handle), h, handle, payload)
	respond(handle, decision, err)
	responded = true
}

// decideSafely runs the hook; a panic becomes an error.
func decideSafely(ctx context.Context, h *Hook, consultation *C.ferrule_hook, payload []byte) (data []byte, err error) {
	defer func() {
		if p := recover(); p != nil {
			data, err = nil, fmt.Errorf("the hook panicked: %v", p)
		}
	}()
	decision, err := h.decide(ctx, consultation, payload)
	if err != nil {
		return nil, errors.New(err.Error())
	}
	return decision, nil
}

// respond answers with the decision, or with an abort carrying err's text.
func respond(handle *C.ferrule_hook, decision []byte, err error) {
	if err != nil {
		decision, _ = json.Marshal(map[string]string{"abort": strings.ToValidUTF8(err.Error(), "\uFFFD")})
	}
	p, n := cArg(decision)
	_ = takeError(C.ferrule_hook_respond(handle, p, n))
}
