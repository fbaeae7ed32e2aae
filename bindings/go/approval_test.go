package ferrule

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

type email struct {
	To      string `json:"to"`
	Subject string `json:"subject"`
}

// emailAgent's model looks a customer up, then sends two emails (which need
// approval), then answers. send_email appends to outbox.
func emailAgent(t *testing.T, outbox string) *Agent {
	t.Helper()
	script, _ := json.Marshal([]any{
		map[string]any{"tool_calls": []any{call("c1", "lookup", map[string]any{})}},
		map[string]any{"tool_calls": []any{
			call("c2", "send_email", email{"ana@example.com", "Your plan"}),
			call("c3", "send_email", email{"everyone@example.com", "Newsletter"})}},
		map[string]any{"text": "Told Ana."},
	})
	lookup := NewTool("lookup", "Looks the customer up.",
		func(ctx context.Context, call *Call, args struct{}) (string, error) { return "Gold plan", nil })
	send := NewTool("send_email", "Sends an email.",
		func(ctx context.Context, call *Call, e email) (string, error) {
			file, err := os.OpenFile(outbox, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
			if err != nil {
				return "", err
			}
			defer file.Close()
			_, err = fmt.Fprintf(file, "%s: %s\n", e.To, e.Subject)
			return "sent to " + e.To, err
		}, NeedsApproval())
	agent, err := NewAgent(Config{Model: Model{Provider: "scripted", Script: script}}, lookup, send)
	if err != nil {
		t.Fatal(err)
	}
	return agent
}

// TestApprovalHelperProcess is one step of TestApprovalAcrossTwoProcesses, run
// in a process of its own; it does nothing when run directly.
func TestApprovalHelperProcess(t *testing.T) {
	dir := os.Getenv("FERRULE_APPROVAL_DIR")
	if dir == "" {
		t.Skip("a step of TestApprovalAcrossTwoProcesses")
	}
	agent := emailAgent(t, filepath.Join(dir, "outbox.txt"))
	defer agent.Close()
	statePath := filepath.Join(dir, "state.json")
	switch os.Getenv("FERRULE_APPROVAL_STEP") {
	case "start":
		result, err := agent.Run(context.Background(), Prompt("Tell Ana her plan."))
		if err != nil || result.Status != StatusInterrupted {
			t.Fatalf("%+v, %v", result, err)
		}
		if err := os.WriteFile(statePath, result.State, 0o600); err != nil {
			t.Fatal(err)
		}
	case "resume":
		state, err := os.ReadFile(statePath)
		if err != nil {
			t.Fatal(err)
		}
		result, err := agent.Run(context.Background(), Resume(state, map[string]Decision{
			"c2": {Approve: true},
			"c3": {Approve: false, Message: "Not the whole list."},
		}))
		if err != nil || result.Status != StatusCompleted {
			t.Fatalf("%+v, %v", result, err)
		}
		if text := toolResults(result)[2].Text(); text != "Not the whole list." {
			t.Fatalf("the rejected call's result is %q", text)
		}
	}
}

func TestApprovalAcrossTwoProcesses(t *testing.T) {
	dir := t.TempDir()
	step := func(name string) {
		cmd := exec.Command(os.Args[0], "-test.run=^TestApprovalHelperProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(), "FERRULE_APPROVAL_DIR="+dir, "FERRULE_APPROVAL_STEP="+name)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("the %s process failed: %v\n%s", name, err, out)
		}
	}
	outbox := filepath.Join(dir, "outbox.txt")
	step("start")
	if _, err := os.Stat(outbox); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("an email went out before approval")
	}
	var state struct {
		Version int `json:"version"`
	}
	data, _ := os.ReadFile(filepath.Join(dir, "state.json"))
	if err := json.Unmarshal(data, &state); err != nil || state.Version != 1 {
		t.Fatalf("the state file holds %s", data)
	}
	step("resume")
	sent, _ := os.ReadFile(outbox)
	if string(sent) != "ana@example.com: Your plan\n" {
		t.Fatalf("the outbox holds %q", sent)
	}
}

