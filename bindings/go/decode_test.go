package ferrule

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestAResultDecodesEveryFieldInOnePass(t *testing.T) {
	data := `{"status": "interrupted", "final": null, "rounds": 3, "agent": "billing",
		"messages": [
			{"role": "system", "content": "be brief"},
			{"role": "user", "content": [{"type": "text", "text": "hi \u00e9\n"}], "origin": "injection"},
			{"role": "assistant", "content": [{"type": "thinking", "thinking": "hm", "signature": "s"}],
			 "tool_calls": [{"id": "c1", "name": "pay", "arguments": "{\"n\":1}"}], "stop_reason": "tool_use",
			 "usage": {"input_tokens": 5, "output_tokens": 7, "cached_tokens": 2}},
			{"role": "tool", "tool_call_id": "c1", "name": "pay", "content": [{"type": "image", "media_type": "image/png", "data": "AAE"}], "is_error": true},
			{"role": "critic", "note": [1, 2]}
		],
		"usage": {"input_tokens": 10, "output_tokens": 20},
		"error": {"code": "TIMEOUT", "message": "late"},
		"output": {"deep": [[[{"x": null}]]]},
		"interruptions": [{"call_id": "c1", "name": "pay", "arguments": {"n": 1}, "key": "c1"}],
		"state": {"version": 1}, "unknown_field": {"ignored": true}}`
	var got Result
	if err := json.Unmarshal([]byte(data), &got); err != nil {
		t.Fatal(err)
	}
	var direct Result
	if err := decodeJSON([]byte(data), &direct); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, direct) {
		t.Fatalf("json.Unmarshal and decodeJSON differ:\n%+v\n%+v", got, direct)
	}
	want := Result{
		Status: StatusInterrupted, Rounds: 3, Agent: "billing",
		Messages: []Message{
			{Role: "system", Content: []Part{Text("be brief")}},
			{Role: "user", Content: []Part{Text("hi é\n")}, Origin: "injection"},
			{Role: "assistant", Content: []Part{{Type: "thinking", Thinking: "hm", Signature: "s"}},
				ToolCalls: []ToolCall{{ID: "c1", Name: "pay", Arguments: `{"n":1}`}}, StopReason: "tool_use",
				Usage: &Usage{InputTokens: 5, OutputTokens: 7, CachedTokens: 2}},
			{Role: "tool", ToolCallID: "c1", Name: "pay", Content: []Part{{Type: "image", MediaType: "image/png", Data: []byte{0, 1}}}, IsError: true},
			{Role: "critic", unknown: json.RawMessage(`{"role":"critic","note":[1,2]}`)},
		},
		Usage:         Usage{InputTokens: 10, OutputTokens: 20},
		Error:         &Error{Code: CodeTimeout, Message: "late"},
		Output:        json.RawMessage(`{"deep":[[[{"x":null}]]]}`),
		Interruptions: []Interruption{{CallID: "c1", Name: "pay", Arguments: json.RawMessage(`{"n":1}`), Key: "c1"}},
		State:         json.RawMessage(`{"version":1}`),
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got\n%+v\nwant\n%+v", got, want)
	}
	// What it does not know is written back as it came.
	written, err := json.Marshal(got.Messages[4])
	if err != nil || string(written) != `{"role":"critic","note":[1,2]}` {
		t.Fatalf("%s %v", written, err)
	}
}

func TestJSONOfTheWrongKindIsAnErrorNamingTheField(t *testing.T) {
	for _, c := range []struct{ data, says string }{
		{`{"status": "completed", "rounds": "three"}`, "Result.rounds"},
		{`{"messages": {}}`, "Result.messages"},
		{`{"messages": [{"role": 5}]}`, "Message.role"},
		{`{"messages": [{"role": "user", "content": 5}]}`, "Message.content"},
		{`{"messages": [{"role": "tool", "is_error": "yes"}]}`, "Message.is_error"},
		{`{"messages": [{"role": "user", "content": [{"type": "image", "data": "***"}]}]}`, "illegal base64"},
		{`{"messages": [7]}`, "Message"},
		{`{"usage": {"input_tokens": 1.5}}`, "Usage.input_tokens"},
		{`{"status": 1}`, "Result.status"},
		{`{"status": "completed",}`, "invalid JSON"},
		{`[]`, "Result"},
	} {
		var r Result
		err := decodeJSON([]byte(c.data), &r)
		if err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v, want an error saying %q", c.data, err, c.says)
		}
		if json.Unmarshal([]byte(c.data), &r) == nil {
			t.Errorf("%s: json.Unmarshal accepted it", c.data)
		}
	}
}

