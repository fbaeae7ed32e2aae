package ferrule

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The shared scenarios of tests/conformance, with every tool written in Go from
// the scenario's declarative behaviour (see tests/conformance/README.md).

type scenario struct {
	Description string          `json:"description"`
	Config      json.RawMessage `json:"config"`
	Tools       []scenarioTool  `json:"tools"`
	Hooks       []struct {
		Stages       []string          `json:"stages"`
		Decisions    []json.RawMessage `json:"decisions"`
		Async        bool              `json:"async"`
		NeverRespond bool              `json:"never_respond"`
	} `json:"hooks"`
	Input   json.RawMessage `json:"input"`
	Expect  expectation     `json:"expect"`
	Resumes []struct {
		NewAgent   bool                `json:"new_agent"`
		Tools      []scenarioTool      `json:"tools"`
		StatePatch map[string]any      `json:"state_patch"`
		Decisions  map[string]Decision `json:"decisions"`
		Expect     expectation         `json:"expect"`
		StartError *struct {
			Code     string `json:"code"`
			Contains string `json:"contains"`
		} `json:"start_error"`
	} `json:"resumes"`
}

type scenarioTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
	Options     json.RawMessage `json:"options"`
	Behaviour   behaviour       `json:"behaviour"`
}

type expectation struct {
	Status         Status           `json:"status"`
	ErrorCode      string           `json:"error_code"`
	Events         []string         `json:"events"`
	EventCounts    map[string]int   `json:"event_counts"`
	Transcript     json.RawMessage  `json:"transcript"`
	Results        []expectedResult `json:"results"`
	CancelHandlers *int32           `json:"cancel_handlers"`
	Output         json.RawMessage  `json:"output"`
	Interruptions  json.RawMessage  `json:"interruptions"`
	Rounds         *int             `json:"rounds"`
	Usage          json.RawMessage  `json:"usage"`
	HookCalls      json.RawMessage  `json:"hook_calls"`
}

type behaviour struct {
	Inject           *Message          `json:"inject"`
	SleepMS          int               `json:"sleep_ms"`
	Updates          []json.RawMessage `json:"updates"`
	Result           json.RawMessage   `json:"result"`
	ResultJSON       *string           `json:"result_json"`
	Echo             bool              `json:"echo"`
	Fail             *string           `json:"fail"`
	NeverComplete    bool              `json:"never_complete"`
	CompleteOnCancel bool              `json:"complete_on_cancel"`
}

type expectedResult struct {
	ToolCallID   string `json:"tool_call_id"`
	IsError      bool   `json:"is_error"`
	TextContains string `json:"text_contains"`
}

// options turns a scenario's tool options into ToolOptions; every Go tool is
// nonblocking anyway.
func options(t *testing.T, raw json.RawMessage) []ToolOption {
	var o struct {
		Execution   string `json:"execution"`
		TimeoutMS   int64  `json:"timeout_ms"`
		Deferred    bool   `json:"deferred"`
		Approval    bool   `json:"needs_approval"`
		Strict      bool   `json:"strict"`
		Nonblocking bool   `json:"nonblocking"`
		OnError     string `json:"on_error"`
	}
	if len(raw) > 0 {
		decoder := json.NewDecoder(strings.NewReader(string(raw)))
		decoder.DisallowUnknownFields()
		if err := decoder.Decode(&o); err != nil {
			t.Fatalf("tool options %s: %v", raw, err)
		}
	}
	var opts []ToolOption
	if o.Execution == "sequential" {
		opts = append(opts, Sequential())
	}
	if o.TimeoutMS > 0 {
		opts = append(opts, Timeout(time.Duration(o.TimeoutMS)*time.Millisecond))
	}
	if o.Deferred {
		opts = append(opts, Deferred())
	}
	if o.Approval {
		opts = append(opts, NeedsApproval())
	}
	if o.Strict {
		opts = append(opts, Strict())
	}
	if o.OnError == "fatal" {
		opts = append(opts, FailureIsFatal())
	}
	return opts
}

