package ferrule

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
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
