package ferrule

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"
)

// A model configured with Model.Record replays the cassette of conformance
// scenario 048 with no server and no key, and the agent reports the two
// exchanges the run did not use.
func TestReplayFromACassetteThroughTheTypedConfig(t *testing.T) {
	cassette, err := filepath.Abs("../../tests/conformance/cassettes/048_replay_from_a_cassette.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	config := Config{Model: Model{Provider: "openai", Name: "test-model", BaseURL: "http://127.0.0.1:9/v1",
		APIKeyEnv: "FERRULE_CONFORMANCE_UNSET_KEY", Record: &Recording{Path: cassette, Mode: "replay"}}}
	schema := json.RawMessage(`{"type": "object", "properties": {"customer_id": {"type": "string"}}, "required": ["customer_id"]}`)
	lookup := NewRawTool("lookup", "Looks up a customer's plan.", schema,
		func(context.Context, *Call, json.RawMessage) (any, error) { return "Gold", nil })
	agent, err := NewAgent(config, lookup)
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	result, err := agent.Run(context.Background(), Prompt("Plan of C-100?"))
	if err != nil || result.Status != StatusCompleted {
		t.Fatalf("%v %+v", err, result)
	}
	if text := result.Final.Text(); text != "C-100 is on Gold." {
		t.Fatalf("final answer %q", text)
	}
	unused, err := agent.UnusedRecordings()
	want := []UnusedExchange{{Index: 3, Method: "POST", Path: "/v1/chat/completions"}, {Index: 4, Method: "POST", Path: "/v1/chat/completions"}}
	if err != nil || len(unused) != 2 || unused[0] != want[0] || unused[1] != want[1] {
		t.Fatalf("unused %+v, %v", unused, err)
	}

	// The same prompt again finds its exchanges used.
	again, err := agent.Run(context.Background(), Prompt("Plan of C-100?"))
	if err != nil || again.Error == nil || again.Error.Code != CodeReplayMismatch {
		t.Fatalf("%v %+v", err, again)
	}
}

func TestUnusedRecordingsOfAModelWithoutACassette(t *testing.T) {
	agent, err := NewAgentFromJSON(json.RawMessage(`{"model": {"provider": "scripted", "script": [{"text": "hi"}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	_, err = agent.UnusedRecordings()
	var ferr *Error
	if !errors.As(err, &ferr) || ferr.Code != CodeInvalidArg {
		t.Fatalf("%v", err)
	}
	agent.Close()
	if _, err := agent.UnusedRecordings(); !errors.As(err, &ferr) || ferr.Code != CodeInvalidArg {
		t.Fatalf("after Close: %v", err)
	}
}
