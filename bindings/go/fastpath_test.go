package ferrule

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// inlineAgent is an agent whose one tool, "quick", is Inline and runs fn.
func inlineAgent(t *testing.T, script json.RawMessage, fn func(context.Context, *Call, json.RawMessage) (any, error)) *Agent {
	t.Helper()
	agent, err := NewAgentFromJSON(script, NewRawTool("quick", "", nil, fn, Inline()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { agent.Close() })
	return agent
}

func TestAnInlineToolRunsInsideTheCallbackAndCompletesItsCall(t *testing.T) {
	agent := inlineAgent(t, scripted(call("c1", "quick", map[string]any{"n": 1}), call("c2", "quick", map[string]any{"n": 2})),
		func(ctx context.Context, c *Call, args json.RawMessage) (any, error) {
			if ctx.Err() != nil {
				return nil, errors.New("the context is done")
			}
			if err := c.Update("half"); err != nil {
				return nil, err
			}
			if strings.Contains(string(args), "2") {
				return nil, errors.New("two is refused")
			}
			return ToolResult{Content: []Part{Text("got " + string(args))}}, nil
		})
	run, err := agent.Start(context.Background(), Prompt("go"))
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	var updates []string
	for event := range run.Events() {
		if update, ok := event.(*ToolExecutionUpdateEvent); ok {
			updates = append(updates, update.Partial.Text())
		}
	}
	res, err := run.Wait()
	if err != nil || res.Status != StatusCompleted {
		t.Fatalf("%+v %v", res, err)
	}
	results := toolResults(res)
	if len(results) != 2 || results[0].Text() != `got {"n":1}` || results[0].IsError ||
		!results[1].IsError || results[1].Text() != "two is refused" {
		t.Fatalf("results %+v", results)
	}
	if strings.Join(updates, ",") != "half,half" {
		t.Errorf("updates %q", updates)
	}
}

func TestAnInlineToolThatPanicsFailsItsCall(t *testing.T) {
	agent := inlineAgent(t, scripted(call("c1", "quick", map[string]any{})),
		func(context.Context, *Call, json.RawMessage) (any, error) { panic("boom") })
	res, err, ok := runWithin(agent, hangProtection, Prompt("go"))
	if !ok || err != nil {
		t.Fatalf("%v %v", ok, err)
	}
	if results := toolResults(res); !results[0].IsError || !strings.Contains(results[0].Text(), "boom") {
		t.Fatalf("results %+v", results)
	}
}

// Inline calls completing inside the callback race the run's cancellation
// and its timeout from other goroutines: every run ends, once, with a status
// that fits. Half the runs are cancelled; the others race a 2 ms run timeout,
// and one run without a timeout shows that calls were made at all.
func TestInlineCompletionsRaceCancelAndTimeout(t *testing.T) {
	rounds := `{"model": {"provider": "scripted", "script": [
		{"tool_calls": [{"id": "a", "name": "quick", "arguments": {}}, {"id": "b", "name": "quick", "arguments": {}}], "repeat": 50},
		{"text": "done"}]}, "max_rounds": 60, "run_timeout_ms": 2}`
	var calls atomic.Int64
	agent := inlineAgent(t, json.RawMessage(rounds), func(context.Context, *Call, json.RawMessage) (any, error) {
		calls.Add(1)
		return "ok", nil
	})
	iterations := 300
	if testing.Short() {
		iterations = 50
	}
	cancelAfter := func(i int) (time.Duration, bool) { return time.Duration(i%7) * 100 * time.Microsecond, i%2 == 0 }
	raceCancel(t, agent, iterations, cancelAfter, func(_ int, res *Result) {
		switch res.Status {
		case StatusCompleted, StatusCancelled:
		case StatusFailed:
			if res.Error == nil || res.Error.Code != CodeTimeout {
				t.Errorf("failed with %+v", res.Error)
			}
		default:
			t.Errorf("status %v", res.Status)
		}
		for _, r := range toolResults(res) {
			if r.Text() != "ok" && !r.IsError {
				t.Errorf("result %+v", r)
			}
		}
	})
	untimed := inlineAgent(t, json.RawMessage(strings.Replace(rounds, `"run_timeout_ms": 2`, `"run_timeout_ms": 0`, 1)),
		func(context.Context, *Call, json.RawMessage) (any, error) { calls.Add(1); return "ok", nil })
	if res, err := untimed.Run(context.Background(), Prompt("go")); err != nil || res.Status != StatusCompleted ||
		calls.Load() < 100 {
		t.Fatalf("%+v %v, %d calls", res, err, calls.Load())
	}
}

// raceCancel starts runs runs of agent at once and waits for each; run i is
// cancelled after the delay cancelAfter(i) gives, when it says so, racing
// whatever the run does then. check gets each run's result.
func raceCancel(t *testing.T, agent *Agent, runs int, cancelAfter func(i int) (time.Duration, bool),
	check func(i int, res *Result)) {
	var wg sync.WaitGroup
	for i := range runs {
		wg.Go(func() {
			run, err := agent.Start(context.Background(), Prompt("go"))
			if err != nil {
				t.Error(err)
				return
			}
			defer run.Close()
			if delay, cancel := cancelAfter(i); cancel {
				time.Sleep(delay)
				run.Cancel()
			}
			res, err := run.Wait()
			if err != nil {
				t.Errorf("run %d: %v", i, err)
				return
			}
			check(i, res)
		})
	}
	wg.Wait()
}

// Agent.Run takes its result from run_end, the one event it asks for: runs
// whose context is cancelled at any moment still return a whole result.
func TestAgentRunResultsFromRunEndRaceCancel(t *testing.T) {
	rounds := `{"model": {"provider": "scripted", "script": [
		{"tool_calls": [{"id": "a", "name": "quick", "arguments": {}}], "repeat": 20}, {"text": "done"}]}}`
	agent := inlineAgent(t, json.RawMessage(rounds), func(context.Context, *Call, json.RawMessage) (any, error) {
		return "ok", nil
	})
	var wg sync.WaitGroup
	for i := range 300 {
		wg.Go(func() {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if i%3 != 0 {
				time.AfterFunc(time.Duration(i%11)*20*time.Microsecond, cancel)
			}
			res, err := agent.Run(ctx, Prompt("go"))
			if err != nil {
				if !errors.Is(err, ErrCancelled) {
					t.Error(err)
				}
				return // cancelled before it started
			}
			switch res.Status {
			case StatusCompleted:
				if len(res.Messages) != 42 || res.Final.Text() != "done" {
					t.Errorf("a completed run lacks messages: %d", len(res.Messages))
				}
			case StatusCancelled:
				if len(res.Messages) == 0 || res.Messages[0].Text() != "go" {
					t.Errorf("a cancelled run lacks its prompt: %+v", res.Messages)
				}
			default:
				t.Errorf("status %v", res.Status)
			}
		})
	}
	wg.Wait()
}

// Events come in bursts (one call into Go per burst): readers that stop at any
// point, racing the run's end and Close, still see every event in order up to
// where they stopped, and every run ends.
func TestEventBurstsRaceTheRunEndAndClose(t *testing.T) {
	rounds := `{"model": {"provider": "scripted", "script": [
		{"tool_calls": [{"id": "a", "name": "quick", "arguments": {}}, {"id": "b", "name": "quick", "arguments": {}}], "repeat": 10},
		{"text": "done"}]}}`
	agent := inlineAgent(t, json.RawMessage(rounds), func(context.Context, *Call, json.RawMessage) (any, error) {
		return "ok", nil
	})
	var wg sync.WaitGroup
	for i := range 200 {
		wg.Go(func() {
			run, err := agent.Start(context.Background(), Prompt("go"))
			if err != nil {
				t.Error(err)
				return
			}
			stopAt := i % 40 // 0: read them all
			var types []string
			for event := range run.Events() {
				types = append(types, event.EventType())
				if len(types) == stopAt {
					break
				}
			}
			if types[0] != "run_start" {
				t.Errorf("first event %q", types[0])
			}
			if stopAt == 0 && types[len(types)-1] != "run_end" {
				t.Errorf("last event %q of %d", types[len(types)-1], len(types))
			}
			if stopAt == 0 {
				if res, err := run.Wait(); err != nil || res.Status != StatusCompleted {
					t.Errorf("%+v %v", res, err)
				}
			}
			run.Close() // a reader that stopped early lets go of the rest
		})
	}
	wg.Wait()
}
