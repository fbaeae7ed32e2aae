//go:build !eino_only

// Left out of the binary that measures the other library's W3 alone (`make
// bench-go`), whose peak resident set would otherwise count this code too.

package gobench

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	ferrule "github.com/ferrule-dev/ferrule/bindings/go"
)

// noop is the benchmarks' tool: it answers "ok" at once, on a goroutine or,
// with ferrule.Inline, inside ferrule's callback.
func noop(schema json.RawMessage, opts ...ferrule.ToolOption) ferrule.Tool {
	return ferrule.NewRawTool("noop", "Does nothing.", schema,
		func(context.Context, *ferrule.Call, json.RawMessage) (any, error) { return "ok", nil }, opts...)
}

func ferruleAgent(b *testing.B, config json.RawMessage, tool ferrule.Tool, hooks ...ferrule.Hook) *ferrule.Agent {
	agent, err := ferrule.NewAgentFromJSONWithHooks(config, hooks, tool)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { agent.Close() })
	return agent
}

// ferruleRun runs once, reading every event when events is set.
func ferruleRun(b *testing.B, agent *ferrule.Agent, events bool) {
	ferruleRunInput(b, agent, events, ferrule.Prompt("go"))
}

// ferruleRunInput runs in once, reading every event when events is set.
func ferruleRunInput(b *testing.B, agent *ferrule.Agent, events bool, in ferrule.Input) {
	if !events {
		result, err := agent.Run(context.Background(), in)
		if err != nil || result.Status != ferrule.StatusCompleted {
			b.Fatalf("%+v %v", result, err)
		}
		return
	}
	run, err := agent.Start(context.Background(), in)
	if err != nil {
		b.Fatal(err)
	}
	defer run.Close()
	for range run.Events() {
	}
	if result, err := run.Wait(); err != nil || result.Status != ferrule.StatusCompleted {
		b.Fatalf("%+v %v", result, err)
	}
}

func benchmarkFerrule(b *testing.B, name string, events bool, opts ...ferrule.ToolOption) {
	w := load(b, name)
	agent := ferruleAgent(b, w.Config, noop(w.Schema, opts...))
	each(b, w, func() { ferruleRun(b, agent, events) })
}

func BenchmarkFerruleW1(b *testing.B)       { benchmarkFerrule(b, "w1", false) }
func BenchmarkFerruleW1Inline(b *testing.B) { benchmarkFerrule(b, "w1", false, ferrule.Inline()) }
func BenchmarkFerruleW1InlineWithEvents(b *testing.B) {
	benchmarkFerrule(b, "w1", true, ferrule.Inline())
}
func BenchmarkFerruleW2Inline(b *testing.B) { benchmarkFerrule(b, "w2", false, ferrule.Inline()) }
func BenchmarkFerruleW2InlineWithEvents(b *testing.B) {
	benchmarkFerrule(b, "w2", true, ferrule.Inline())
}

// W2 with the result's final answer alone, as eino's agent returns it
// (Input.WithoutMessages: the 13,001 messages are neither written nor read).
func BenchmarkFerruleW2InlineWithoutMessages(b *testing.B) {
	benchmarkWithoutMessages(b, "w2", false)
}
func BenchmarkFerruleW2InlineWithEventsWithoutMessages(b *testing.B) {
	benchmarkWithoutMessages(b, "w2", true)
}
func BenchmarkFerruleW1InlineWithoutMessages(b *testing.B) {
	benchmarkWithoutMessages(b, "w1", false)
}

func benchmarkWithoutMessages(b *testing.B, name string, events bool) {
	w := load(b, name)
	agent := ferruleAgent(b, w.Config, noop(w.Schema, ferrule.Inline()))
	in := ferrule.Prompt("go")
	in.WithoutMessages = true
	each(b, w, func() { ferruleRunInput(b, agent, events, in) })
}

// noopHooks is one hook per stage that goes on, each with opts; the
// turn_start hook (typed, so its payload is decoded) notes when each turn
// started in turns, and is left out when every is false.
func noopHooks(every bool, turns *[]time.Time, opts ...ferrule.HookOption) []ferrule.Hook {
	hooks := []ferrule.Hook{
		ferrule.OnRunStart(func(context.Context, ferrule.RunStartPayload) (ferrule.RunStartDecision, error) {
			return ferrule.RunStartDecision{}, nil
		}, opts...),
		ferrule.OnToolCall(func(context.Context, ferrule.ToolCallPayload) (ferrule.ToolCallDecision, error) {
			return ferrule.ToolCallDecision{}, nil
		}, opts...),
		ferrule.OnToolResult(func(context.Context, ferrule.ToolResultPayload) (ferrule.ToolResultDecision, error) {
			return ferrule.ToolResultDecision{}, nil
		}, opts...),
		ferrule.OnFinalAnswer(func(context.Context, ferrule.FinalAnswerPayload) (ferrule.FinalAnswerDecision, error) {
			return ferrule.FinalAnswerDecision{}, nil
		}, opts...),
	}
	if every {
		hooks = append(hooks, ferrule.OnTurnStart(func(_ context.Context, p ferrule.TurnStartPayload) (ferrule.TurnStartDecision, error) {
			*turns = append(*turns, time.Now())
			return ferrule.TurnStartDecision{}, nil
		}, opts...))
	}
	return hooks
}

