package ferrule

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"
)

// scriptReplay is a HostModel that replays a scripted model's script, for the
// conformance scenarios' host-model mode: the request's Turn picks the entry,
// each entry standing for Repeat requests, as the scripted model counts.
type scriptReplay []scriptTurn

// scriptTurn is one entry of a script (the scripted model's fields a replay
// can play; another field fails the test).
type scriptTurn struct {
	Text      string  `json:"text"`
	Thinking  *string `json:"thinking"`
	ToolCalls []struct {
		ID        string          `json:"id"`
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"tool_calls"`
	StopReason string `json:"stop_reason"`
	Usage      Usage  `json:"usage"`
	DelayMS    int    `json:"delay_ms"`
	Repeat     *int   `json:"repeat"`
	Error      *struct {
		Status  int    `json:"status"`
		Message string `json:"message"`
	} `json:"error"`
}

// withScriptReplay is config with its scripted model replaced by the host
// model ("provider": "host"), and the replay of its script; nil when config
// names no scripted model.
func withScriptReplay(t *testing.T, config json.RawMessage) (json.RawMessage, scriptReplay) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(config, &fields); err != nil {
		t.Fatalf("config %s: %v", config, err)
	}
	var model map[string]json.RawMessage
	if err := json.Unmarshal(fields["model"], &model); err != nil || string(model["provider"]) != `"scripted"` {
		return config, nil
	}
	replay := scriptReplay{}
	if script, ok := model["script"]; ok {
		decoder := json.NewDecoder(bytes.NewReader(script))
		decoder.DisallowUnknownFields()
		if err := decoder.Decode(&replay); err != nil {
			t.Fatalf("script %s: %v", script, err)
		}
	}
	delete(model, "script")
	model["provider"] = json.RawMessage(`"host"`)
	model["name"] = json.RawMessage(`"script"`)
	fields["model"], _ = json.Marshal(model)
	replaced, _ := json.Marshal(fields)
	return replaced, replay
}

// entry is the script's answer to the run's request turn (from 1), or nil.
func (s scriptReplay) entry(turn int) *scriptTurn {
	for i := range s {
		times := 1
		if s[i].Repeat != nil {
			times = *s[i].Repeat
		}
		if turn <= times {
			return &s[i]
		}
		turn -= times
	}
	return nil
}

// statusCode is the provider error class a scripted HTTP status stands for.
func statusCode(status int) Code {
	switch {
	case status == 401 || status == 403:
		return CodeProviderAuth
	case status == 404:
		return CodeProviderNotFound
	case status == 429:
		return CodeProviderRateLimited
	case status == 503 || status == 529:
		return CodeProviderOverloaded
	case status >= 500 && status <= 599:
		return CodeProviderServer
	}
	return CodeProviderInvalidRequest
}

// Generate streams the entry's answer: thinking, text, each call in one piece
// (arguments given as a JSON string are the text itself; any other value its
// compact JSON), usage and stop reason; or fails as the entry's error says.
func (s scriptReplay) Generate(ctx context.Context, request *ModelRequest, out *ModelOutput) error {
	turn := s.entry(request.Turn)
	if turn == nil {
		return &ModelError{Code: CodeProviderInvalidRequest, Message: fmt.Sprintf("the script has no turn %d", request.Turn)}
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Duration(turn.DelayMS) * time.Millisecond):
	}
	if e := turn.Error; e != nil {
		return &ModelError{Code: statusCode(e.Status),
			Message: fmt.Sprintf("scripted provider error (HTTP %d): %s", e.Status, e.Message)}
	}
	if turn.Thinking != nil {
		if err := out.Thinking(*turn.Thinking); err != nil {
			return err
		}
	}
	if turn.Text != "" {
		if err := out.Text(turn.Text); err != nil {
			return err
		}
	}
	for i, call := range turn.ToolCalls {
		arguments := "{}"
		if len(call.Arguments) > 0 {
			var text string
			if json.Unmarshal(call.Arguments, &text) != nil {
				var compact bytes.Buffer
				_ = json.Compact(&compact, call.Arguments)
				text = compact.String()
			}
			arguments = text
		}
		if err := out.ToolCall(i, call.ID, call.Name, arguments); err != nil {
			return err
		}
	}
	if err := out.Usage(turn.Usage); err != nil {
		return err
	}
	out.Stop(turn.StopReason)
	return nil
}