// scenarioRun is what a scenario's tools and hooks share with the runner.
type scenarioRun struct {
	cancelHandlers atomic.Int32
	// current is the run being checked, once Start returned it.
	current atomic.Pointer[Run]
	mu      sync.Mutex
	// hookCalls is every consultation of the current run: {"stage", "payload"}.
	hookCalls []map[string]any
}

// inject injects msg into the current run, waiting for the runner to have it.
func (s *scenarioRun) inject(msg Message) error {
	for s.current.Load() == nil {
		time.Sleep(time.Millisecond)
	}
	return s.current.Load().Inject(msg)
}

// hooks are the scenario's hooks in Go: one RawHook per stage named, answering
// with the scenario hook's decisions in order ({} once they run out).
func (sc *scenario) hooks(s *scenarioRun) []Hook {
	var hooks []Hook
	for _, spec := range sc.Hooks {
		next := new(atomic.Int32)
		spec := spec
		for _, stage := range spec.Stages {
			hooks = append(hooks, RawHook(stage, func(ctx context.Context, payload json.RawMessage) (json.RawMessage, error) {
				var decoded any
				_ = json.Unmarshal(payload, &decoded)
				s.mu.Lock()
				s.hookCalls = append(s.hookCalls, map[string]any{"stage": stage, "payload": decoded})
				s.mu.Unlock()
				if spec.NeverRespond {
					<-ctx.Done()
					s.cancelHandlers.Add(1)
					return json.RawMessage("{}"), nil
				}
				if i := int(next.Add(1)) - 1; i < len(spec.Decisions) {
					return spec.Decisions[i], nil
				}
				return json.RawMessage("{}"), nil
			}))
		}
	}
	return hooks
}

// jsonContains says whether got has everything want has: objects by key (more
// keys allowed), arrays element by element, other values equal.
func jsonContains(want, got any) bool {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return false
		}
		for key, value := range w {
			if !jsonContains(value, g[key]) {
				return false
			}
		}
		return true
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return false
		}
		for i := range w {
			if !jsonContains(w[i], g[i]) {
				return false
			}
		}
		return true
	default:
		return reflect.DeepEqual(want, got)
	}
}

// perform is a behaviour as a tool function.
func perform(b behaviour, s *scenarioRun) func(context.Context, *Call, json.RawMessage) (any, error) {
	return func(ctx context.Context, call *Call, args json.RawMessage) (any, error) {
		if b.Inject != nil {
			if err := s.inject(*b.Inject); err != nil {
				return nil, err
			}
		}
		if b.CompleteOnCancel || b.NeverComplete {
			<-ctx.Done()
			if b.CompleteOnCancel {
				s.cancelHandlers.Add(1)
				return "stopped after cancellation", nil
			}
			return "completed after cancellation", nil
		}
		time.Sleep(time.Duration(b.SleepMS) * time.Millisecond)
		for _, update := range b.Updates {
			if err := call.Update(RawResult(update)); err != nil {
				return nil, err
			}
		}
		switch {
		case b.Fail != nil:
			return nil, errors.New(*b.Fail)
		case b.ResultJSON != nil:
			return RawResult(*b.ResultJSON), nil
		case b.Echo:
			return string(args), nil
		default:
			return RawResult(b.Result), nil
		}
	}
}

func TestConformanceScenarios(t *testing.T) {
	paths, err := filepath.Glob("../../tests/conformance/*.json")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no scenarios found: %v", err)
	}
	sort.Strings(paths)
	for _, path := range paths {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".json"), func(t *testing.T) {
			t.Parallel()
			runScenario(t, path)
		})
	}
}