// benchmarkFerruleHooks runs W1 with noopHooks and, with every hook, reports
// the rounds' share of a run (from the first turn_start to the last, the rest
// being the run's start and end) and the median round's cost around round 10
// and around round 2,000 (from the turn_start hook's notes), whose ratio shows
// whether a consultation grows with the history.
func benchmarkFerruleHooks(b *testing.B, every bool, tool []ferrule.ToolOption, opts ...ferrule.HookOption) {
	w := load(b, "w1")
	var turns []time.Time
	agent := ferruleAgent(b, w.Config, noop(w.Schema, tool...), noopHooks(every, &turns, opts...)...)
	var early, late, rounds []time.Duration
	each(b, w, func() {
		turns = turns[:0]
		ferruleRun(b, agent, false)
		if len(turns) > 1 {
			rounds = append(rounds, turns[len(turns)-1].Sub(turns[0])/time.Duration(len(turns)-1))
		}
		for i := 1; i < len(turns); i++ {
			if round := turns[i].Sub(turns[i-1]); i >= 5 && i < 15 {
				early = append(early, round)
			} else if i >= len(turns)-10 {
				late = append(late, round)
			}
		}
	})
	if every {
		slices.Sort(early)
		slices.Sort(late)
		slices.Sort(rounds)
		b.ReportMetric(float64(rounds[len(rounds)/2].Nanoseconds())/1e3, "us/round-between-turns")
		b.ReportMetric(float64(early[len(early)/2].Nanoseconds())/1e3, "us/round@10")
		b.ReportMetric(float64(late[len(late)/2].Nanoseconds())/1e3, "us/round@2000")
	}
}

// W1 with a no-op hook on each stage, beside BenchmarkFerruleW1: on goroutines
// with the whole history, and inline without it (with an Inline tool).
func BenchmarkFerruleW1Hooks(b *testing.B)             { benchmarkFerruleHooks(b, true, nil) }
func BenchmarkFerruleW1HooksButTurnStart(b *testing.B) { benchmarkFerruleHooks(b, false, nil) }
func BenchmarkFerruleW1RawHooksInline(b *testing.B) {
	benchmarkRawHooks(b)
}

// The same inline, with the whole history in each payload (kept across the
// run's turns, each message decoded once).
func BenchmarkFerruleW1HooksInline(b *testing.B) {
	benchmarkFerruleHooks(b, true, []ferrule.ToolOption{ferrule.Inline()}, ferrule.InlineHook())
}
func BenchmarkFerruleW1HooksInlineWithoutHistory(b *testing.B) {
	benchmarkFerruleHooks(b, true, []ferrule.ToolOption{ferrule.Inline()}, ferrule.InlineHook(), ferrule.WithoutHistory())
}
func BenchmarkFerruleW1WithEvents(b *testing.B) { benchmarkFerrule(b, "w1", true) }
func BenchmarkFerruleW2(b *testing.B)           { benchmarkFerrule(b, "w2", false) }
func BenchmarkFerruleW2WithEvents(b *testing.B) { benchmarkFerrule(b, "w2", true) }

func benchmarkFerruleW3(b *testing.B, opts ...ferrule.ToolOption) {
	config := json.RawMessage(`{"model": {"provider": "scripted", "script": [
		{"tool_calls": [{"id": "c1", "name": "noop", "arguments": {}}], "delay_ms": 10, "repeat": 4},
		{"text": "done", "delay_ms": 10}]}}`)
	agent := ferruleAgent(b, config, noop(nil, opts...))
	concurrently(b, func() { ferruleRun(b, agent, false) })
}

func BenchmarkFerruleW3(b *testing.B)       { benchmarkFerruleW3(b) }
func BenchmarkFerruleW3Inline(b *testing.B) { benchmarkFerruleW3(b, ferrule.Inline()) }

// w1Model is W1's model in Go: the call of noop until the last round, then
// the answer, each request answered at once.
var w1Model = ferrule.HostModelFunc(func(ctx context.Context, request *ferrule.ModelRequest, out *ferrule.ModelOutput) error {
	if request.Turn < 2000 {
		return out.ToolCall(0, "c1", "noop", "{}")
	}
	return out.Text("done")
})

// W1 with the model in Go too (a host model), beside BenchmarkFerruleW1.
func BenchmarkFerruleW1HostModel(b *testing.B) {
	w := load(b, "w1")
	config := ferrule.Config{Model: ferrule.Model{Provider: "host", Name: "w1", Host: w1Model}, MaxRounds: 2000}
	agent, err := ferrule.NewAgent(config, noop(w.Schema))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { agent.Close() })
	each(b, w, func() { ferruleRun(b, agent, false) })
}

func benchmarkRawHooks(b *testing.B) {
	w := load(b, "w1")
	var hooks []ferrule.Hook
	for _, stage := range []string{"run_start", "turn_start", "tool_call", "tool_result", "final_answer"} {
		hooks = append(hooks, ferrule.RawHook(stage, func(context.Context, json.RawMessage) (json.RawMessage, error) {
			return json.RawMessage("{}"), nil
		}, ferrule.InlineHook(), ferrule.WithoutHistory()))
	}
	agent := ferruleAgent(b, w.Config, noop(w.Schema, ferrule.Inline()), hooks...)
	each(b, w, func() { ferruleRun(b, agent, false) })
}
