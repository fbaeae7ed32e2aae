package ferruletemporal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	ferrule "github.com/ferrule-dev/ferrule/bindings/go"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
)

// Activities run the steps and calls of the agents a worker registered, by
// name. Safe for concurrent activities, as ferrule agents are.
type Activities struct {
	agents map[string]*ferrule.Agent
}

// StepInput is what one step starts from: the first step's prompt or
// messages, or the state of the run the last step stopped, with the outcomes
// of the calls it returned or the decisions for the calls that wait.
type StepInput struct {
	Agent        string                      `json:"agent"`
	Prompt       string                      `json:"prompt,omitempty"`
	Messages     []ferrule.Message           `json:"messages,omitempty"`
	State        json.RawMessage             `json:"state,omitempty"`
	Results      map[string]json.RawMessage  `json:"results,omitempty"`
	Decisions    map[string]ferrule.Decision `json:"decisions,omitempty"`
	WithMessages bool                        `json:"with_messages,omitempty"`
	// StateLimit is Options.StateLimit.
	StateLimit int `json:"state_limit"`
}

// StepOutput is how a step stopped: the ferrule result (calls returned,
// interruptions, the state, or the end), the handoffs the run had made (the
// returned calls are tools of the agent they lead to), and the events it
// sent.
type StepOutput struct {
	Result   *ferrule.Result   `json:"result"`
	HandedTo []string          `json:"handed_to,omitempty"`
	Events   []json.RawMessage `json:"events,omitempty"`
}

// CallInput is one call a step returned, to run on the agent named, or the
// one its handoffs lead to.
type CallInput struct {
	Agent    string           `json:"agent"`
	Call     ferrule.ToolCall `json:"call"`
	HandedTo []string         `json:"handed_to,omitempty"`
}

// Step runs the run one step: the input's ferrule run, with its calls
// returned (ferrule.Input.ReturnCalls), to its next stop. A run ferrule
// refuses fails the activity for good; a model failure worth trying again
// (rate limits, overload, server and network errors) fails it for Temporal
// to retry; any other end is the step's output.
func (a *Activities) Step(ctx context.Context, in StepInput) (*StepOutput, error) {
	agent, err := a.agent(in.Agent)
	if err != nil {
		return nil, err
	}
	var input ferrule.Input
	switch {
	case len(in.State) > 0 && len(in.Decisions) > 0:
		input = ferrule.Resume(in.State, in.Decisions)
	case len(in.State) > 0:
		input = ferrule.ResumeWithResults(in.State, in.Results)
	case in.Messages != nil:
		input = ferrule.Messages(in.Messages...)
	default:
		input = ferrule.Prompt(in.Prompt)
	}
	input.ReturnCalls = true
	input.WithoutMessages = !in.WithMessages
	var events []json.RawMessage
	result, err := runBeating(ctx, agent, input, func(event ferrule.Event) {
		if kept(event) {
			if data, err := json.Marshal(ferrule.NestedEvent{Event: event}); err == nil {
				events = append(events, data)
			}
		}
	})
	if err != nil {
		return nil, err
	}
	if result.Status == ferrule.StatusFailed && result.Error != nil && worthRetrying(result.Error.Code) {
		return nil, temporal.NewApplicationError(result.Error.Message, "ferrule."+result.Error.Code.String())
	}
	if in.StateLimit > 0 && len(result.State) > in.StateLimit {
		return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf(
			"the run's state is %d bytes, over its limit of %d (Options.StateLimit): keep the transcript shorter "+
				"(a turn_start hook may replace the history) or compress payloads (DataConverter)",
			len(result.State), in.StateLimit), "ferrule.StateTooLarge", nil)
	}
	var handoffs struct {
		HandedTo []string `json:"handed_to"`
	}
	if len(result.Calls) > 0 {
		if err := json.Unmarshal(result.State, &handoffs); err != nil {
			return nil, temporal.NewNonRetryableApplicationError("the run's state is not JSON: "+err.Error(), "ferrule.BadState", err)
		}
	}
	return &StepOutput{Result: result, HandedTo: handoffs.HandedTo, Events: events}, nil
}