func runScenario(t *testing.T, path string) {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var sc scenario
	if err := json.Unmarshal(data, &sc); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	shared := &scenarioRun{}
	build := func(specs []scenarioTool) *Agent {
		var tools []Tool
		for _, tool := range specs {
			tools = append(tools, NewRawTool(tool.Name, tool.Description, tool.InputSchema,
				perform(tool.Behaviour, shared), options(t, tool.Options)...))
		}
		agent, err := NewAgentFromJSONWithHooks(sc.Config, sc.hooks(shared), tools...)
		if err != nil {
			t.Fatalf("agent: %v", err)
		}
		return agent
	}
	agent := build(sc.Tools)
	defer agent.Close()
	result := runStep(t, agent, scenarioInput(t, sc.Input), sc.Expect, shared)
	// Each resume step goes on from the last state a run gave.
	for i, step := range sc.Resumes {
		if result == nil || result.State == nil || string(result.State) == "null" {
			t.Fatalf("resume %d: no state to resume from", i)
		}
		state := result.State
		if step.StatePatch != nil {
			var fields map[string]any
			if err := json.Unmarshal(state, &fields); err != nil {
				t.Fatal(err)
			}
			for key, value := range step.StatePatch {
				fields[key] = value
			}
			state, _ = json.Marshal(fields)
		}
		on := agent
		if step.NewAgent {
			specs := step.Tools
			if specs == nil {
				specs = sc.Tools
			}
			on = build(specs)
		}
		input := Resume(state, step.Decisions)
		if step.StartError != nil {
			_, err := on.Start(context.Background(), input)
			var ferr *Error
			if !errors.As(err, &ferr) || ferr.Code.String() != step.StartError.Code ||
				!strings.Contains(ferr.Message, step.StartError.Contains) {
				t.Errorf("resume %d: start gave %v, expected %s containing %q", i, err,
					step.StartError.Code, step.StartError.Contains)
			}
		} else {
			result = runStep(t, on, input, step.Expect, shared)
		}
		if on != agent {
			on.Close()
		}
	}
}

// scenarioInput is the scenario's input, its "tools" given as Input.Tools.
func scenarioInput(t *testing.T, raw json.RawMessage) Input {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		t.Fatal(err)
	}
	var tools []string
	if list, ok := fields["tools"]; ok {
		if err := json.Unmarshal(list, &tools); err != nil {
			t.Fatal(err)
		}
		delete(fields, "tools")
	}
	data, _ := json.Marshal(fields)
	return Input{json: data, Tools: tools}
}

