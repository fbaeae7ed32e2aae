package ferrule

import (
	"encoding/json"
	"fmt"
	"runtime"
	"testing"
)

// w2Result is the JSON of a result shaped as W2's (bench/workloads.json): 200
// rounds of 64 calls and their results.
func w2Result(b *testing.B) []byte {
	messages := []Message{UserMessage("go")}
	for round := range 200 {
		calls := make([]ToolCall, 64)
		for i := range calls {
			calls[i] = ToolCall{ID: fmt.Sprintf("c%02d", i+1), Name: "noop", Arguments: fmt.Sprintf(`{"id":%d,"name":"a"}`, i+1)}
		}
		messages = append(messages, Message{Role: "assistant", ToolCalls: calls, StopReason: "tool_use",
			Usage: &Usage{InputTokens: round, OutputTokens: 1}})
		for _, call := range calls {
			messages = append(messages, Message{Role: "tool", ToolCallID: call.ID, Name: "noop", Content: []Part{Text("ok")}})
		}
	}
	data, err := json.Marshal(Result{Status: StatusCompleted, Messages: messages, Rounds: 201})
	if err != nil {
		b.Fatal(err)
	}
	return data
}

// BenchmarkDecodeW2Result is what reading a W2 run's result costs the binding,
// per call (two messages' worth of JSON).
func BenchmarkDecodeW2Result(b *testing.B) {
	data := w2Result(b)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		var result Result
		if err := decodeJSON(data, &result); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/12800/1e3, "us/call")
}

// benchmarkRunEnd reads a W2 run's run_end event with decode, each time after
// two garbage collections (which empty the pool of parsers, as a long run
// does), per call.
func benchmarkRunEnd(b *testing.B, decode func([]byte) Event) {
	data := append(append([]byte(`{"type": "run_end", "run_id": "r1", "result": `), w2Result(b)...), '}')
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		runtime.GC()
		runtime.GC()
		b.StartTimer()
		if end, ok := decode(data).(*RunEndEvent); !ok || len(end.Result.Messages) != 13001 {
			b.Fatalf("%#v", end)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/12800/1e3, "us/call")
}

// BenchmarkDecodeW2RunEndWhole and BenchmarkDecodeW2RunEndInParts: the event
// parsed whole, and read in parts as the binding reads it (run_end.go).
func BenchmarkDecodeW2RunEndWhole(b *testing.B)   { benchmarkRunEnd(b, decodeEvent) }
func BenchmarkDecodeW2RunEndInParts(b *testing.B) { benchmarkRunEnd(b, decodeReceived) }

// The payloads of a W1 round's hooks registered without the history, as the
// core writes them.
var (
	turnStartJSON  = []byte(`{"run_id":"run-1","turn":1,"messages":[],"message_count":1,"tools":["noop"]}`)
	toolCallJSON   = []byte(`{"run_id":"run-1","turn":1,"call":{"id":"c1","name":"noop","arguments":{}},"needs_approval":false}`)
	toolResultJSON = []byte(`{"run_id":"run-1","turn":1,"call_id":"c1","name":"noop","result":{"content":[{"type":"text","text":"ok"}],"is_error":false,"terminate":false},"is_error":false}`)
)

// BenchmarkDecodeHookPayloads is what a typed hook's decoding costs a W1 round
// (turn_start, tool_call and tool_result), as typedHook decodes them.
func BenchmarkDecodeHookPayloads(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		decodePayload[TurnStartPayload](b, turnStartJSON)
		decodePayload[ToolCallPayload](b, toolCallJSON)
		decodePayload[ToolResultPayload](b, toolResultJSON)
	}
}

func decodePayload[P any](b *testing.B, data []byte) {
	var payload P
	if err := decodeAny(data, &payload); err != nil {
		b.Fatal(err)
	}
}
