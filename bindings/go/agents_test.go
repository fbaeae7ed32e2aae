package ferrule

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// scriptedTurns is a scripted model's configuration with these turns.
func scriptedTurns(turns ...map[string]any) []byte {
	data, _ := json.Marshal(map[string]any{"model": map[string]any{"provider": "scripted", "script": turns}})
	return data
}

func usageOf(input, output int) map[string]any {
	return map[string]any{"input_tokens": input, "output_tokens": output}
}

// workerAgent's model calls delete (which needs approval when careful), then
// answers; deletes counts the deletions.
func workerAgent(t *testing.T, careful bool, deletes *atomic.Int32) *Agent {
	t.Helper()
	var opts []ToolOption
	if careful {
		opts = append(opts, NeedsApproval())
	}
	deleteTool := NewTool("delete", "Deletes a thing.",
		func(ctx context.Context, call *Call, args struct {
			What string `json:"what"`
		}) (string, error) {
			deletes.Add(1)
			return "deleted " + args.What, nil
		}, opts...)
	agent, err := NewAgentFromJSON(scriptedTurns(
		map[string]any{"tool_calls": []any{call("d1", "delete", map[string]any{"what": "old"})}, "usage": usageOf(1, 1)},
		map[string]any{"text": "worker done", "usage": usageOf(2, 2)},
	), deleteTool)
	if err != nil {
		t.Fatal(err)
	}
	return agent
}

// boss's model calls the worker, then answers.
func boss(t *testing.T, child *Agent, opts ...ToolOption) *Agent {
	t.Helper()
	agent, err := NewAgentFromJSON(scriptedTurns(
		map[string]any{"tool_calls": []any{call("c1", "worker", map[string]any{"input": "clean up"})}, "usage": usageOf(10, 10)},
		map[string]any{"text": "boss done", "usage": usageOf(20, 20)},
	), AgentTool("worker", "Cleans up.", child, opts...))
	if err != nil {
		t.Fatal(err)
	}
	return agent
}

func TestAnAgentCalledAsAToolRunsNestedWithTypedEventsAndItsTokensCountedOnce(t *testing.T) {
	var deletes atomic.Int32
	child := workerAgent(t, false, &deletes)
	parent := boss(t, child)
	child.Close() // the parent holds it
	defer parent.Close()
	run, err := parent.Start(context.Background(), Prompt("go"))
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	var nested []Event
	inside := false
	for event := range run.Events() {
		switch e := event.(type) {
		case *ToolExecutionStartEvent:
			inside = true
		case *ToolExecutionEndEvent:
			inside = false
			if e.Result.Usage == nil || e.Result.Usage.InputTokens != 3 {
				t.Errorf("the call's usage is %+v", e.Result.Usage)
			}
		case *AgentEventEvent:
			if !inside || e.CallID != "c1" || e.Agent != "worker" || e.Depth != 1 {
				t.Errorf("a nested event out of its call: %+v", e)
			}
			nested = append(nested, e.Event.Event)
		}
	}
	result, err := run.Wait()
	if err != nil || result.Status != StatusCompleted {
		t.Fatalf("%+v, %v", result, err)
	}
	if result.Usage.InputTokens != 33 || result.Usage.OutputTokens != 33 {
		t.Errorf("usage %+v", result.Usage)
	}
	if deletes.Load() != 1 || len(nested) == 0 {
		t.Fatalf("deletes %d, nested events %d", deletes.Load(), len(nested))
	}
	if _, ok := nested[0].(*RunStartEvent); !ok {
		t.Errorf("the first nested event is %T", nested[0])
	}
	if end, ok := nested[len(nested)-1].(*RunEndEvent); !ok || end.Status != StatusCompleted {
		t.Errorf("the last nested event is %#v", nested[len(nested)-1])
	}
	if results := toolResults(result); len(results) != 1 || results[0].Text() != "worker done" {
		t.Errorf("results %+v", results)
	}
}