// runStep runs input on agent and checks the run against expect.
func runStep(t *testing.T, agent *Agent, input Input, expect expectation, s *scenarioRun) *Result {
	t.Helper()
	s.cancelHandlers.Store(0)
	s.mu.Lock()
	s.hookCalls = nil
	s.mu.Unlock()
	run, err := agent.Start(context.Background(), input)
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	defer run.Close()
	s.current.Store(run)
	defer s.current.Store(nil)
	var events []Event
	for event := range run.Events() {
		events = append(events, event)
	}
	result, err := run.Wait()
	if err != nil {
		t.Fatalf("wait: %v", err)
	}
	checkInvariants(t, events)
	if result.Status != expect.Status {
		t.Errorf("status %s, expected %s (error %v)", result.Status, expect.Status, result.Error)
	}
	if expect.ErrorCode != "" && (result.Error == nil || result.Error.Code.String() != expect.ErrorCode) {
		t.Errorf("error %v, expected code %s", result.Error, expect.ErrorCode)
	}
	if expect.Events != nil {
		var types []string
		for _, event := range events {
			types = append(types, event.EventType())
		}
		if !reflect.DeepEqual(types, expect.Events) {
			t.Errorf("events %v, expected %v", types, expect.Events)
		}
	}
	for kind, want := range expect.EventCounts {
		if got := countType(events, kind); got != want {
			t.Errorf("%d %s events, expected %d", got, kind, want)
		}
	}
	if expect.Transcript != nil {
		var want []Message
		if err := json.Unmarshal(expect.Transcript, &want); err != nil {
			t.Fatalf("expected transcript: %v", err)
		}
		if !reflect.DeepEqual(result.Messages, want) {
			got, _ := json.Marshal(result.Messages)
			t.Errorf("transcript differs; got %s", got)
		}
	}
	if expect.Results != nil {
		var got []Message
		for _, message := range result.Messages {
			if message.Role == "tool" {
				got = append(got, message)
			}
		}
		if len(got) != len(expect.Results) {
			t.Fatalf("%d tool results, expected %d", len(got), len(expect.Results))
		}
		for i, want := range expect.Results {
			if got[i].ToolCallID != want.ToolCallID || got[i].IsError != want.IsError ||
				!strings.Contains(got[i].Text(), want.TextContains) {
				t.Errorf("result %d: %s error=%v %q, expected %s error=%v containing %q", i, got[i].ToolCallID,
					got[i].IsError, got[i].Text(), want.ToolCallID, want.IsError, want.TextContains)
			}
		}
	}
	if expect.Output != nil && !sameJSON(t, expect.Output, result.Output) {
		t.Errorf("output %s, expected %s", result.Output, expect.Output)
	}
	if expect.Interruptions != nil {
		got, _ := json.Marshal(result.Interruptions)
		if !sameJSON(t, expect.Interruptions, got) {
			t.Errorf("interruptions %s, expected %s", got, expect.Interruptions)
		}
	}
	if expect.Rounds != nil && result.Rounds != *expect.Rounds {
		t.Errorf("%d rounds, expected %d", result.Rounds, *expect.Rounds)
	}
	if expect.Usage != nil {
		got, _ := json.Marshal(result.Usage)
		if !sameJSON(t, expect.Usage, got) {
			t.Errorf("usage %s, expected %s", got, expect.Usage)
		}
	}
	if expect.HookCalls != nil {
		var want any
		if err := json.Unmarshal(expect.HookCalls, &want); err != nil {
			t.Fatal(err)
		}
		s.mu.Lock()
		got, _ := json.Marshal(s.hookCalls)
		s.mu.Unlock()
		var calls any
		_ = json.Unmarshal(got, &calls)
		if !jsonContains(want, calls) {
			t.Errorf("hook calls differ; got %s", got)
		}
	}
	if expect.CancelHandlers != nil {
		// Handlers run on goroutines of their own; the run may end first.
		deadline := time.Now().Add(10 * time.Second)
		for s.cancelHandlers.Load() < *expect.CancelHandlers && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		if got := s.cancelHandlers.Load(); got != *expect.CancelHandlers {
			t.Errorf("%d cancel handlers ran, expected %d", got, *expect.CancelHandlers)
		}
	}
	return result
}

func countType(events []Event, kind string) int {
	n := 0
	for _, event := range events {
		if event.EventType() == kind {
			n++
		}
	}
	return n
}

// checkInvariants holds for every run: run_start first, one run_end last,
// balanced tool executions and turns, every event of this run.
func checkInvariants(t *testing.T, events []Event) {
	t.Helper()
	if len(events) == 0 || events[0].EventType() != "run_start" || events[len(events)-1].EventType() != "run_end" {
		t.Fatalf("events do not open with run_start and close with run_end: %d events", len(events))
	}
	if n := countType(events, "run_end"); n != 1 {
		t.Errorf("%d run_end events", n)
	}
	if countType(events, "tool_execution_start") != countType(events, "tool_execution_end") {
		t.Errorf("unbalanced tool executions")
	}
	if countType(events, "turn_start") != countType(events, "turn_end") {
		t.Errorf("unbalanced turns")
	}
	for _, event := range events {
		if event.RunID() != events[0].RunID() {
			t.Errorf("an event of run %s among run %s's", event.RunID(), events[0].RunID())
		}
		if unknown, ok := event.(*UnknownEvent); ok {
			t.Errorf("an event this package does not know: %s", unknown.Raw)
		}
	}
}

// sameJSON compares two JSON texts by value (absent counts as null).
func sameJSON(t *testing.T, a, b json.RawMessage) bool {
	t.Helper()
	var x, y any
	for _, pair := range []struct {
		raw json.RawMessage
		out *any
	}{{a, &x}, {b, &y}} {
		if len(pair.raw) == 0 {
			continue
		}
		if err := json.Unmarshal(pair.raw, pair.out); err != nil {
			t.Fatalf("%s: %v", pair.raw, err)
		}
	}
	return reflect.DeepEqual(x, y)
}
