package ferruletemporal

import (
	"context"

	ferrule "github.com/ferrule-dev/ferrule/bindings/go"
	"go.temporal.io/sdk/client"
)

// Start starts an agent run workflow; options name its id and task queue.
// The request's options are written out whole (defaults filled in), so that
// a later version of this package, with other defaults, replays the run
// unchanged. Wait for its end with the returned run's Get (into a Response).
func Start(ctx context.Context, c client.Client, options client.StartWorkflowOptions, req Request) (client.WorkflowRun, error) {
	req.Options = req.Options.withDefaults()
	return c.ExecuteWorkflow(ctx, options, WorkflowName, req)
}

// Decide signals decisions for calls that wait for approval, keyed by the
// interruptions' keys (Pending lists them). It may come long after the call
// began to wait, with no worker up: the server keeps the signal for
// whichever worker holds the run by then. A decision for a call that does
// not wait when the workflow reads it (one decided already, a key mistyped)
// is dropped, and logged by the worker. An empty runID means the workflow's
// latest run.
func Decide(ctx context.Context, c client.Client, workflowID, runID string, decisions map[string]ferrule.Decision) error {
	return c.SignalWorkflow(ctx, workflowID, runID, SignalDecide, decisions)
}

// Pending asks the workflow which calls wait for a decision.
func Pending(ctx context.Context, c client.Client, workflowID, runID string) ([]ferrule.Interruption, error) {
	var pending []ferrule.Interruption
	return pending, query(ctx, c, workflowID, runID, QueryPending, &pending)
}

// Usage asks the workflow for the tokens its run used so far.
func Usage(ctx context.Context, c client.Client, workflowID, runID string) (ferrule.Usage, error) {
	var usage ferrule.Usage
	return usage, query(ctx, c, workflowID, runID, QueryUsage, &usage)
}

// LatestEvents asks the workflow for its run's latest events.
func LatestEvents(ctx context.Context, c client.Client, workflowID, runID string) (Events, error) {
	var events Events
	return events, query(ctx, c, workflowID, runID, QueryEvents, &events)
}

func query(ctx context.Context, c client.Client, workflowID, runID, name string, into any) error {
	value, err := c.QueryWorkflow(ctx, workflowID, runID, name)
	if err != nil {
		return err
	}
	return value.Get(into)
}
