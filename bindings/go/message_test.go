package ferrule

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestMessagesAndPartsWriteTheJSONOfTheirKind(t *testing.T) {
	for _, c := range []struct {
		value any
		want  string
	}{
		{Message{Role: "system", Content: []Part{Text("a"), Text("b")}}, `{"role":"system","content":"ab"}`},
		{Message{Role: "tool", Content: []Part{Text("r")}},
			`{"role":"tool","tool_call_id":"","name":"","content":[{"type":"text","text":"r"}],"is_error":false}`},
		{Message{Role: "assistant", ToolCalls: []ToolCall{{ID: "c1", Name: "echo", Arguments: "{}"}}},
			`{"role":"assistant","content":[],"tool_calls":[{"id":"c1","name":"echo","arguments":"{}"}]}`},
		{Message{Role: "user", Content: []Part{Text("hi")}, Origin: "injection", Name: "not a user's"},
			`{"role":"user","content":[{"type":"text","text":"hi"}],"origin":"injection"}`},
		{Part{Type: "file", MediaType: "application/pdf"}, `{"type":"file","media_type":"application/pdf","data":""}`},
		{Part{Type: "redacted_thinking", Redacted: "opaque", Data: []byte("x")},
			`{"type":"redacted_thinking","data":"opaque"}`},
		{Part{Type: "text"}, `{"type":"text","text":""}`},
		{Part{Type: "image", URL: "https://example.com/a.png", Text: "stray"},
			`{"type":"image","url":"https://example.com/a.png"}`},
		{Part{Type: "audio", Text: "unknown"}, `{"type":"audio"}`},
		{Part{Type: "image", MediaType: "image/png", Data: []byte{}}, `{"type":"image","media_type":"image/png","data":""}`},
		{Part{Type: "image", MediaType: "image/png", URL: "u"}, `{"type":"image","media_type":"image/png","url":"u"}`},
	} {
		data, err := json.Marshal(c.value)
		if err != nil {
			t.Fatal(err)
		}
		assertSameJSON(t, data, c.want)
	}
}

func TestMessagesAndPartsReadEveryFormFerruleWrites(t *testing.T) {
	for _, c := range []struct {
		json string
		want Message
	}{
		{`{"role":"user","content":"hi"}`, UserMessage("hi")},
		{`{"role":"user","content":""}`, Message{Role: "user"}},
		{`{"role":"system","content":"Be brief."}`, Message{Role: "system", Content: []Part{Text("Be brief.")}}},
		{`{"role":"tool","tool_call_id":"c1","name":"echo","content":[{"type":"image","data":"iVBO-w"}],"is_error":true}`,
			Message{Role: "tool", ToolCallID: "c1", Name: "echo", IsError: true,
				Content: []Part{{Type: "image", Data: []byte{0x89, 0x50, 0x4e, 0xfb}}}}},
		{`{"role":"assistant","content":[{"type":"thinking","thinking":"hm","signature":"s"},{"type":"redacted_thinking","data":"x"}],"stop_reason":"tool_use","usage":{"input_tokens":3,"output_tokens":4}}`,
			Message{Role: "assistant", StopReason: "tool_use", Usage: &Usage{InputTokens: 3, OutputTokens: 4},
				Content: []Part{{Type: "thinking", Thinking: "hm", Signature: "s"}, {Type: "redacted_thinking", Redacted: "x"}}}},
	} {
		var got Message
		if err := json.Unmarshal([]byte(c.json), &got); err != nil {
			t.Fatalf("%s: %v", c.json, err)
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: got %+v, want %+v", c.json, got, c.want)
		}
	}
	var bad Message
	if err := json.Unmarshal([]byte(`{"role":"user","content":[{"type":"image","data":"not base64!"}]}`), &bad); err == nil {
		t.Error("data that is no base64 was read")
	}
}

func TestMessagesAndPartsOfAKindThisPackageDoesNotKnowAreWrittenBackAsRead(t *testing.T) {
	for _, read := range []string{
		`{"role":"narrator","content":"?","voice":{"pitch":2}}`,
		`{"role":"user","content":[{"type":"audio","data":"AAEC","format":"wav"},{"type":"text","text":"hi"}]}`,
		`{"role":"assistant","content":[{"type":"citation","url":"https://example.com","span":[1,4]}]}`,
	} {
		var message Message
		if err := json.Unmarshal([]byte(read), &message); err != nil {
			t.Fatalf("%s: %v", read, err)
		}
		written, err := json.Marshal(message)
		if err != nil {
			t.Fatal(err)
		}
		assertSameJSON(t, written, read)
	}
	var narrator Message
	if err := json.Unmarshal([]byte(`{"role":"narrator","content":"?"}`), &narrator); err != nil || narrator.Role != "narrator" {
		t.Fatalf("%+v, %v", narrator, err)
	}
	// One whose kind the host changes is written as that kind, not as read.
	narrator.Role = "user"
	narrator.Content = []Part{Text("told")}
	written, err := json.Marshal(narrator)
	if err != nil {
		t.Fatal(err)
	}
	assertSameJSON(t, written, `{"role":"user","content":[{"type":"text","text":"told"}]}`)
	var audio Part
	if err := json.Unmarshal([]byte(`{"type":"audio","data":"AAEC"}`), &audio); err != nil {
		t.Fatal(err)
	}
	audio.Type = "video"
	if written, err = json.Marshal(audio); err != nil {
		t.Fatal(err)
	}
	assertSameJSON(t, written, `{"type":"video"}`)
}

func TestNullIsAbsent(t *testing.T) {
	var part Part
	if err := json.Unmarshal([]byte(`{"type":"image","url":"u","data":null}`), &part); err != nil {
		t.Fatal(err)
	}
	written, err := json.Marshal(part)
	if err != nil {
		t.Fatal(err)
	}
	assertSameJSON(t, written, `{"type":"image","url":"u"}`)
	kept := Message{Role: "user", Content: []Part{Text("kept")}}
	if err := json.Unmarshal([]byte(`null`), &kept); err != nil || kept.Text() != "kept" {
		t.Fatalf("null changed the message: %+v, %v", kept, err)
	}
}

func TestPresentButEmptyBytesAreWrittenAndAbsentOnesLeftOut(t *testing.T) {
	var part Part
	if err := json.Unmarshal([]byte(`{"type":"image","media_type":"image/png","data":""}`), &part); err != nil {
		t.Fatal(err)
	}
	if part.Data == nil {
		t.Fatal("empty data read as absent")
	}
	written, err := json.Marshal(part)
	if err != nil {
		t.Fatal(err)
	}
	assertSameJSON(t, written, `{"type":"image","media_type":"image/png","data":""}`)
	part.Data = nil
	if written, err = json.Marshal(part); err != nil {
		t.Fatal(err)
	}
	assertSameJSON(t, written, `{"type":"image","media_type":"image/png"}`)
}
