// Package ferruleotel bridges ferrule's traces to OpenTelemetry's Go SDK: the
// spans ferrule records reach the host's span processor with ferrule's own
// trace and span ids, a run goes under the span of the context it is started
// with, and a tool's spans go under the call's execute_tool span.
//
//	processor := sdktrace.NewBatchSpanProcessor(exporter)
//	provider := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(processor))
//	ferruleotel.Export(processor, nil)
//	result, err := agent.Run(ctx, ferruleotel.Input(ctx, ferrule.Prompt("...")))
//
// The spans follow the OpenTelemetry GenAI semantic conventions v1.38.0
// (docs/tracing.md).
package ferruleotel

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	ferrule "github.com/ferrule-dev/ferrule/bindings/go"
)

// SchemaURL is the version of the semantic conventions ferrule's spans follow.
const SchemaURL = "https://opentelemetry.io/schemas/1.38.0"

// Export makes every run record spans and hands each, when it ends, to
// processor (register the same processor with the host's TracerProvider), as
// a span of res (nil: resource.Default()) and of the instrumentation scope
// "ferrule". It sets the process's tracer (ferrule.SetTracer): a later call
// replaces it, and ferrule.SetTracer(nil) removes it. Spans come on one
// thread of ferrule's, in the order they ended.
func Export(processor sdktrace.SpanProcessor, res *resource.Resource) error {
	if res == nil {
		res = resource.Default()
	}
	scope := instrumentation.Scope{Name: "ferrule", Version: ferrule.Version(), SchemaURL: SchemaURL}
	return ferrule.SetTracer(func(data []byte) {
		stub, err := decode(data)
		if err != nil {
			return
		}
		stub.Resource = res
		stub.InstrumentationScope = scope
		processor.OnEnd(stub.Snapshot())
	})
}

// Input is in with the span of ctx as the run's parent (its trace_context);
// in as it is when ctx holds no valid span.
func Input(ctx context.Context, in ferrule.Input) ferrule.Input {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return in
	}
	return in.WithTraceContext(traceparent(sc), sc.TraceState().String())
}

// ContextOf is ctx with the call's execute_tool span as its (remote) parent
// span, so the spans a tool starts from it go under the call; ctx as it is
// when the run records no spans.
func ContextOf(ctx context.Context, call *ferrule.Call) context.Context {
	sc, ok := parseTraceparent(call.Traceparent())
	if !ok {
		return ctx
	}
	return trace.ContextWithRemoteSpanContext(ctx, sc)
}

// HookContext is a hook's ctx with the span the hook is consulted in (the
// run's invoke_agent span) as its (remote) parent span, so the spans the hook
// starts from it go under the run; ctx as it is when the run records no spans.
func HookContext(ctx context.Context) context.Context {
	sc, ok := parseTraceparent(ferrule.HookTraceparent(ctx))
	if !ok {
		return ctx
	}
	return trace.ContextWithRemoteSpanContext(ctx, sc)
}

func traceparent(sc trace.SpanContext) string {
	return fmt.Sprintf("00-%s-%s-%s", sc.TraceID(), sc.SpanID(), sc.TraceFlags())
}

// parseTraceparent reads a version-00 traceparent.
func parseTraceparent(text string) (trace.SpanContext, bool) {
	var version, traceID, spanID, flags string
	if len(text) != 55 || text[2] != '-' || text[35] != '-' || text[52] != '-' {
		return trace.SpanContext{}, false
	}
	version, traceID, spanID, flags = text[:2], text[3:35], text[36:52], text[53:]
	tid, err1 := trace.TraceIDFromHex(traceID)
	sid, err2 := trace.SpanIDFromHex(spanID)
	if version != "00" || err1 != nil || err2 != nil {
		return trace.SpanContext{}, false
	}
	var sampled trace.TraceFlags
	if flags == "01" {
		sampled = trace.FlagsSampled
	}
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: sampled, Remote: true})
	return sc, sc.IsValid()
}

// span is a span as ferrule's tracer gives it.
type span struct {
	TraceID      string                     `json:"trace_id"`
	SpanID       string                     `json:"span_id"`
	ParentSpanID *string                    `json:"parent_span_id"`
	TraceState   string                     `json:"tracestate"`
	Name         string                     `json:"name"`
	Kind         string                     `json:"kind"`
	Start        uint64                     `json:"start_time_unix_nano"`
	End          uint64                     `json:"end_time_unix_nano"`
	Attributes   map[string]json.RawMessage `json:"attributes"`
	Events       []struct {
		Name       string                     `json:"name"`
		Time       uint64                     `json:"time_unix_nano"`
		Attributes map[string]json.RawMessage `json:"attributes"`
	} `json:"events"`
	Status struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"status"`
}

// decode reads one span into a stub of the SDK's.
func decode(data []byte) (tracetest.SpanStub, error) {
	var s span
	if err := json.Unmarshal(data, &s); err != nil {
		return tracetest.SpanStub{}, err
	}
	tid, err := trace.TraceIDFromHex(s.TraceID)
	if err != nil {
		return tracetest.SpanStub{}, err
	}
	sid, err := trace.SpanIDFromHex(s.SpanID)
	if err != nil {
		return tracetest.SpanStub{}, err
	}
	state, _ := trace.ParseTraceState(s.TraceState)
	config := trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, TraceState: state}
	stub := tracetest.SpanStub{
		Name:        s.Name,
		SpanContext: trace.NewSpanContext(config),
		SpanKind:    trace.SpanKindInternal,
		StartTime:   time.Unix(0, int64(s.Start)),
		EndTime:     time.Unix(0, int64(s.End)),
		Attributes:  attributes(s.Attributes),
	}
	if s.Kind == "client" {
		stub.SpanKind = trace.SpanKindClient
	}
	if s.ParentSpanID != nil {
		if pid, err := trace.SpanIDFromHex(*s.ParentSpanID); err == nil {
			// In this process, as every span of ferrule's and the host's span
			// its run goes under are: not remote.
			parent := config
			parent.SpanID = pid
			stub.Parent = trace.NewSpanContext(parent)
		}
	}
	for _, e := range s.Events {
		stub.Events = append(stub.Events, sdktrace.Event{Name: e.Name, Time: time.Unix(0, int64(e.Time)),
			Attributes: attributes(e.Attributes)})
	}
	if s.Status.Code == "error" {
		stub.Status = sdktrace.Status{Code: codes.Error, Description: s.Status.Message}
	}
	return stub, nil
}

// attributes are JSON key-values as the SDK's: strings, whole numbers,
// numbers, booleans and lists of strings.
func attributes(raw map[string]json.RawMessage) []attribute.KeyValue {
	out := make([]attribute.KeyValue, 0, len(raw))
	for key, value := range raw {
		decoder := json.NewDecoder(bytes.NewReader(value))
		decoder.UseNumber()
		var v any
		if decoder.Decode(&v) != nil {
			continue
		}
		switch v := v.(type) {
		case string:
			out = append(out, attribute.String(key, v))
		case bool:
			out = append(out, attribute.Bool(key, v))
		case json.Number:
			if n, err := v.Int64(); err == nil {
				out = append(out, attribute.Int64(key, n))
			} else if f, err := v.Float64(); err == nil {
				out = append(out, attribute.Float64(key, f))
			}
		case []any:
			texts := make([]string, 0, len(v))
			for _, item := range v {
				if text, ok := item.(string); ok {
					texts = append(texts, text)
				}
			}
			out = append(out, attribute.StringSlice(key, texts))
		}
	}
	return out
}