func TestNullLeavesFieldsAsTheyAre(t *testing.T) {
	r := Result{Rounds: 4, Agent: "a", Output: json.RawMessage(`1`)}
	if err := decodeJSON([]byte(`{"rounds": null, "agent": null, "output": null, "final": null, "messages": null}`), &r); err != nil {
		t.Fatal(err)
	}
	if r.Rounds != 4 || r.Agent != "a" || r.Output != nil || r.Final != nil || r.Messages != nil {
		t.Fatalf("%+v", r)
	}
	if err := decodeJSON([]byte(`null`), &r); err != nil || r.Rounds != 4 {
		t.Fatalf("%+v %v", r, err)
	}
}

func TestRawFieldsAndUnknownKindsKeepTheirTextAsValidJSON(t *testing.T) {
	data := `{"status": "completed", "output": "\u001b[31mred\u001b[0m \u0000 \ud83d\ude00 \"q\"",
		"messages": [{"role": "critic", "x\u001by": "\u0007", "n": [1.50, -0]}],
		"state": {"k\u001b": "v\u0000"}}`
	var r Result
	if err := decodeJSON([]byte(data), &r); err != nil {
		t.Fatal(err)
	}
	if string(r.Output) != `"\u001b[31mred\u001b[0m \u0000 \ud83d\ude00 \"q\""` {
		t.Errorf("output %s", r.Output)
	}
	var text string
	if err := json.Unmarshal(r.Output, &text); err != nil || text != "\x1b[31mred\x1b[0m \x00 😀 \"q\"" {
		t.Errorf("output %q %v", text, err)
	}
	if string(r.State) != `{"k\u001b":"v\u0000"}` { // as it came, but compact
		t.Errorf("state %s", r.State)
	}
	unknown := r.Messages[0]
	written, err := json.Marshal(unknown)
	if err != nil || !json.Valid(written) {
		t.Fatalf("%s %v", written, err)
	}
	var back map[string]any
	if err := json.Unmarshal(written, &back); err != nil || back["x\x1by"] != "\a" || back["role"] != "critic" {
		t.Fatalf("%s: %v %v", written, back, err)
	}
}

func TestFieldNamesMatchRegardlessOfCaseAsEncodingJSONDoes(t *testing.T) {
	data := `{"Status": "completed", "ROUNDS": 2, "Usage": {"Input_Tokens": 3},
		"messages": [{"Role": "tool", "Tool_Call_ID": "c1", "content": "ok"}], "rounds_x": 9}`
	var fast, slow Result
	if err := decodeJSON([]byte(data), &fast); err != nil {
		t.Fatal(err)
	}
	type plain Result // encoding/json's own reading, without the package's decoder
	if err := json.Unmarshal([]byte(data), (*plain)(&slow)); err != nil {
		t.Fatal(err)
	}
	if fast.Status != StatusCompleted || fast.Rounds != 2 || fast.Usage.InputTokens != 3 || fast.Rounds != slow.Rounds ||
		fast.Usage != slow.Usage || fast.Status != slow.Status {
		t.Errorf("fast %+v, encoding/json %+v", fast, slow)
	}
	if m := fast.Messages[0]; m.ToolCallID != "c1" || m.Text() != "ok" {
		t.Errorf("message %+v", m)
	}
}

func TestTheZeroInputIsAnErrorAndLeavesTheAgentUsable(t *testing.T) {
	agent, err := NewAgentFromJSON(json.RawMessage(`{"model": {"provider": "scripted", "script": [{"text": "hi"}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range []Input{{}, {Tools: []string{"x"}}} {
		if _, err := agent.Run(context.Background(), in); err == nil || !errors.Is(err, ErrInvalidJSON) {
			t.Errorf("Run(%+v): %v", in, err)
		}
		if _, err := agent.Start(context.Background(), in); err == nil || !errors.Is(err, ErrInvalidJSON) {
			t.Errorf("Start(%+v): %v", in, err)
		}
	}
	closed := make(chan struct{})
	go func() { agent.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(hangProtection):
		t.Fatal("Close hangs: the agent's lock is still held")
	}
}
