package ferruleotel

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	ferrule "github.com/ferrule-dev/ferrule/bindings/go"
)

// A run started under the host's span shows in the host's SDK with ferrule's
// ids: invoke_agent under the host's span, chat and execute_tool under it,
// the span the tool started from its call's context under execute_tool, and
// the span a hook started from its context under invoke_agent.
func TestSpansReachTheHostsSDKUnderItsSpans(t *testing.T) {
	exporter := tracetest.NewInMemoryExporter()
	processor := sdktrace.NewSimpleSpanProcessor(exporter)
	provider := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(processor))
	if err := Export(processor, nil); err != nil {
		t.Fatal(err)
	}
	defer ferrule.SetTracer(nil)
	tracer := provider.Tracer("host")

	lookup := ferrule.NewRawTool("lookup", "Looks up a plan.", json.RawMessage(`{"type": "object"}`),
		func(ctx context.Context, call *ferrule.Call, _ json.RawMessage) (any, error) {
			_, span := tracer.Start(ContextOf(ctx, call), "db.query")
			span.End()
			return "Gold", nil
		})
	config := json.RawMessage(`{"name": "support", "model": {"provider": "scripted", "script": [
		{"tool_calls": [{"id": "c1", "name": "lookup", "arguments": {}}]}, {"text": "done"}]}}`)
	policy := ferrule.OnToolCall(func(ctx context.Context, _ ferrule.ToolCallPayload) (ferrule.ToolCallDecision, error) {
		_, span := tracer.Start(HookContext(ctx), "policy.check")
		span.End()
		return ferrule.ToolCallDecision{}, nil
	})
	agent, err := ferrule.NewAgentFromJSONWithHooks(config, []ferrule.Hook{policy}, lookup)
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()

	ctx, request := tracer.Start(context.Background(), "handle request")
	result, err := agent.Run(ctx, Input(ctx, ferrule.Prompt("Plan of C-100?")))
	if err != nil || result.Status != ferrule.StatusCompleted {
		t.Fatalf("%v %+v", err, result)
	}
	request.End()

	byName := map[string]tracetest.SpanStub{}
	for wait := 0; wait < 1000 && len(byName) < 6; wait++ {
		time.Sleep(10 * time.Millisecond)
		byName = map[string]tracetest.SpanStub{}
		for _, s := range exporter.GetSpans() {
			byName[s.Name] = s
		}
	}
	host, run, tool, query := byName["handle request"], byName["invoke_agent support"],
		byName["execute_tool lookup"], byName["db.query"]
	if len(byName) != 6 {
		t.Fatalf("spans: %v", byName)
	}
	traceID := host.SpanContext.TraceID()
	for name, s := range byName {
		if s.SpanContext.TraceID() != traceID {
			t.Fatalf("%s is in another trace", name)
		}
	}
	if run.Parent.SpanID() != host.SpanContext.SpanID() {
		t.Fatalf("the run's parent %v, the host's span %v", run.Parent.SpanID(), host.SpanContext.SpanID())
	}
	if tool.Parent.SpanID() != run.SpanContext.SpanID() || byName["chat"].Parent.SpanID() != run.SpanContext.SpanID() {
		t.Fatalf("the call and the request go under the run")
	}
	if query.Parent.SpanID() != tool.SpanContext.SpanID() {
		t.Fatalf("the tool's own span goes under its call: %v, not %v", query.Parent.SpanID(), tool.SpanContext.SpanID())
	}
	if check := byName["policy.check"]; check.Parent.SpanID() != run.SpanContext.SpanID() {
		t.Fatalf("the hook's own span goes under the run: %v, not %v", check.Parent.SpanID(), run.SpanContext.SpanID())
	}
	found := false
	for _, kv := range tool.Attributes {
		if kv == attribute.String("gen_ai.tool.call.id", "c1") {
			found = true
		}
	}
	if !found || tool.InstrumentationScope.Name != "ferrule" {
		t.Fatalf("%v %v", tool.Attributes, tool.InstrumentationScope)
	}
}

func TestTraceparentsReadAsW3CSaysAndOthersAreIgnored(t *testing.T) {
	sc, ok := parseTraceparent("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
	if !ok || !sc.IsSampled() || !sc.IsRemote() || traceparent(sc) != "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01" {
		t.Fatalf("%v %v", sc, ok)
	}
	for _, bad := range []string{"", "00-xyz", "01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
		"00-00000000000000000000000000000000-b7ad6b7169203331-01"} {
		if _, ok := parseTraceparent(bad); ok {
			t.Fatalf("%q was taken", bad)
		}
	}
}
