package ferrule

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// DESIGN section 7's workloads with the tool in Go (bench/workloads.json):
// go test -run '^$' -bench . in bindings/go. W1 and W2 report the cost per
// round and per call of whole runs; W3 the wall time of 1,000 concurrent runs.

type workload struct {
	Config json.RawMessage `json:"config"`
	Rounds int             `json:"rounds"`
	Calls  int             `json:"calls"`
}

func workloads(b *testing.B) map[string]json.RawMessage {
	data, err := os.ReadFile("../../bench/workloads.json")
	if err != nil {
		b.Fatal(err)
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(data, &all); err != nil {
		b.Fatal(err)
	}
	return all
}

// noop is the benchmarks' tool: it answers "ok" at once.
func noop(schema json.RawMessage) Tool {
	return NewRawTool("noop", "Does nothing.", schema, func(context.Context, *Call, json.RawMessage) (any, error) {
		return "ok", nil
	})
}

func benchmarkWorkload(b *testing.B, name, schema string, events bool) {
	all := workloads(b)
	var w workload
	if err := json.Unmarshal(all[name], &w); err != nil {
		b.Fatal(err)
	}
	agent, err := NewAgentFromJSON(w.Config, noop(all[schema]))
	if err != nil {
		b.Fatal(err)
	}
	defer agent.Close()
	for b.Loop() {
		if !events {
			result, err := agent.Run(context.Background(), Prompt("go"))
			if err != nil || result.Status != StatusCompleted {
				b.Fatalf("%+v %v", result, err)
			}
			continue
		}
		run, err := agent.Start(context.Background(), Prompt("go"))
		if err != nil {
			b.Fatal(err)
		}
		for range run.Events() {
		}
		result, err := run.Wait()
		if err != nil || result.Status != StatusCompleted {
			b.Fatalf("%+v %v", result, err)
		}
		run.Close()
	}
	perRun := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	b.ReportMetric(perRun/float64(w.Rounds)/1e3, "us/round")
	b.ReportMetric(perRun/float64(w.Calls)/1e3, "us/call")
}

func BenchmarkW1Rounds(b *testing.B)           { benchmarkWorkload(b, "w1", "open_schema", false) }
func BenchmarkW1RoundsWithEvents(b *testing.B) { benchmarkWorkload(b, "w1", "open_schema", true) }
func BenchmarkW2FanOut(b *testing.B)           { benchmarkWorkload(b, "w2", "schema", false) }
func BenchmarkW2FanOutWithEvents(b *testing.B) { benchmarkWorkload(b, "w2", "schema", true) }

// W3: 1,000 concurrent runs of 5 rounds, 10 ms of model time per turn.
func BenchmarkW3Concurrency(b *testing.B) {
	const runs = 1000
	config := `{"model": {"provider": "scripted", "script": [
		{"tool_calls": [{"id": "c1", "name": "noop", "arguments": {}}], "delay_ms": 10, "repeat": 4},
		{"text": "done", "delay_ms": 10}]}}`
	agent, err := NewAgentFromJSON([]byte(config), noop(nil))
	if err != nil {
		b.Fatal(err)
	}
	defer agent.Close()
	for b.Loop() {
		started := make([]*Run, 0, runs)
		for range runs {
			run, err := agent.Start(context.Background(), Prompt("go"))
			if err != nil {
				b.Fatal(err)
			}
			started = append(started, run)
		}
		for _, run := range started {
			if result, err := run.Wait(); err != nil || result.Status != StatusCompleted {
				b.Fatalf("%+v %v", result, err)
			}
			run.Close()
		}
	}
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/1000runs")
	b.ReportMetric(float64(peakRSSKiB())/1024, "peakRSS_MiB")
}

// peakRSSKiB is the process's peak resident set (VmHWM).
func peakRSSKiB() int {
	status, _ := os.ReadFile("/proc/self/status")
	for _, line := range strings.Split(string(status), "\n") {
		if fields := strings.Fields(line); len(fields) > 1 && fields[0] == "VmHWM:" {
			var kib int
			for _, c := range fields[1] {
				kib = kib*10 + int(c-'0')
			}
			return kib
		}
	}
	return 0
}
