package ferrule

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// bashIn runs one bash call of command in dir under sandbox and returns the
// call's result message.
func bashIn(t *testing.T, dir, command string, sandbox *Sandbox) Message {
	t.Helper()
	script := scriptOf(map[string]any{"tool_calls": []any{call("b", "bash", map[string]any{"command": command})}},
		map[string]any{"text": "done"})
	agent, err := NewAgent(Config{Model: Model{Provider: "scripted", Script: script},
		BuiltinTools: &BuiltinTools{WorkingDirectory: dir, Allowed: []string{"bash"}, Sandbox: sandbox}})
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	result, err := agent.Run(context.Background(), Prompt("go"))
	if err != nil || result.Status != StatusCompleted {
		t.Fatalf("%+v, %v", result, err)
	}
	return result.Messages[2]
}

// The Go configuration reaches bash's sandbox: read_only refuses a write in
// the working directory that workspace_write allows, and a root that does not
// exist fails the build.
func TestTheBashSandboxIsConfiguredFromGo(t *testing.T) {
	dir := t.TempDir()
	refused := bashIn(t, dir, "echo x > inside.txt", &Sandbox{Mode: "read_only"})
	if !refused.IsError || !strings.Contains(refused.Text(), "Read-only file system") {
		t.Fatalf("read_only: %+v", refused)
	}
	if _, err := os.Stat(filepath.Join(dir, "inside.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("read_only let the command write")
	}
	written := bashIn(t, dir, "echo x > inside.txt && cat inside.txt", &Sandbox{Mode: "workspace_write"})
	if written.IsError || !strings.HasPrefix(written.Text(), "x\n") {
		t.Fatalf("workspace_write: %+v", written)
	}
	_, err := NewAgent(Config{Model: Model{Provider: "scripted", Script: scriptOf(map[string]any{"text": "done"})},
		BuiltinTools: &BuiltinTools{WorkingDirectory: dir, Sandbox: &Sandbox{WritableRoots: []string{"missing"}}}})
	var ferr *Error
	if !errors.As(err, &ferr) || ferr.Code != CodeInvalidArg || !strings.Contains(ferr.Message, "writable_roots") {
		t.Fatalf("a missing root: %v", err)
	}
}
