package ferrule

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
)

type address struct {
	City string `json:"city" jsonschema:"the city"`
	Zip  string `json:"zip,omitempty"`
}

type lookupArgs struct {
	CustomerID string    `json:"customer_id" jsonschema:"the customer's id, such as C-100"`
	Verbose    bool      `json:"verbose,omitempty"`
	Limit      *int      `json:"limit"`
	Tier       string    `json:"tier" enum:"gold,silver"`
	Home       address   `json:"home"`
	Previous   []address `json:"previous,omitempty"`
	Tags       []string  `json:"tags"`
	ignored    string
}

func TestSchemaIsReflectedFromTheArgumentsType(t *testing.T) {
	raw, err := schemaFor[lookupArgs](true)
	if err != nil {
		t.Fatal(err)
	}
	var schema map[string]any
	if err := json.Unmarshal(raw, &schema); err != nil {
		t.Fatal(err)
	}
	if got := schema["required"]; !reflect.DeepEqual(got, []any{"customer_id", "tier", "home", "tags"}) {
		t.Errorf("required %v", got)
	}
	if schema["additionalProperties"] != false {
		t.Errorf("additionalProperties %v", schema["additionalProperties"])
	}
	properties := schema["properties"].(map[string]any)
	id := properties["customer_id"].(map[string]any)
	if id["type"] != "string" || id["description"] != "the customer's id, such as C-100" {
		t.Errorf("customer_id %v", id)
	}
	if got := properties["tier"].(map[string]any)["enum"]; !reflect.DeepEqual(got, []any{"gold", "silver"}) {
		t.Errorf("tier enum %v", got)
	}
	home := properties["home"].(map[string]any)
	if !reflect.DeepEqual(home["required"], []any{"city"}) || home["additionalProperties"] != false {
		t.Errorf("home %v", home)
	}
	previous := properties["previous"].(map[string]any)
	// A nil slice marshals as null, so jsonschema-go allows null beside the array.
	if previous["items"].(map[string]any)["additionalProperties"] != false {
		t.Errorf("previous %v", previous)
	}
	if _, ok := properties["ignored"]; ok {
		t.Error("an unexported field became a property")
	}
	open, err := schemaFor[lookupArgs](false)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(open), "additionalProperties") {
		t.Errorf("a non-strict schema closes objects: %s", open)
	}
	if _, err := schemaFor[[]string](true); err == nil {
		t.Error("a non-struct arguments type was taken")
	}
}

// scripted is a configuration whose model makes the given calls, then answers.
func scripted(calls ...map[string]any) []byte {
	config := map[string]any{"model": map[string]any{"provider": "scripted", "script": []any{
		map[string]any{"tool_calls": calls}, map[string]any{"text": "done"}}}}
	data, _ := json.Marshal(config)
	return data
}

func call(id, name string, arguments any) map[string]any {
	return map[string]any{"id": id, "name": name, "arguments": arguments}
}

// toolResults are the tool messages of a result.
func toolResults(result *Result) []Message {
	var results []Message
	for _, message := range result.Messages {
		if message.Role == "tool" {
			results = append(results, message)
		}
	}
	return results
}

func TestArgumentsThatDoNotFitAreRefusedBeforeTheFunctionRuns(t *testing.T) {
	var ran atomic.Int32
	lookup := NewTool("lookup", "Looks a customer up.",
		func(ctx context.Context, call *Call, args lookupArgs) (string, error) {
			ran.Add(1)
			return "found " + args.CustomerID + " in " + args.Home.City, nil
		})
	good := map[string]any{"customer_id": "C-1", "tier": "gold", "home": map[string]any{"city": "Oslo"}, "tags": []string{}, "limit": nil}
	agent, err := NewAgentFromJSON(scripted(
		call("c1", "lookup", good),
		call("c2", "lookup", map[string]any{"customer_id": "C-2"}),
		call("c3", "lookup", map[string]any{"customer_id": "C-3", "tier": "gold", "home": map[string]any{"city": "Oslo"}, "tags": []string{}, "extra": 1}),
		call("c4", "lookup", map[string]any{"customer_id": "C-4", "tier": "bronze", "home": map[string]any{"city": "Oslo"}, "tags": []string{}}),
	), lookup)
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	result, err := agent.Run(context.Background(), Prompt("look them up"))
	if err != nil {
		t.Fatal(err)
	}
	results := toolResults(result)
	if len(results) != 4 || results[0].IsError || results[0].Text() != "found C-1 in Oslo" {
		t.Fatalf("results %+v", results)
	}
	for _, refused := range results[1:] {
		if !refused.IsError {
			t.Errorf("%s was not refused: %q", refused.ToolCallID, refused.Text())
		}
	}
	if ran.Load() != 1 {
		t.Errorf("the function ran %d times", ran.Load())
	}
}

