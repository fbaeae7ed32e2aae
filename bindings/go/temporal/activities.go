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
	// PayloadLimit is Options.PayloadLimit.
	PayloadLimit int `json:"payload_limit"`
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
	// PayloadLimit is Options.PayloadLimit.
	PayloadLimit int `json:"payload_limit"`
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
	result, err := runBeating(ctx, agent, input, func(event ferrule.Event, _ *heartbeat) {
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
	var handoffs struct {
		HandedTo []string `json:"handed_to"`
	}
	if len(result.Calls) > 0 {
		if err := json.Unmarshal(result.State, &handoffs); err != nil {
			return nil, temporal.NewNonRetryableApplicationError("the run's state is not JSON: "+err.Error(), "ferrule.BadState", err)
		}
	}
	out := &StepOutput{Result: result, HandedTo: handoffs.HandedTo, Events: events}
	if err := withinLimit(out, in.PayloadLimit, "the step's output (the run's state and events)"); err != nil {
		return nil, err
	}
	return out, nil
}

// withinLimit fails for good when output's JSON takes more than limit bytes
// (none when limit is 0).
func withinLimit(output any, limit int, what string) error {
	if limit <= 0 {
		return nil
	}
	data, err := json.Marshal(output)
	if err != nil {
		return temporal.NewNonRetryableApplicationError(what+" is not JSON: "+err.Error(), "ferrule.BadOutput", err)
	}
	if len(data) <= limit {
		return nil
	}
	return temporal.NewNonRetryableApplicationError(fmt.Sprintf(
		"%s takes %d bytes, over the limit of %d (Options.PayloadLimit): keep the transcript shorter "+
			"(a turn_start hook may replace the history), keep tool results shorter (max_tool_result_bytes), "+
			"or compress payloads (DataConverter) and raise the limit", what, len(data), limit), "ferrule.PayloadTooLarge", nil)
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
	result, err := runBeating(ctx, agent, ferrule.Invoke(in.Call, attempt, in.HandedTo...), func(event ferrule.Event, beat *heartbeat) {
		if update, ok := event.(*ferrule.ToolExecutionUpdateEvent); ok {
			beat.record(update.Partial)
		}
	})
	if err != nil {
		return nil, err
	}
	if result.Status != ferrule.StatusCompleted || len(result.Outcome) == 0 {
		return nil, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("the call %s (%s) ended %s", in.Call.ID, in.Call.Name, result.Status), "ferrule.CallEnded", nil)
	}
	if err := withinLimit(result.Outcome, in.PayloadLimit, fmt.Sprintf("the outcome of call %s (%s)", in.Call.ID, in.Call.Name)); err != nil {
		return nil, err
	}
	return result.Outcome, nil
}

// runBeating runs input on agent, each event to see, heartbeating all along:
// at least every third of the heartbeat timeout, so that a worker that dies
// is noticed and one that lives hears of the activity's cancellation (which
// cancels the run, and its tools). A cancelled activity returns its
// context's error; a start ferrule refuses for the input fails for good, one
// it refuses for want of threads or while shutting down is tried again.
func runBeating(ctx context.Context, agent *ferrule.Agent, input ferrule.Input, see func(ferrule.Event, *heartbeat)) (*ferrule.Result, error) {
	run, err := agent.Start(ctx, input)
	if err != nil {
		var ferr *ferrule.Error
		switch {
		case errors.As(err, &ferr) && ferr.Code == ferrule.CodeCancelled && ctx.Err() != nil:
			return nil, ctx.Err()
		case errors.As(err, &ferr) && (ferr.Code == ferrule.CodeResourceExhausted || ferr.Code == ferrule.CodeShutdown):
			return nil, temporal.NewApplicationError(err.Error(), "ferrule."+ferr.Code.String())
		}
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), "ferrule.StartRefused", err)
	}
	defer run.Close()
	beat := startBeating(ctx)
	defer beat.stop()
	for event := range run.Events() {
		see(event, beat)
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

// heartbeat heartbeats an activity every third of its heartbeat timeout
// (every second without one), with the details last recorded, until stopped.
type heartbeat struct {
	ctx     context.Context
	mu      sync.Mutex
	details any
	done    chan struct{}
	wg      sync.WaitGroup
}

func startBeating(ctx context.Context) *heartbeat {
	every := activity.GetInfo(ctx).HeartbeatTimeout / 3
	if every <= 0 {
		every = time.Second
	}
	h := &heartbeat{ctx: ctx, done: make(chan struct{})}
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		ticker := time.NewTicker(every)
		defer ticker.Stop()
		for {
			select {
			case <-ticker.C:
				// Under the lock: a newer update is not overtaken by an older.
				h.mu.Lock()
				h.send(h.details)
				h.mu.Unlock()
			case <-h.done:
				// Not on cancellation: the run ends its tools first, and the
				// server waits for the activity meanwhile.
				return
			}
		}
	}()
	return h
}

// record heartbeats now with details, which the later beats repeat.
func (h *heartbeat) record(details any) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.details = details
	h.send(details)
}

func (h *heartbeat) send(details any) {
	if details == nil {
		activity.RecordHeartbeat(h.ctx)
		return
	}
	activity.RecordHeartbeat(h.ctx, details)
}

// stop ends the beats and waits for the goroutine.
func (h *heartbeat) stop() {
	close(h.done)
	h.wg.Wait()
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
	// Not TIMEOUT: a run's or a hook's timeout comes again on every attempt.
	switch code {
	case ferrule.CodeProviderRateLimited, ferrule.CodeProviderOverloaded, ferrule.CodeProviderServer,
		ferrule.CodeProviderNetwork:
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
