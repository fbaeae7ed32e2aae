package ferrule

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
)

// TestReturnedCallsRunByTheHost drives a run by hand: it returns its calls,
// each runs in an Invoke run (its tool told the attempt), and the run resumes
// with their outcomes, one of them the host's own.
func TestReturnedCallsRunByTheHost(t *testing.T) {
	script, _ := json.Marshal([]any{
		map[string]any{"tool_calls": []any{
			call("c1", "lookup", map[string]any{"id": 1}),
			call("c2", "lookup", map[string]any{"id": 2}),
			call("c3", "charge", map[string]any{})}},
		map[string]any{"text": "Done."},
	})
	var mu sync.Mutex
	var ran []string
	lookup := NewTool("lookup", "Looks up.",
		func(ctx context.Context, call *Call, args struct {
			ID int `json:"id"`
		}) (string, error) {
			mu.Lock()
			defer mu.Unlock()
			ran = append(ran, fmt.Sprintf("%s#%d", call.ID(), call.Attempt()))
			return fmt.Sprintf("found %d", args.ID), nil
		})
	charge := NewTool("charge", "Charges.",
		func(ctx context.Context, call *Call, args struct{}) (string, error) {
			t.Error("the host runs charge itself")
			return "", nil
		}, FailureIsFatal())
	agent, err := NewAgent(Config{Model: Model{Provider: "scripted", Script: script}}, lookup, charge)
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	ctx := context.Background()

	in := Prompt("Look them up.")
	in.ReturnCalls = true
	first, err := agent.Run(ctx, in)
	if err != nil || first.Status != StatusInterrupted {
		t.Fatalf("%+v, %v", first, err)
	}
	var ids []string
	for _, c := range first.Calls {
		ids = append(ids, c.ID)
	}
	if strings.Join(ids, ",") != "c1,c2,c3" || len(first.Interruptions) != 0 || len(ran) != 0 {
		t.Fatalf("calls %v, interruptions %v, ran %v", ids, first.Interruptions, ran)
	}

	results := map[string]json.RawMessage{}
	for _, c := range first.Calls {
		if c.Name == "charge" {
			results[c.ID] = ResultOutcome(ToolResult{Content: []Part{Text("charged by the host")}})
			continue
		}
		invoked, err := agent.Run(ctx, Invoke(c, 2))
		if err != nil || invoked.Status != StatusCompleted || len(invoked.Outcome) == 0 {
			t.Fatalf("invoke %s: %+v, %v", c.ID, invoked, err)
		}
		results[c.ID] = invoked.Outcome
	}
	if strings.Join(ran, ",") != "c1#2,c2#2" {
		t.Fatalf("the tool saw %v", ran)
	}
	done, err := agent.Run(ctx, ResumeWithResults(first.State, results))
	if err != nil || done.Status != StatusCompleted {
		t.Fatalf("%+v, %v", done, err)
	}
	var texts []string
	for _, m := range done.Messages {
		if m.Role == "tool" {
			texts = append(texts, m.Text())
		}
	}
	if strings.Join(texts, "|") != "found 1|found 2|charged by the host" || len(ran) != 2 {
		t.Fatalf("results %q, ran %v", texts, ran)
	}

	// A failed outcome is the tool's failure: charge's is fatal.
	results["c3"] = FailedOutcome("the card was declined")
	failed, err := agent.Run(ctx, ResumeWithResults(first.State, results))
	if err != nil || failed.Status != StatusFailed || failed.Error.Code != CodeToolFailed {
		t.Fatalf("%+v, %v", failed, err)
	}
	// A resume without every call's outcome is refused, naming it.
	delete(results, "c2")
	_, err = agent.Run(ctx, ResumeWithResults(first.State, results))
	if err == nil || !strings.Contains(err.Error(), `no result for call "c2"`) {
		t.Fatalf("%v", err)
	}
}