// Call runs one returned call (a ferrule.Invoke run, told which attempt this
// is) and returns its outcome for the step that resumes the run. Each
// progress update is sent as a heartbeat (its details the update's partial
// result). The tool's failure is an outcome, not an activity failure.
func (a *Activities) Call(ctx context.Context, in CallInput) (json.RawMessage, error) {
	agent, err := a.agent(in.Agent)
	if err != nil {
		return nil, err
	}
	attempt := int(activity.GetInfo(ctx).Attempt)
	result, err := runBeating(ctx, agent, ferrule.Invoke(in.Call, attempt, in.HandedTo...), func(event ferrule.Event) {
		if update, ok := event.(*ferrule.ToolExecutionUpdateEvent); ok {
			activity.RecordHeartbeat(ctx, update.Partial)
		}
	})
	if err != nil {
		return nil, err
	}
	if result.Status != ferrule.StatusCompleted || len(result.Outcome) == 0 {
		return nil, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("the call %s (%s) ended %s", in.Call.ID, in.Call.Name, result.Status), "ferrule.CallEnded", nil)
	}
	return result.Outcome, nil
}

// runBeating runs input on agent, each event to see, heartbeating all along:
// at least every third of the heartbeat timeout, so that a worker that dies
// is noticed and one that lives hears of the activity's cancellation (which
// cancels the run, and its tools). A cancelled activity returns its
// context's error.
func runBeating(ctx context.Context, agent *ferrule.Agent, input ferrule.Input, see func(ferrule.Event)) (*ferrule.Result, error) {
	run, err := agent.Start(ctx, input)
	if err != nil {
		var ferr *ferrule.Error
		if errors.As(err, &ferr) && ferr.Code == ferrule.CodeCancelled {
			return nil, ctx.Err()
		}
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), "ferrule.StartRefused", err)
	}
	defer run.Close()
	stop := beat(ctx)
	defer stop()
	for event := range run.Events() {
		see(event)
	}
	result, err := run.Wait()
	if err != nil {
		return nil, err
	}
	if result.Status == ferrule.StatusCancelled && ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return result, nil
}

// beat heartbeats every third of the activity's heartbeat timeout (every
// second without one) until stopped.
func beat(ctx context.Context) (stop func()) {
	every := activity.GetInfo(ctx).HeartbeatTimeout / 3
	if every <= 0 {
		every = time.Second
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		ticker := time.NewTicker(every)
		defer ticker.Stop()
		for {
			select {
			case <-ticker.C:
				activity.RecordHeartbeat(ctx)
			case <-done:
				return
			case <-ctx.Done():
				return
			}
		}
	}()
	return func() {
		close(done)
		wg.Wait()
	}
}

// kept says which of a step's events the workflow keeps for QueryEvents:
// not the streamed deltas, nor run_start and run_end (the workflow's own
// state says as much).
func kept(event ferrule.Event) bool {
	switch event.(type) {
	case *ferrule.MessageDeltaEvent, *ferrule.ToolCallDeltaEvent, *ferrule.RunStartEvent, *ferrule.RunEndEvent:
		return false
	}
	return true
}

// worthRetrying says which failures of a model request Temporal retries.
func worthRetrying(code ferrule.Code) bool {
	switch code {
	case ferrule.CodeProviderRateLimited, ferrule.CodeProviderOverloaded, ferrule.CodeProviderServer,
		ferrule.CodeProviderNetwork, ferrule.CodeTimeout:
		return true
	}
	return false
}

// agent is the agent registered as name.
func (a *Activities) agent(name string) (*ferrule.Agent, error) {
	agent, ok := a.agents[name]
	if !ok {
		return nil, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("this worker runs no agent %q", name), "ferrule.UnknownAgent", nil)
	}
	return agent, nil
}
