package ferruletemporal

import (
	"encoding/json"

	ferrule "github.com/ferrule-dev/ferrule/bindings/go"
	"go.temporal.io/sdk/workflow"
)

// progress is what the workflow knows of its run between steps: what the
// queries answer, and the decisions signals brought. Only the workflow's
// coroutines touch it, one at a time.
type progress struct {
	usage      ferrule.Usage
	rounds     int
	steps      int
	events     []json.RawMessage
	eventCount int
	eventsKept int
	// pending are the calls that wait for a decision, while the run waits.
	pending []ferrule.Interruption
	// decisions are those signals gave that no step took yet.
	decisions map[string]ferrule.Decision
	// step is what every step input carries.
	step StepInput
}

func newProgress(req Request, options Options) *progress {
	run := &progress{
		eventsKept: options.EventsKept,
		decisions:  map[string]ferrule.Decision{},
		step:       StepInput{Agent: req.Agent, WithMessages: options.WithMessages, StateLimit: options.StateLimit},
	}
	if carried := req.Carried; carried != nil {
		run.usage, run.rounds, run.steps = carried.Usage, carried.Rounds, carried.Steps
		run.events, run.eventCount = carried.Events, carried.EventCount
		for key, decision := range carried.Decisions {
			run.decisions[key] = decision
		}
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

// take keeps the decisions a signal gave.
func (p *progress) take(given map[string]ferrule.Decision) {
	for key, decision := range given {
		p.decisions[key] = decision
	}
}

// decide waits until every call in waiting has a decision, and returns them
// (the others stay for a later interruption); an error when the workflow is
// cancelled meanwhile.
func (p *progress) decide(ctx workflow.Context, waiting []ferrule.Interruption) (map[string]ferrule.Decision, error) {
	p.pending = waiting
	defer func() { p.pending = nil }()
	decided := func() bool {
		for _, call := range waiting {
			if _, ok := p.decisions[call.Key]; !ok {
				return false
			}
		}
		return true
	}
	if err := workflow.Await(ctx, decided); err != nil {
		return nil, err
	}
	decisions := make(map[string]ferrule.Decision, len(waiting))
	for _, call := range waiting {
		decisions[call.Key] = p.decisions[call.Key]
		delete(p.decisions, call.Key)
	}
	return decisions, nil
}

// carry is what the next workflow run needs to go on with next.
func (p *progress) carry(next StepInput) *Carried {
	return &Carried{
		Next: next, Usage: p.usage, Rounds: p.rounds, Steps: p.steps,
		Events: p.events, EventCount: p.eventCount, Decisions: p.decisions,
	}
}

// response is the workflow's result for a run that ended.
func (p *progress) response(result *ferrule.Result) *Response {
	return &Response{
		Status: result.Status, Final: result.Final, Output: result.Output, Usage: result.Usage,
		Rounds: result.Rounds, Error: result.Error, Agent: result.Agent, Messages: result.Messages, Steps: p.steps,
	}
}
