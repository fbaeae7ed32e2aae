// The lookup_customer example: one typed Go tool, the run's tool events printed
// as they happen. The scripted model drives it unless OPENAI_API_KEY or
// ANTHROPIC_API_KEY is set (FERRULE_MODEL then names the model).
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	ferrule "github.com/ferrule-dev/ferrule/bindings/go"
)

type lookupArgs struct {
	CustomerID string `json:"customer_id" jsonschema:"Customer ID such as C-100"`
}

var plans = map[string]string{"C-100": "Gold", "C-200": "Silver"}

func lookupCustomer(ctx context.Context, call *ferrule.Call, args lookupArgs) (string, error) {
	plan, ok := plans[args.CustomerID]
	if !ok {
		return "", fmt.Errorf("no customer %s", args.CustomerID)
	}
	return "Customer " + args.CustomerID + " is on the " + plan + " plan.", nil
}

// model is a real model when a key is set, else the scripted one.
func model() ferrule.Model {
	name := os.Getenv("FERRULE_MODEL")
	pick := func(fallback string) string {
		if name != "" {
			return name
		}
		return fallback
	}
	switch {
	case os.Getenv("OPENAI_API_KEY") != "":
		return ferrule.Model{Provider: "openai", Name: pick("gpt-4.1-mini")}
	case os.Getenv("ANTHROPIC_API_KEY") != "":
		return ferrule.Model{Provider: "anthropic", Name: pick("claude-sonnet-4-5")}
	}
	return ferrule.Model{Provider: "scripted", Script: json.RawMessage(`[
		{"text": "Let me look that up.", "tool_calls": [
			{"id": "call_1", "name": "lookup_customer", "arguments": {"customer_id": "C-100"}}]},
		{"text": "C-100 is on the Gold plan."}]`)}
}

func main() {
	m := model()
	fmt.Printf("ferrule %s, model: %s %s\n", ferrule.Version(), m.Provider, m.Name)
	agent, err := ferrule.NewAgent(ferrule.Config{
		Model:        m,
		System:       "You are a helpful account assistant. Use the tools to answer.",
		BuiltinTools: &ferrule.BuiltinTools{Disable: true},
	}, ferrule.NewTool("lookup_customer", "Return the current plan for one customer ID.", lookupCustomer))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer agent.Close()
	run, err := agent.Start(context.Background(), ferrule.Prompt("Which plan does C-100 use?"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer run.Close()
	for event := range run.Events() {
		switch e := event.(type) {
		case *ferrule.ToolExecutionStartEvent:
			fmt.Printf("tool %s(%s)\n", e.Call.Name, e.Call.Arguments)
		case *ferrule.ToolExecutionEndEvent:
			fmt.Printf("  -> %s (error: %v)\n", strings.TrimSpace(e.Result.Text()), e.IsError)
		case *ferrule.RunEndEvent:
			fmt.Printf("run ended: %s\n", e.Status)
		}
	}
	result, err := run.Wait()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if result.Error != nil {
		fmt.Fprintln(os.Stderr, "the run failed:", result.Error)
		os.Exit(1)
	}
	fmt.Printf("answer: %s\n(%d rounds, %d input and %d output tokens)\n", result.Final.Text(), result.Rounds,
		result.Usage.InputTokens, result.Usage.OutputTokens)
}
