package ferrule

/*
#include "ferrule.h"
#include "shims.h"
*/
import "C"

import (
	"context"
	"encoding/json"
	"runtime/cgo"
)

// SetTracer makes every run started from now on record spans after the
// OpenTelemetry GenAI conventions (invoke_agent, chat, execute_tool;
// docs/tracing.md) and hands each to handle when it ends, as JSON, on one
// thread of ferrule's, one at a time, in the order they ended. handle must
// copy what it keeps. A handler that falls behind loses spans (the logger
// says how many); a run never waits for it. nil removes the tracer. The
// tracer is the process's: a second call replaces the first. The otel
// package bridges it to an OpenTelemetry SDK. Safe from any goroutine.
func SetTracer(handle func(span []byte)) error {
	if handle == nil {
		return takeError(C.ferrule_runtime_set_tracer(nil, nil, nil))
	}
	h := cgo.NewHandle(&spanSink{take: handle})
	err := takeError(C.ferrule_runtime_set_tracer(C.ferrule_span_fn(C.ferrule_go_span), handleData(h),
		C.ferrule_free_fn(C.ferrule_go_free)))
	if err != nil {
		h.Delete()
	}
	return err
}

// spanSink hands spans to the host's function, on ferrule's tracer thread.
type spanSink struct {
	take func(span []byte)
}

// handle gives the span to the host's function; a panic there loses the
// span, never the process (it would cross ferrule's C frames).
func (s *spanSink) handle(span []byte) {
	defer func() { _ = recover() }()
	s.take(span)
}

// WithTraceContext puts the run's spans under the host's span, given by its
// W3C traceparent and tracestate (which may be empty); see the otel package's
// Input for the span of a context.Context. A malformed traceparent makes
// Start fail with INVALID_ARG.
func (in Input) WithTraceContext(traceparent, tracestate string) Input {
	context := map[string]string{"traceparent": traceparent}
	if tracestate != "" {
		context["tracestate"] = tracestate
	}
	value, _ := json.Marshal(context)
	in.json = withField(in.json, "trace_context", value)
	return in
}

// traceparentKey is the key of the traceparent a hook's ctx carries.
type traceparentKey struct{}

// HookTraceparent is the W3C traceparent a hook's ctx carries: that of the run's
// invoke_agent span the hook is consulted in, for the hook's own spans to go
// under it (see the otel package's HookContext). Empty when the run records
// no spans, and for any other ctx.
func HookTraceparent(ctx context.Context) string {
	traceparent, _ := ctx.Value(traceparentKey{}).(string)
	return traceparent
}

// withHookTraceparent is ctx carrying the traceparent of the consultation
// handle, when the run records spans (ctx itself otherwise: no allocation).
func withHookTraceparent(ctx context.Context, handle *C.ferrule_hook) context.Context {
	traceparent := C.ferrule_hook_traceparent(handle)
	if traceparent.len == 0 {
		return ctx
	}
	return context.WithValue(ctx, traceparentKey{}, goStr(traceparent))
}
