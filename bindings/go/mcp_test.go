package ferrule

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

// The MCP test server the conformance scenarios start (built with the judge,
// found on PATH: make test-go puts target/release there).
const mcpTestServer = "ferrule-mcp-test-server"

func TestAnMCPServerFromTheConfigIsCalledAndReportedInTypedEvents(t *testing.T) {
	script, _ := json.Marshal([]any{
		map[string]any{"tool_calls": []any{call("c1", "t__echo", map[string]any{"text": "from go"})}},
		map[string]any{"text": "done"},
	})
	agent, err := NewAgent(Config{
		Model:      Model{Provider: "scripted", Script: script},
		MCPServers: map[string]MCPServer{"t": {Command: mcpTestServer, ToolTimeout: new(5 * time.Second)}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	run, err := agent.Start(context.Background(), Prompt("go"))
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	var report *MCPServerEvent
	for event := range run.Events() {
		if server, ok := event.(*MCPServerEvent); ok {
			report = server
		}
	}
	result, err := run.Wait()
	if err != nil || result.Status != StatusCompleted {
		t.Fatalf("result %+v, %v", result, err)
	}
	if report == nil || report.Server != "t" || report.Status != "ready" || !contains(report.Tools, "t__echo") {
		t.Fatalf("the server's report: %+v", report)
	}
	if text := result.Messages[2].Text(); text != "from go" {
		t.Fatalf("the call's result: %q", text)
	}
}

func TestARequiredMCPServerThatCannotStartFailsTheRunWithItsCode(t *testing.T) {
	agent, err := NewAgent(Config{
		Model:      Model{Provider: "scripted", Script: json.RawMessage(`[{"text": "never"}]`)},
		MCPServers: map[string]MCPServer{"gone": {Command: "/nonexistent/ferrule-mcp-server", Required: true}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	result, err := agent.Run(context.Background(), Prompt("go"))
	if err != nil {
		t.Fatal(err)
	}
	if result.Status != StatusFailed || !errors.Is(result.Error, ErrMCPUnavailable) ||
		!strings.Contains(result.Error.Error(), "\"gone\" is required") {
		t.Fatalf("result %+v", result)
	}
}

func TestABadMCPServerConfigIsRefusedNamingTheField(t *testing.T) {
	_, err := NewAgent(Config{
		Model:      Model{Provider: "scripted"},
		MCPServers: map[string]MCPServer{"s": {Command: "x", URL: "http://127.0.0.1:1/mcp"}},
	})
	if !errors.Is(err, ErrInvalidArg) || !strings.Contains(err.Error(), "mcp_servers.s.url") {
		t.Fatalf("%v", err)
	}
}

func contains(list []string, want string) bool {
	for _, item := range list {
		if item == want {
			return true
		}
	}
	return false
}
