package ferrule

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The Go runner of the shared scenarios of tests/conformance: every tool and
// hook is written in Go from the scenario's declared behaviour, each run is
// observed through this package's types, and the one judge
// (ferrule-conformance, tests/conformance/README.md) decides.

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
	Agents []scenarioAgent `json:"agents"`
	// Trace: the scenario holds the process's tracer while it runs.
	Trace   bool            `json:"trace"`
	Input   json.RawMessage `json:"input"`
	Expect  expectation     `json:"expect"`
	Resumes []struct {
		NewAgent   bool                `json:"new_agent"`
		Tools      []scenarioTool      `json:"tools"`
		StatePatch map[string]any      `json:"state_patch"`
		Decisions  map[string]Decision `json:"decisions"`
		// RunReturned runs the calls the last run returned, each an Invoke
		// run (the attempt given), and resumes with their outcomes.
		RunReturned *struct {
			Attempt int `json:"attempt"`
		} `json:"run_returned"`
		Expect expectation `json:"expect"`
	} `json:"resumes"`
}

// scenarioAgent is an agent a scenario's agent (or one of its agents) is
// offered, as a tool or a handoff.
type scenarioAgent struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Mode        string          `json:"mode"`
	Options     json.RawMessage `json:"options"`
	Config      json.RawMessage `json:"config"`
	Tools       []scenarioTool  `json:"tools"`
	Agents      []scenarioAgent `json:"agents"`
}

type scenarioTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
	Options     json.RawMessage `json:"options"`
	Behaviour   behaviour       `json:"behaviour"`
}

// expectation is what the runner reads of a step's expectations: how many
// cancel handlers to wait for before counting them, and whether to observe
// the cassette's unused exchanges.
type expectation struct {
	CancelHandlers   *int32          `json:"cancel_handlers"`
	UnusedRecordings json.RawMessage `json:"unused_recordings"`
}

type behaviour struct {
	Inject           *Message          `json:"inject"`
	SleepMS          int               `json:"sleep_ms"`
	Updates          []json.RawMessage `json:"updates"`
	Result           json.RawMessage   `json:"result"`
	ResultJSON       *string           `json:"result_json"`
	Echo             bool              `json:"echo"`
	Attempt          bool              `json:"attempt"`
	Fail             *string           `json:"fail"`
	NeverComplete    bool              `json:"never_complete"`
	CompleteOnCancel bool              `json:"complete_on_cancel"`
	Traceparent      bool              `json:"traceparent"`
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
	// traceparents is what each call of the current run was given, by call id.
	traceparents map[string]string
	// traced: the scenario holds the tracer, which keeps every span in spans.
	traced bool
	spans  [][]byte
}

// traceOf is the spans of the trace of the run runID, once its invoke_agent
// span came (the last of a trace to end; up to 10 s), in the order they ended.
func (s *scenarioRun) traceOf(runID string) []json.RawMessage {
	type span struct {
		TraceID    string `json:"trace_id"`
		Attributes struct {
			Run string `json:"ferrule.run.id"`
		} `json:"attributes"`
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		s.mu.Lock()
		parsed := make([]span, len(s.spans))
		for i, data := range s.spans {
			_ = json.Unmarshal(data, &parsed[i])
		}
		var trace []json.RawMessage
		for _, root := range parsed {
			if root.Attributes.Run != runID {
				continue
			}
			for i, other := range parsed {
				if other.TraceID == root.TraceID {
					trace = append(trace, s.spans[i])
				}
			}
		}
		s.mu.Unlock()
		if trace != nil {
			return trace
		}
	}
	return []json.RawMessage{}
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

// perform is a behaviour as a tool function.
func perform(b behaviour, s *scenarioRun) func(context.Context, *Call, json.RawMessage) (any, error) {
	return func(ctx context.Context, call *Call, args json.RawMessage) (any, error) {
		if b.Traceparent {
			s.mu.Lock()
			s.traceparents[call.ID()] = call.Traceparent()
			s.mu.Unlock()
		}
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
		case b.Attempt:
			return fmt.Sprintf("attempt %d", call.Attempt()), nil
		default:
			return RawResult(b.Result), nil
		}
	}
}

