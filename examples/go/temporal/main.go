// A durable agent run on Temporal: an account assistant that looks a customer
// up and emails them, the email waiting for a human's approval. Every model
// request and every call is an activity; the approval is a signal, which may
// come long after the worker that stopped for it is gone.
//
//	temporal demo                    a worker and a run in this process, approved at once
//	temporal worker                  a worker, until interrupted
//	temporal start <id> [prompt]     starts a run
//	temporal pending <id>            the calls that wait for a decision
//	temporal decide <id> <key> yes|no
//	temporal wait <id>               waits for the run's end and prints it
//
// The server is at FERRULE_TEMPORAL_ADDRESS (default localhost:7233, as
// `temporal server start-dev` serves), namespace FERRULE_TEMPORAL_NAMESPACE
// (default "default"). The scripted model drives the agent unless
// OPENAI_API_KEY is set.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"time"

	ferrule "github.com/ferrule-dev/ferrule/bindings/go"
	ferruletemporal "github.com/ferrule-dev/ferrule/bindings/go/temporal"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
)

const (
	queue = "ferrule-example"
	agent = "accounts"
)

type lookupArgs struct {
	CustomerID string `json:"customer_id" jsonschema:"Customer ID such as C-100"`
}

type emailArgs struct {
	To   string `json:"to" jsonschema:"The customer ID to write to"`
	Body string `json:"body"`
}

// accounts is the agent every worker runs: the same configuration and tools.
func accounts() (*ferrule.Agent, error) {
	lookup := ferrule.NewTool("lookup_customer", "Return the current plan for one customer ID.",
		func(ctx context.Context, call *ferrule.Call, args lookupArgs) (string, error) {
			return "Customer " + args.CustomerID + " is on the Gold plan.", nil
		})
	// An email must go once: a second attempt (its worker died after sending)
	// would look up the first's by the call id before sending again.
	email := ferrule.NewTool("send_email", "Email a customer.",
		func(ctx context.Context, call *ferrule.Call, args emailArgs) (string, error) {
			return fmt.Sprintf("Sent to %s (call %s, attempt %d).", args.To, call.ID(), call.Attempt()), nil
		}, ferrule.NeedsApproval())
	model := ferrule.Model{Provider: "scripted", Script: json.RawMessage(`[
		{"tool_calls": [{"id": "call_1", "name": "lookup_customer", "arguments": {"customer_id": "C-100"}}]},
		{"tool_calls": [{"id": "call_2", "name": "send_email", "arguments": {"to": "C-100", "body": "You are on the Gold plan."}}]},
		{"text": "C-100 is on the Gold plan; I emailed them."}]`)}
	if os.Getenv("OPENAI_API_KEY") != "" {
		model = ferrule.Model{Provider: "openai", Name: "gpt-4.1-mini"}
	}
	return ferrule.NewAgent(ferrule.Config{
		Model:        model,
		System:       "You are an account assistant. Look customers up and email them their plan.",
		BuiltinTools: &ferrule.BuiltinTools{Disable: true},
	}, lookup, email)
}

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "temporal:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("give a command: demo, worker, start, pending, decide or wait")
	}
	c, err := client.Dial(client.Options{HostPort: env("FERRULE_TEMPORAL_ADDRESS", "localhost:7233"),
		Namespace: env("FERRULE_TEMPORAL_NAMESPACE", "default"),
		// The SDK's warnings and errors only.
		Logger: log.NewStructuredLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))})
	if err != nil {
		return err
	}
	defer c.Close()
	ctx := context.Background()
	switch command, rest := args[0], args[1:]; {
	case command == "demo":
		return demo(ctx, c)
	case command == "worker":
		return runWorker(c, worker.InterruptCh())
	case command == "start" && len(rest) >= 1:
		prompt := "Tell C-100 their plan by email."
		if len(rest) > 1 {
			prompt = rest[1]
		}
		_, err := ferruletemporal.Start(ctx, c, client.StartWorkflowOptions{ID: rest[0], TaskQueue: queue},
			ferruletemporal.Request{Agent: agent, Prompt: prompt})
		return err
	case command == "pending" && len(rest) == 1:
		pending, err := ferruletemporal.Pending(ctx, c, rest[0], "")
		for _, call := range pending {
			fmt.Printf("%s: %s %s\n", call.Key, call.Name, call.Arguments)
		}
		return err
	case command == "decide" && len(rest) == 3:
		return ferruletemporal.Decide(ctx, c, rest[0], "", map[string]ferrule.Decision{rest[1]: {Approve: rest[2] == "yes"}})
	case command == "wait" && len(rest) == 1:
		return wait(ctx, c, c.GetWorkflow(ctx, rest[0], ""), false)
	}
	return fmt.Errorf("unknown command or arguments: %q", args)
}

// runWorker runs a worker of the example's queue until stop.
func runWorker(c client.Client, stop <-chan any) error {
	accounts, err := accounts()
	if err != nil {
		return err
	}
	defer accounts.Close()
	w := worker.New(c, queue, worker.Options{})
	ferruletemporal.Register(w, map[string]*ferrule.Agent{agent: accounts})
	return w.Run(stop)
}

// demo runs a worker and a run here: the email waits for approval, which
// this process then gives.
func demo(ctx context.Context, c client.Client) error {
	stop := make(chan any)
	worked := make(chan error, 1)
	go func() { worked <- runWorker(c, stop) }()
	defer func() { close(stop); <-worked }()
	id := fmt.Sprintf("ferrule-demo-%d", time.Now().UnixNano())
	run, err := ferruletemporal.Start(ctx, c, client.StartWorkflowOptions{ID: id, TaskQueue: queue},
		ferruletemporal.Request{Agent: agent, Prompt: "Tell C-100 their plan by email."})
	if err != nil {
		return err
	}
	fmt.Println("started", id)
	for {
		pending, err := ferruletemporal.Pending(ctx, c, id, "")
		if err != nil {
			return err
		}
		if len(pending) > 0 {
			for _, call := range pending {
				fmt.Printf("waits for approval: %s %s\n", call.Name, call.Arguments)
				if err := ferruletemporal.Decide(ctx, c, id, "", map[string]ferrule.Decision{call.Key: {Approve: true}}); err != nil {
					return err
				}
				fmt.Println("approved", call.Key)
			}
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	return wait(ctx, c, run, true)
}

// wait waits for a run's end and prints its answer and usage, and with
// calls the calls that ended (a query, which a worker answers).
func wait(ctx context.Context, c client.Client, run client.WorkflowRun, calls bool) error {
	var res ferruletemporal.Response
	if err := run.Get(ctx, &res); err != nil {
		return err
	}
	var events ferruletemporal.Events
	if calls {
		var err error
		if events, err = ferruletemporal.LatestEvents(ctx, c, run.GetID(), ""); err != nil {
			return err
		}
	}
	for _, event := range events.Events {
		var kind struct {
			Type   string `json:"type"`
			CallID string `json:"call_id"`
		}
		if json.Unmarshal(event, &kind) == nil && kind.Type == "tool_execution_end" {
			fmt.Println("call ended:", kind.CallID)
		}
	}
	answer := ""
	if res.Final != nil {
		answer = res.Final.Text()
	}
	fmt.Printf("status: %s, rounds: %d, steps: %d, tokens: %d in, %d out\nanswer: %s\n",
		res.Status, res.Rounds, res.Steps, res.Usage.InputTokens, res.Usage.OutputTokens, answer)
	return nil
}

func env(name, fallback string) string {
	if value := os.Getenv(name); value != "" {
		return value
	}
	return fallback
}