func TestInterruptionsResumeAndAlways(t *testing.T) {
	outbox := filepath.Join(t.TempDir(), "outbox.txt")
	agent := emailAgent(t, outbox)
	defer agent.Close()
	first, err := agent.Run(context.Background(), Prompt("Tell Ana her plan."))
	if err != nil || first.Status != StatusInterrupted {
		t.Fatalf("%+v, %v", first, err)
	}
	if len(first.Interruptions) != 2 || first.Interruptions[0].CallID != "c2" || first.Interruptions[1].Name != "send_email" {
		t.Fatalf("interruptions %+v", first.Interruptions)
	}
	var args email
	if err := json.Unmarshal(first.Interruptions[0].Arguments, &args); err != nil || args.To != "ana@example.com" {
		t.Fatalf("arguments %s: %v", first.Interruptions[0].Arguments, err)
	}
	if last := first.Messages[len(first.Messages)-1]; last.Role != "assistant" || len(last.ToolCalls) != 2 {
		t.Fatalf("the transcript does not end with the waiting message: %+v", last)
	}

	// Every refusal is ErrInvalidArg, naming what is wrong; none runs anything.
	for _, bad := range []struct {
		input Input
		names string
	}{
		{Resume(first.State, map[string]Decision{"c2": {Approve: true}}), `"c3"`},
		{Resume(first.State, map[string]Decision{"c2": {}, "c3": {}, "c4": {}}), `"c4"`},
		{Resume(json.RawMessage(strings.Replace(string(first.State), `"version":1`, `"version":7`, 1)),
			map[string]Decision{"c2": {}, "c3": {}}), "version 7"},
		{Resume(nil, nil), "must be the object"},
		{Resume(json.RawMessage("{not json"), nil), "resume"},
	} {
		_, err := agent.Start(context.Background(), bad.input)
		var ferr *Error
		if !errors.As(err, &ferr) || !strings.Contains(ferr.Message, bad.names) ||
			!(errors.Is(err, ErrInvalidArg) || errors.Is(err, ErrInvalidJSON)) {
			t.Errorf("%s: %v", bad.names, err)
		}
	}
	if _, err := os.Stat(outbox); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("a refused resume sent an email")
	}

	// A rejection that stands answers c3 too, and the run completes.
	never := Decision{Approve: false, Message: "Email is switched off.", Always: true}
	result, err := agent.Run(context.Background(), Resume(first.State, map[string]Decision{"c2": never, "c3": never}))
	if err != nil || result.Status != StatusCompleted || result.Rounds != 3 || result.State != nil {
		t.Fatalf("%+v, %v", result, err)
	}
	for _, message := range toolResults(result)[1:] {
		if !message.IsError || message.Text() != "Email is switched off." {
			t.Errorf("result %+v", message)
		}
	}
}

func TestABuiltinCanNeedApproval(t *testing.T) {
	dir := t.TempDir()
	script, _ := json.Marshal([]any{
		map[string]any{"tool_calls": []any{call("w", "write", map[string]any{"path": "a.txt", "content": "x"})}},
		map[string]any{"text": "written"},
	})
	agent, err := NewAgent(Config{Model: Model{Provider: "scripted", Script: script},
		BuiltinTools: &BuiltinTools{WorkingDirectory: dir, Allowed: []string{"write"}, NeedsApproval: []string{"write"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	first, err := agent.Run(context.Background(), Prompt("write"))
	if err != nil || first.Status != StatusInterrupted {
		t.Fatalf("%+v, %v", first, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "a.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("write ran before approval")
	}
	result, err := agent.Run(context.Background(), Resume(first.State, map[string]Decision{"w": {Approve: true}}))
	if err != nil || result.Status != StatusCompleted {
		t.Fatalf("%+v, %v", result, err)
	}
	if data, _ := os.ReadFile(filepath.Join(dir, "a.txt")); string(data) != "x" {
		t.Fatalf("a.txt holds %q", data)
	}
}