// TestConformanceScenarios runs every scenario, writes each observation to
// FERRULE_OBSERVATIONS (a temporary directory when unset) and has the judge
// (FERRULE_JUDGE, by default the one `make judge` builds) decide.
func TestConformanceScenarios(t *testing.T) {
	runConformance(t, os.Getenv("FERRULE_OBSERVATIONS"), false)
}

// TestConformanceScenariosOnAHostModel runs every scenario with each scripted
// model replaced by a Go HostModel replaying its script, into
// FERRULE_OBSERVATIONS-host-model, judged by the same expectations.
func TestConformanceScenariosOnAHostModel(t *testing.T) {
	out := os.Getenv("FERRULE_OBSERVATIONS")
	if out != "" {
		out += "-host-model"
	}
	runConformance(t, out, true)
}

func runConformance(t *testing.T, out string, hostModel bool) {
	paths, err := filepath.Glob("../../tests/conformance/*.json")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no scenarios found: %v", err)
	}
	sort.Strings(paths)
	if out == "" {
		out = t.TempDir()
	} else if err := os.RemoveAll(out); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Run("runs", func(t *testing.T) {
		for _, path := range paths {
			name := strings.TrimSuffix(filepath.Base(path), ".json")
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				observation, err := json.Marshal(runScenario(t, path, name, hostModel))
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(out, name+".json"), observation, 0o644); err != nil {
					t.Fatal(err)
				}
			})
		}
	})
	judge := os.Getenv("FERRULE_JUDGE")
	if judge == "" {
		judge = "../../target/release/ferrule-conformance"
	}
	verdict, err := exec.Command(judge, out).CombinedOutput()
	if err != nil {
		t.Fatalf("the judge (%s; make judge builds it) failed: %v\n%s", judge, err, verdict)
	}
}

// observation is what the runner saw of one scenario (tests/conformance/README.md).
type observation struct {
	Runner   string           `json:"runner"`
	Scenario string           `json:"scenario"`
	Steps    []map[string]any `json:"steps"`
}

func runScenario(t *testing.T, path, name string, hostModel bool) observation {
	seen := observation{Runner: "go", Scenario: name}
	if hostModel {
		seen.Runner = "go-host-model"
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var sc scenario
	if err := json.Unmarshal(data, &sc); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	shared := &scenarioRun{traced: sc.Trace}
	if sc.Trace {
		err := SetTracer(func(span []byte) {
			shared.mu.Lock()
			shared.spans = append(shared.spans, bytes.Clone(span))
			shared.mu.Unlock()
		})
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = SetTracer(nil) }()
	}
	build := func(specs []scenarioTool) (*Agent, error) {
		return buildAgent(t, sc.Config, specs, sc.hooks(shared), sc.Agents, shared, hostModel)
	}
	agent, err := build(sc.Tools)
	if err != nil {
		seen.Steps = append(seen.Steps, map[string]any{"runner_error": err.Error()})
		return seen
	}
	defer agent.Close()
	step, result := runStep(t, agent, scenarioInput(t, sc.Input), sc.Expect, shared)
	seen.Steps = append(seen.Steps, step)
	// Each resume step goes on from the last state a run gave.
	for _, resume := range sc.Resumes {
		if result == nil || result.State == nil {
			break
		}
		state := result.State
		if resume.StatePatch != nil {
			var fields map[string]any
			if err := json.Unmarshal(state, &fields); err != nil {
				t.Fatal(err)
			}
			for key, value := range resume.StatePatch {
				fields[key] = value
			}
			state, _ = json.Marshal(fields)
		}
		on := agent
		if resume.NewAgent {
			specs := resume.Tools
			if specs == nil {
				specs = sc.Tools
			}
			if on, err = build(specs); err != nil {
				seen.Steps = append(seen.Steps, map[string]any{"runner_error": err.Error()})
				break
			}
		}
		input := Resume(state, resume.Decisions)
		if resume.RunReturned != nil {
			input = ResumeWithResults(state, runReturned(t, on, result.Calls, resume.RunReturned.Attempt))
			input.ReturnCalls = true
		}
		step, next := runStep(t, on, input, resume.Expect, shared)
		seen.Steps = append(seen.Steps, step)
		if next != nil {
			result = next
		}
		if on != agent {
			on.Close()
		}
	}
	return seen
}

