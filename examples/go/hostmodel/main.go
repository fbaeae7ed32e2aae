// The lookup_customer example on a model the host runs ("provider": "host"):
// pocketEngine, a stand-in for an on-device or local engine written in Go,
// reads each request's new messages and streams its answer. Its first answer
// calls the Go tool lookup_customer; its second says what the tool found.
// Everything after the model (the call's validation, the tool, the events) is
// ferrule's, as with any provider. Run it in examples/go with
// `go run ./hostmodel` (after `make lib`); `make test-go` runs it.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	ferrule "github.com/ferrule-dev/ferrule/bindings/go"
)

type lookupArgs struct {
	CustomerID string `json:"customer_id" jsonschema:"Customer ID such as C-100"`
}

// account is what lookup_customer finds, sent to the model as JSON text.
type account struct {
	CustomerID string `json:"customer_id"`
	Plan       string `json:"plan"`
}

var plans = map[string]string{"C-100": "Gold", "C-200": "Silver"}

func lookupCustomer(ctx context.Context, call *ferrule.Call, args lookupArgs) (account, error) {
	plan, ok := plans[args.CustomerID]
	if !ok {
		return account{}, fmt.Errorf("no customer %s", args.CustomerID)
	}
	return account{CustomerID: args.CustomerID, Plan: plan}, nil
}

// pocketEngine is the model. ferrule calls Generate on a goroutine of its own
// for each request; it reads only the messages the engine has not seen (an
// engine that keeps its own cache of the conversation reads no more).
type pocketEngine struct{}

func (pocketEngine) Generate(ctx context.Context, request *ferrule.ModelRequest, out *ferrule.ModelOutput) error {
	fresh, err := request.NewMessages()
	if err != nil {
		return err
	}
	return errors.Join(answer(fresh, out), out.Usage(ferrule.Usage{InputTokens: 12, OutputTokens: 8}))
}

// answer streams the answer to the new messages: what lookup_customer found
// when they hold its result, else a call of it.
func answer(fresh []ferrule.Message, out *ferrule.ModelOutput) error {
	for _, message := range fresh {
		if message.Role == "tool" {
			var found account
			if err := json.Unmarshal([]byte(message.Text()), &found); err != nil {
				return err
			}
			return errors.Join(out.Text(found.CustomerID+" is on the "), out.Text(found.Plan), out.Text(" plan."))
		}
	}
	// A call in pieces, without an id: ferrule makes one up.
	return errors.Join(out.Text("Let me look that up. "),
		out.ToolCall(0, "", "lookup_customer", `{"customer_id":`), out.ToolCall(0, "", "", `"C-100"}`))
}

func main() {
	m := ferrule.Model{Provider: "host", Name: "pocket-engine", Host: pocketEngine{}}
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
		case *ferrule.MessageDeltaEvent:
			fmt.Printf("text %q\n", e.Text)
		case *ferrule.ToolCallDeltaEvent:
			fmt.Printf("call %d %q %s\n", e.Index, e.Name, e.ArgumentsDelta)
		case *ferrule.ToolExecutionStartEvent:
			fmt.Printf("tool %s(%s), id %s\n", e.Call.Name, e.Call.Arguments, e.Call.ID)
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
