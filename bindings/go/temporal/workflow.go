package ferruletemporal

import (
	"encoding/json"
	"fmt"

	ferrule "github.com/ferrule-dev/ferrule/bindings/go"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// Request starts an agent run workflow: the agent's name (as the workers
// registered it), a prompt or a transcript, and the options.
type Request struct {
	// Agent is the name the workers registered the agent under.
	Agent string `json:"agent"`
	// Prompt starts the run from one user message, unless Messages is given.
	Prompt string `json:"prompt,omitempty"`
	// Messages starts the run from a transcript.
	Messages []ferrule.Message `json:"messages,omitempty"`
	// Options bound the activities and the workflow's growth.
	Options Options `json:"options"`
	// Carried is what a run that continued as new carries over; nil when a
	// client starts it.
	Carried *Carried `json:"carried,omitempty"`
}

// Carried is what one workflow run hands the next when it continues as new:
// the step to go on with, and what the queries answer.
type Carried struct {
	Next       StepInput         `json:"next"`
	Usage      ferrule.Usage     `json:"usage"`
	Rounds     int               `json:"rounds"`
	Steps      int               `json:"steps"`
	Events     []json.RawMessage `json:"events,omitempty"`
	EventCount int               `json:"event_count"`
}

// Response is how the run ended (any status but interrupted, which the
// workflow waits through).
type Response struct {
	Status   ferrule.Status    `json:"status"`
	Final    *ferrule.Message  `json:"final,omitempty"`
	Output   json.RawMessage   `json:"output,omitempty"`
	Usage    ferrule.Usage     `json:"usage"`
	Rounds   int               `json:"rounds"`
	Error    *ferrule.Error    `json:"error,omitempty"`
	Agent    string            `json:"agent,omitempty"`
	Messages []ferrule.Message `json:"messages,omitempty"`
	// Steps counts the workflow's steps, across continue-as-new.
	Steps int `json:"steps"`
}

// Events answers QueryEvents: the latest events (up to Options.EventsKept),
// and how many events the run's steps have reported in all.
type Events struct {
	Events []json.RawMessage `json:"events"`
	Count  int               `json:"count"`
}

// AgentRun is the workflow: step after step, each an activity, until the run
// ends. A step that returns calls runs each as an activity, all at once (the
// run returns no more than may run together); a step that stops for approval
// waits for SignalDecide until every waiting call has a decision. It reads
// nothing but its input, its activities' results and its signals, so it
// replays the same.
func AgentRun(ctx workflow.Context, req Request) (*Response, error) {
	options := req.Options.withDefaults()
	run := newProgress(req, options)
	if err := run.answerQueries(ctx); err != nil {
		return nil, err
	}
	// Read only in this coroutine, and only while calls wait: a decision
	// signalled at any other time is for no call, and dropped.
	signals := workflow.GetSignalChannel(ctx, SignalDecide)
	stepCtx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: options.StepTimeout,
		HeartbeatTimeout:    options.Heartbeat,
		RetryPolicy:         options.StepRetry,
		WaitForCancellation: true,
	})
	callCtx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: options.CallTimeout,
		HeartbeatTimeout:    options.Heartbeat,
		RetryPolicy:         options.CallRetry,
		WaitForCancellation: true,
	})
	next := run.first(req)
	for steps := 0; ; steps++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := withinStepLimit(next, options.PayloadLimit); err != nil {
			return nil, err
		}
		if steps > 0 && (steps >= options.StepsPerRun || workflow.GetInfo(ctx).GetContinueAsNewSuggested()) {
			run.dropStale(ctx, signals)
			req.Carried = run.carry(next, options.PayloadLimit)
			return nil, workflow.NewContinueAsNewError(ctx, WorkflowName, req)
		}
		var out StepOutput
		if err := workflow.ExecuteActivity(stepCtx, StepActivityName, next).Get(ctx, &out); err != nil {
			return nil, err
		}
		result := out.Result
		if result == nil {
			return nil, temporal.NewNonRetryableApplicationError("a step returned no result", "ferrule.NoResult", nil)
		}
		run.record(out)
		switch {
		case result.Status != ferrule.StatusInterrupted:
			return run.response(result), nil
		case len(result.Interruptions) > 0:
			// Decisions that came before the calls waited are for no call
			// (a repeated one for an earlier call of the same id).
			run.dropStale(ctx, signals)
			decisions, err := run.decide(ctx, signals, result.Interruptions)
			if err != nil {
				return nil, err
			}
			next = run.resume(result.State, nil, decisions)
		default:
			results, err := runCalls(ctx, callCtx, req.Agent, out.HandedTo, result.Calls, options.PayloadLimit)
			if err != nil {
				return nil, err
			}
			next = run.resume(result.State, results, nil)
		}
	}
}

// runCalls runs each call as an activity, all at once, and gathers their
// outcomes by call id once every one has ended. A call whose activity failed
// for good (its retries spent) is answered as its tool's failure, for the
// model to see; a cancelled workflow ends once its calls have.
func runCalls(ctx, callCtx workflow.Context, agent string, handedTo []string, calls []ferrule.ToolCall, limit int) (map[string]json.RawMessage, error) {
	futures := make([]workflow.Future, len(calls))
	for i, call := range calls {
		input := CallInput{Agent: agent, Call: call, HandedTo: handedTo, PayloadLimit: limit}
		futures[i] = workflow.ExecuteActivity(callCtx, CallActivityName, input)
	}
	results := make(map[string]json.RawMessage, len(calls))
	var cancelled error
	for i, future := range futures {
		var outcome json.RawMessage
		err := future.Get(ctx, &outcome)
		switch {
		case err == nil:
			results[calls[i].ID] = outcome
		case temporal.IsCanceledError(err) || ctx.Err() != nil:
			cancelled = err
		default:
			results[calls[i].ID] = ferrule.FailedOutcome(fmt.Sprintf("The call to %q could not be run: %v", calls[i].Name, err))
		}
	}
	if cancelled != nil {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		return nil, cancelled
	}
	return results, nil
}

// stepSize is how many bytes of JSON a step's input takes, near enough: its
// state and the calls' outcomes.
func stepSize(step StepInput) int {
	size := len(step.State) + len(step.Prompt)
	for _, outcome := range step.Results {
		size += len(outcome)
	}
	return size
}

// withinStepLimit fails the run for good when the next step's input would
// be over limit (the server would refuse it, obscurely).
func withinStepLimit(step StepInput, limit int) error {
	if size := stepSize(step); size > limit {
		return temporal.NewNonRetryableApplicationError(fmt.Sprintf(
			"the next step's input (the run's state and the calls' outcomes) takes %d bytes, over the limit of %d "+
				"(Options.PayloadLimit): keep the transcript and tool results shorter, or compress payloads "+
				"(DataConverter) and raise the limit", size, limit), "ferrule.PayloadTooLarge", nil)
	}
	return nil
}