// runReturned runs each of calls (a result's returned calls) as an Invoke run
// on agent, the attempt-th time: their outcomes by call id.
func runReturned(t *testing.T, agent *Agent, calls []ToolCall, attempt int) map[string]json.RawMessage {
	outcomes := map[string]json.RawMessage{}
	for _, call := range calls {
		result, err := agent.Run(context.Background(), Invoke(call, attempt))
		if err != nil {
			t.Fatalf("invoke %s: %v", call.ID, err)
		}
		outcomes[call.ID] = result.Outcome
	}
	return outcomes
}

// buildAgent builds an agent of config with tools made from specs, hooks, and
// the agents it is offered (each built first, and closed once it is added);
// with hostModel, on a host model replaying config's script.
func buildAgent(t *testing.T, config json.RawMessage, specs []scenarioTool, hooks []Hook, agents []scenarioAgent,
	shared *scenarioRun, hostModel bool) (*Agent, error) {
	config = withCassetteInScenariosDir(t, config)
	var tools []Tool
	for _, tool := range specs {
		tools = append(tools, NewRawTool(tool.Name, tool.Description, tool.InputSchema,
			perform(tool.Behaviour, shared), options(t, tool.Options)...))
	}
	for _, spec := range agents {
		child, err := buildAgent(t, spec.Config, spec.Tools, nil, spec.Agents, shared, hostModel)
		if err != nil {
			return nil, err
		}
		defer child.Close()
		var o struct {
			TimeoutMS       int64  `json:"timeout_ms"`
			NeedsApproval   bool   `json:"needs_approval"`
			HandoffMessages string `json:"handoff_messages"`
		}
		if len(spec.Options) > 0 {
			if err := json.Unmarshal(spec.Options, &o); err != nil {
				t.Fatalf("agent options %s: %v", spec.Options, err)
			}
		}
		var opts []ToolOption
		if o.TimeoutMS > 0 {
			opts = append(opts, Timeout(time.Duration(o.TimeoutMS)*time.Millisecond))
		}
		if o.NeedsApproval {
			opts = append(opts, NeedsApproval())
		}
		if o.HandoffMessages == "without_tool_calls" {
			opts = append(opts, WithoutToolCalls())
		}
		if spec.Mode == "handoff" {
			tools = append(tools, Handoff(spec.Name, spec.Description, child, opts...))
		} else {
			tools = append(tools, AgentTool(spec.Name, spec.Description, child, opts...))
		}
	}
	if hostModel {
		if config, replay := withScriptReplay(t, config); replay != nil {
			return NewAgentFromJSONWithModel(config, replay, hooks, tools...)
		}
	}
	return NewAgentFromJSONWithHooks(config, hooks, tools...)
}

// withCassetteInScenariosDir is config with a relative cassette path
// (model.record.path) made the scenario directory's.
func withCassetteInScenariosDir(t *testing.T, config json.RawMessage) json.RawMessage {
	var document map[string]any
	if err := json.Unmarshal(config, &document); err != nil {
		t.Fatal(err)
	}
	model, _ := document["model"].(map[string]any)
	record, _ := model["record"].(map[string]any)
	path, _ := record["path"].(string)
	if path == "" || filepath.IsAbs(path) {
		return config
	}
	dir, err := filepath.Abs("../../tests/conformance")
	if err != nil {
		t.Fatal(err)
	}
	record["path"] = filepath.Join(dir, path)
	rewritten, err := json.Marshal(document)
	if err != nil {
		t.Fatal(err)
	}
	return rewritten
}

