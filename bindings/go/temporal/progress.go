package ferruletemporal

import (
	"encoding/json"
	"sort"

	ferrule "github.com/ferrule-dev/ferrule/bindings/go"
	"go.temporal.io/sdk/workflow"
)

// progress is what the workflow knows of its run between steps: what the
// queries answer. Only the workflow's coroutine touches it.
type progress struct {
	usage      ferrule.Usage
	rounds     int
	steps      int
	events     []json.RawMessage
	eventCount int
	eventsKept int
	// pending are the calls that wait for a decision, while the run waits.
	pending []ferrule.Interruption
	// step is what every step input carries.
	step StepInput
}

func newProgress(req Request, options Options) *progress {
	run := &progress{
		eventsKept: options.EventsKept,
		step:       StepInput{Agent: req.Agent, WithMessages: options.WithMessages, PayloadLimit: options.PayloadLimit},
	}
	if carried := req.Carried; carried != nil {
		run.usage, run.rounds, run.steps = carried.Usage, carried.Rounds, carried.Steps
		run.events, run.eventCount = carried.Events, carried.EventCount
	}
	return run
}

// first is the step the workflow run begins with.
func (p *progress) first(req Request) StepInput {
	if req.Carried != nil {
		return req.Carried.Next
	}
	step := p.step
	step.Prompt, step.Messages = req.Prompt, req.Messages
	return step
}

// resume is the step that goes on from state with results or decisions.
func (p *progress) resume(state json.RawMessage, results map[string]json.RawMessage, decisions map[string]ferrule.Decision) StepInput {
	step := p.step
	step.State, step.Results, step.Decisions = state, results, decisions
	return step
}

// answerQueries registers the query handlers.
func (p *progress) answerQueries(ctx workflow.Context) error {
	if err := workflow.SetQueryHandler(ctx, QueryUsage, func() (ferrule.Usage, error) { return p.usage, nil }); err != nil {
		return err
	}
	if err := workflow.SetQueryHandler(ctx, QueryEvents, func() (Events, error) {
		return Events{Events: p.events, Count: p.eventCount}, nil
	}); err != nil {
		return err
	}
	return workflow.SetQueryHandler(ctx, QueryPending, func() ([]ferrule.Interruption, error) { return p.pending, nil })
}

// record takes in what a step did: the usage and rounds so far (ferrule counts
// them across resumes) and its events, of which the latest are kept.
func (p *progress) record(out StepOutput) {
	p.steps++
	p.usage, p.rounds = out.Result.Usage, out.Result.Rounds
	p.eventCount += len(out.Events)
	p.events = append(p.events, out.Events...)
	if extra := len(p.events) - p.eventsKept; extra > 0 {
		p.events = append([]json.RawMessage(nil), p.events[extra:]...)
	}
}

// decide waits until every call in waiting has a decision, taking each
// signal as it comes, and returns them; an error when the workflow is
// cancelled meanwhile. A decision for a call that does not wait is dropped,
// and logged.
func (p *progress) decide(ctx workflow.Context, signals workflow.ReceiveChannel, waiting []ferrule.Interruption) (map[string]ferrule.Decision, error) {
	p.pending = waiting
	defer func() { p.pending = nil }()
	waits := make(map[string]bool, len(waiting))
	for _, call := range waiting {
		waits[call.Key] = true
	}
	decisions := make(map[string]ferrule.Decision, len(waiting))
	for len(decisions) < len(waits) {
		var given map[string]ferrule.Decision
		selector := workflow.NewSelector(ctx)
		selector.AddReceive(signals, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, &given) })
		selector.AddReceive(ctx.Done(), func(workflow.ReceiveChannel, bool) {})
		selector.Select(ctx)
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		var dropped []string
		for key, decision := range given {
			if waits[key] {
				decisions[key] = decision
			} else {
				dropped = append(dropped, key)
			}
		}
		logDropped(ctx, dropped)
	}
	return decisions, nil
}

// dropStale reads the decisions signalled while no call waited, and drops
// them: they are for no call (one decided already, or a key mistyped).
func (p *progress) dropStale(ctx workflow.Context, signals workflow.ReceiveChannel) {
	var given map[string]ferrule.Decision
	for signals.ReceiveAsync(&given) {
		keys := make([]string, 0, len(given))
		for key := range given {
			keys = append(keys, key)
		}
		logDropped(ctx, keys)
		given = nil
	}
}

// logDropped logs the keys of decisions dropped, in order.
func logDropped(ctx workflow.Context, keys []string) {
	if len(keys) == 0 {
		return
	}
	sort.Strings(keys)
	workflow.GetLogger(ctx).Warn("ferrule: decisions for calls that do not wait were dropped", "keys", keys)
}

// carry is what the next workflow run needs to go on with next: the latest
// events as many as fit beside it in limit bytes (a quarter at most), with
// the rest.
func (p *progress) carry(next StepInput, limit int) *Carried {
	room := min(limit/4, limit-stepSize(next))
	events, size := p.events, 0
	for i := len(events) - 1; i >= 0; i-- {
		if size += len(events[i]); size > room {
			events = events[i+1:]
			break
		}
	}
	return &Carried{
		Next: next, Usage: p.usage, Rounds: p.rounds, Steps: p.steps,
		Events: events, EventCount: p.eventCount,
	}
}

// response is the workflow's result for a run that ended.
func (p *progress) response(result *ferrule.Result) *Response {
	return &Response{
		Status: result.Status, Final: result.Final, Output: result.Output, Usage: result.Usage,
		Rounds: result.Rounds, Error: result.Error, Agent: result.Agent, Messages: result.Messages, Steps: p.steps,
	}
}