func TestNonStrictToolsTakeAndIgnoreExtraProperties(t *testing.T) {
	lookup := NewTool("lookup", "Looks a customer up.",
		func(ctx context.Context, call *Call, args address) (string, error) { return args.City, nil }, NonStrict())
	agent, err := NewAgentFromJSON(scripted(call("c1", "lookup", map[string]any{"city": "Oslo", "planet": "Earth"})), lookup)
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	result, err := agent.Run(context.Background(), Prompt("where"))
	if err != nil {
		t.Fatal(err)
	}
	if got := toolResults(result)[0]; got.IsError || got.Text() != "Oslo" {
		t.Errorf("result %+v", got)
	}
}

type record struct {
	ID    string `json:"id"`
	Score int    `json:"score"`
}

func TestEveryKindOfResult(t *testing.T) {
	tools := []Tool{
		NewRawTool("text", "", nil, func(context.Context, *Call, json.RawMessage) (any, error) { return "plain", nil }),
		NewRawTool("rich", "", nil, func(context.Context, *Call, json.RawMessage) (any, error) {
			return ToolResult{Content: []Part{Text("rich"), Image("image/png", []byte{0x89, 'P', 'N', 'G'})},
				Details: json.RawMessage(`{"rows": 2}`), Title: "Rich", Usage: &Usage{InputTokens: 7, OutputTokens: 3}}, nil
		}),
		NewTool("record", "", func(context.Context, *Call, struct{}) (record, error) { return record{"r1", 7}, nil }),
		NewRawTool("failing", "", nil, func(context.Context, *Call, json.RawMessage) (any, error) {
			return nil, errors.New("the store is down")
		}),
		NewRawTool("panicking", "", nil, func(context.Context, *Call, json.RawMessage) (any, error) {
			panic("boom")
		}),
		NewRawTool("erroring", "", nil, func(context.Context, *Call, json.RawMessage) (any, error) {
			return ToolResult{Content: []Part{Text("not found")}, IsError: true}, nil
		}),
	}
	var calls []map[string]any
	for i, tool := range tools {
		calls = append(calls, call(string(rune('a'+i)), tool.Name(), map[string]any{}))
	}
	agent, err := NewAgentFromJSON(scripted(calls...), tools...)
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	run, err := agent.Start(context.Background(), Prompt("all of them"))
	if err != nil {
		t.Fatal(err)
	}
	var ends []*ToolExecutionEndEvent
	for event := range run.Events() {
		if end, ok := event.(*ToolExecutionEndEvent); ok {
			ends = append(ends, end)
		}
	}
	result, _ := run.Wait()
	results := toolResults(result)
	want := []struct {
		text    string
		isError bool
	}{{"plain", false}, {"rich", false}, {`{"id":"r1","score":7}`, false}, {"the store is down", true},
		{"the tool panicked: boom", true}, {"not found", true}}
	for i, w := range want {
		if results[i].Text() != w.text || results[i].IsError != w.isError {
			t.Errorf("%s: %q error=%v, expected %q error=%v", tools[i].Name(), results[i].Text(), results[i].IsError,
				w.text, w.isError)
		}
	}
	if image := results[1].Content[1]; image.Type != "image" || string(image.Data) != "\x89PNG" {
		t.Errorf("image %+v", image)
	}
	// Details, the title and the tool's own usage reach the host's events, never the model.
	var rich *ToolExecutionEndEvent
	for _, end := range ends {
		if end.Name == "rich" {
			rich = end
		}
	}
	if rich == nil || rich.Result.Title != "Rich" || string(rich.Result.Details) != `{"rows":2}` ||
		rich.Result.Usage == nil || rich.Result.Usage.InputTokens != 7 || rich.Result.Usage.OutputTokens != 3 {
		t.Errorf("rich end event %+v", rich)
	}
}

func TestAnUnreflectableArgumentsTypeFailsTheAgent(t *testing.T) {
	tool := NewTool("bad", "", func(context.Context, *Call, map[string]int) (string, error) { return "", nil })
	_, err := NewAgentFromJSON(scripted(call("c1", "bad", map[string]any{})), tool)
	if !errors.Is(err, ErrInvalidSchema) {
		t.Errorf("error %v", err)
	}
}
