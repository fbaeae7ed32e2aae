package gobench

import (
	"context"
	"encoding/json"
	"testing"

	ferrule "github.com/ferrule-dev/ferrule/bindings/go"
)

// noop is the benchmarks' tool: it answers "ok" at once.
func noop(schema json.RawMessage) ferrule.Tool {
	return ferrule.NewRawTool("noop", "Does nothing.", schema,
		func(context.Context, *ferrule.Call, json.RawMessage) (any, error) { return "ok", nil })
}

func ferruleAgent(b *testing.B, config json.RawMessage, schema json.RawMessage) *ferrule.Agent {
	agent, err := ferrule.NewAgentFromJSON(config, noop(schema))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { agent.Close() })
	return agent
}

// ferruleRun runs once, reading every event when events is set.
func ferruleRun(b *testing.B, agent *ferrule.Agent, events bool) {
	if !events {
		result, err := agent.Run(context.Background(), ferrule.Prompt("go"))
		if err != nil || result.Status != ferrule.StatusCompleted {
			b.Fatalf("%+v %v", result, err)
		}
		return
	}
	run, err := agent.Start(context.Background(), ferrule.Prompt("go"))
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

func benchmarkFerrule(b *testing.B, name string, events bool) {
	w := load(b, name)
	agent := ferruleAgent(b, w.Config, w.Schema)
	for b.Loop() {
		ferruleRun(b, agent, events)
	}
	report(b, w)
}

func BenchmarkFerruleW1(b *testing.B)           { benchmarkFerrule(b, "w1", false) }
func BenchmarkFerruleW1WithEvents(b *testing.B) { benchmarkFerrule(b, "w1", true) }
func BenchmarkFerruleW2(b *testing.B)           { benchmarkFerrule(b, "w2", false) }
func BenchmarkFerruleW2WithEvents(b *testing.B) { benchmarkFerrule(b, "w2", true) }

func BenchmarkFerruleW3(b *testing.B) {
	config := json.RawMessage(`{"model": {"provider": "scripted", "script": [
		{"tool_calls": [{"id": "c1", "name": "noop", "arguments": {}}], "delay_ms": 10, "repeat": 4},
		{"text": "done", "delay_ms": 10}]}}`)
	agent := ferruleAgent(b, config, nil)
	concurrently(b, func() { ferruleRun(b, agent, false) })
}