func TestCancellingTheContextCancelsTheNestedRun(t *testing.T) {
	cancelled := make(chan time.Time, 1)
	child, err := NewAgentFromJSON(scripted(call("w1", "block", map[string]any{})), blocker(cancelled))
	if err != nil {
		t.Fatal(err)
	}
	parent := boss(t, child)
	child.Close()
	defer parent.Close()
	ctx, cancel := context.WithCancel(context.Background())
	run, err := parent.Start(ctx, Prompt("go"))
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	events := run.Events()
	for event := range events {
		if nested, ok := event.(*AgentEventEvent); ok {
			if _, ok := nested.Event.Event.(*ToolExecutionStartEvent); ok {
				break
			}
		}
	}
	cancel()
	select {
	case <-cancelled:
	case <-time.After(hangProtection):
		t.Fatal("the nested run's tool was never cancelled")
	}
	for range events {
	}
	if result, err := run.Wait(); err != nil || result.Status != StatusCancelled {
		t.Fatalf("%+v, %v", result, err)
	}
}

func TestAnApprovalInsideAnAgentResumesByItsKey(t *testing.T) {
	var deletes atomic.Int32
	parent := boss(t, workerAgent(t, true, &deletes))
	defer parent.Close()
	first, err := parent.Run(context.Background(), Prompt("go"))
	if err != nil || first.Status != StatusInterrupted {
		t.Fatalf("%+v, %v", first, err)
	}
	waiting := first.Interruptions[0]
	if waiting.Key != "c1/d1" || waiting.Agent != "worker" || len(waiting.Path) != 1 || waiting.Path[0] != "c1" {
		t.Fatalf("interruption %+v", waiting)
	}
	again := boss(t, workerAgent(t, true, &deletes))
	defer again.Close()
	resumed, err := again.Run(context.Background(), Resume(first.State, map[string]Decision{waiting.Key: {Approve: true}}))
	if err != nil || resumed.Status != StatusCompleted {
		t.Fatalf("%+v, %v", resumed, err)
	}
	if deletes.Load() != 1 {
		t.Errorf("deleted %d times", deletes.Load())
	}
}

func TestAHandoffHandsTheRunOnWithoutToolCalls(t *testing.T) {
	billing, err := NewAgentFromJSON(scriptedTurns(map[string]any{}, map[string]any{"text": "billing here"}))
	if err != nil {
		t.Fatal(err)
	}
	front, err := NewAgentFromJSON(scriptedTurns(
		map[string]any{"tool_calls": []any{call("h1", "transfer_to_billing", map[string]any{})}},
	), Handoff("billing", "Billing questions.", billing, WithoutToolCalls()))
	if err != nil {
		t.Fatal(err)
	}
	billing.Close()
	defer front.Close()
	run, err := front.Start(context.Background(), Prompt("my bill"))
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	var handoffs []*HandoffEvent
	for event := range run.Events() {
		if handoff, ok := event.(*HandoffEvent); ok {
			handoffs = append(handoffs, handoff)
		}
	}
	result, err := run.Wait()
	if err != nil || result.Status != StatusCompleted || result.Agent != "billing" {
		t.Fatalf("%+v, %v", result, err)
	}
	if len(handoffs) != 1 || handoffs[0].To != "billing" || handoffs[0].CallID != "h1" {
		t.Errorf("handoff events %+v", handoffs)
	}
	if len(toolResults(result)) != 0 {
		t.Errorf("the handoff carried tool calls: %+v", result.Messages)
	}
}

func TestAnAgentToolRefusesToolOptionsAndAClosedAgent(t *testing.T) {
	child := workerAgent(t, false, new(atomic.Int32))
	config := scriptedTurns(map[string]any{"text": "x"})
	_, err := NewAgentFromJSON(config, AgentTool("worker", "w", child, Sequential()))
	var ferr *Error
	if !errors.As(err, &ferr) || ferr.Code != CodeInvalidArg || !strings.Contains(ferr.Message, "only Timeout") {
		t.Errorf("Sequential: %v", err)
	}
	_, err = NewAgentFromJSON(config, AgentTool("worker", "w", child, WithoutToolCalls()))
	if !errors.As(err, &ferr) || ferr.Code != CodeInvalidArg || !strings.Contains(ferr.Message, "handoff_messages") {
		t.Errorf("WithoutToolCalls on a tool: %v", err)
	}
	child.Close()
	if _, err := NewAgentFromJSON(config, AgentTool("worker", "w", child)); !errors.As(err, &ferr) || ferr.Code != CodeInvalidArg || !strings.Contains(ferr.Message, "closed") {
		t.Errorf("a closed agent: %v", err)
	}
	if _, err := NewAgentFromJSON(config, AgentTool("worker", "w", nil)); !errors.As(err, &ferr) || ferr.Code != CodeNullArg {
		t.Errorf("a nil agent: %v", err)
	}
}