// scenarioInput is the scenario's input, its "tools" given as Input.Tools,
// its "result_messages": "none" as Input.WithoutMessages and its "calls":
// "return" as Input.ReturnCalls.
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
	without := false
	if value, ok := fields["result_messages"]; ok {
		if string(value) != `"none"` {
			t.Fatalf("the runner gives result_messages only as WithoutMessages, not %s", value)
		}
		without = true
		delete(fields, "result_messages")
	}
	returning := false
	if value, ok := fields["calls"]; ok {
		if string(value) != `"return"` {
			t.Fatalf("the runner gives calls only as ReturnCalls, not %s", value)
		}
		returning = true
		delete(fields, "calls")
	}
	data, _ := json.Marshal(fields)
	return Input{json: data, Tools: tools, WithoutMessages: without, ReturnCalls: returning}
}

// runStep starts input on agent and observes the run: its events and result as
// this package's types write them, the hook consultations and the cancel
// handlers; or the refusal of its start.
func runStep(t *testing.T, agent *Agent, input Input, expect expectation, s *scenarioRun) (map[string]any, *Result) {
	t.Helper()
	s.cancelHandlers.Store(0)
	s.mu.Lock()
	s.hookCalls = nil
	s.traceparents = map[string]string{}
	traced := s.traced
	s.mu.Unlock()
	run, err := agent.Start(context.Background(), input)
	if err != nil {
		var ferr *Error
		if !errors.As(err, &ferr) {
			return map[string]any{"runner_error": err.Error()}, nil
		}
		return map[string]any{"start_error": ferr}, nil
	}
	defer run.Close()
	s.current.Store(run)
	defer s.current.Store(nil)
	var events []any
	for event := range run.Events() {
		events = append(events, written(t, event))
	}
	result, err := run.Wait()
	if err != nil {
		t.Fatalf("wait: %v", err)
	}
	if expect.CancelHandlers != nil {
		// Handlers run on goroutines of their own; the run may end first.
		deadline := time.Now().Add(10 * time.Second)
		for s.cancelHandlers.Load() < *expect.CancelHandlers && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
	}
	var spans []json.RawMessage
	if traced {
		spans = s.traceOf(run.ID())
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	hookCalls := append([]map[string]any{}, s.hookCalls...)
	step := map[string]any{
		"events":          events,
		"result":          result,
		"hook_calls":      hookCalls,
		"cancel_handlers": s.cancelHandlers.Load(),
	}
	if traced {
		step["spans"] = spans
		step["traceparents"] = s.traceparents
	}
	if expect.UnusedRecordings != nil {
		unused, err := agent.UnusedRecordings()
		if err != nil {
			return map[string]any{"runner_error": err.Error()}, result
		}
		step["unused_recordings"] = unused
	}
	return step, result
}

// written is an event as this package writes it, with its type; an event the
// package does not know is marked as such.
func written(t *testing.T, event Event) any {
	if unknown, ok := event.(*UnknownEvent); ok {
		return map[string]any{"type": "unknown", "json": unknown.Raw}
	}
	data, err := json.Marshal(event)
	if err != nil {
		t.Fatalf("%s event: %v", event.EventType(), err)
	}
	var fields map[string]any
	if err := json.Unmarshal(data, &fields); err != nil {
		t.Fatal(err)
	}
	fields["type"] = event.EventType()
	// A nested event this package did not know is marked too.
	if nested, ok := event.(*AgentEventEvent); ok {
		fields["event"] = written(t, nested.Event.Event)
	}
	return fields
}
