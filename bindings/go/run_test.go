package ferrule

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// hangProtection bounds waits that would otherwise hang a broken test; it is
// not a measure of speed.
const hangProtection = 10 * time.Second

// blocker is a tool that waits for its context and says when it was cancelled.
func blocker(cancelled chan<- time.Time, opts ...ToolOption) Tool {
	return NewRawTool("block", "Waits to be cancelled.", nil,
		func(ctx context.Context, call *Call, args json.RawMessage) (any, error) {
			<-ctx.Done()
			cancelled <- time.Now()
			return "stopped", nil
		}, opts...)
}

func TestCancellingTheContextCancelsTheRunAndReachesTheTool(t *testing.T) {
	cancelled := make(chan time.Time, 1)
	agent, err := NewAgentFromJSON(scripted(call("c1", "block", map[string]any{})), blocker(cancelled))
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	ctx, cancel := context.WithCancel(context.Background())
	run, err := agent.Start(ctx, Prompt("block"))
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	events := run.Events()
	for event := range events {
		if _, ok := event.(*ToolExecutionStartEvent); ok {
			break
		}
	}
	cancelledAt := time.Now()
	cancel()
	select {
	case at := <-cancelled:
		t.Logf("the tool saw the cancellation %v after it", at.Sub(cancelledAt))
	case <-time.After(hangProtection):
		t.Fatal("the tool's context was never cancelled")
	}
	for range events {
	}
	result, err := run.Wait()
	if err != nil || result.Status != StatusCancelled {
		t.Fatalf("result %+v, %v", result, err)
	}
}

func TestATimeoutCancelsTheToolsContext(t *testing.T) {
	cancelled := make(chan time.Time, 1)
	agent, err := NewAgentFromJSON(scripted(call("c1", "block", map[string]any{})),
		blocker(cancelled, Timeout(30*time.Millisecond)))
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	result, err := agent.Run(context.Background(), Prompt("block"))
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-cancelled:
	case <-time.After(hangProtection):
		t.Fatal("the tool's context was never cancelled")
	}
	if result.Status != StatusCompleted || !toolResults(result)[0].IsError {
		t.Fatalf("result %+v", result)
	}
}

func TestManyConcurrentRunsOnOneAgent(t *testing.T) {
	echo := NewTool("echo", "Echoes.", func(ctx context.Context, call *Call, args struct {
		N int `json:"n"`
	}) (string, error) {
		runtime.GC()
		if err := call.Update(fmt.Sprintf("working on %d", args.N)); err != nil {
			return "", err
		}
		return fmt.Sprint(args.N), nil
	})
	agent, err := NewAgentFromJSON(scripted(call("c1", "echo", map[string]any{"n": 7})), echo)
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	var wg sync.WaitGroup
	errs := make(chan error, 200)
	for i := range 200 {
		wg.Go(func() {
			run, err := agent.Start(context.Background(), Prompt("echo"))
			if err != nil {
				errs <- err
				return
			}
			defer run.Close()
			updates := 0
			if i%2 == 0 {
				for event := range run.Events() {
					runtime.GC()
					if _, ok := event.(*ToolExecutionUpdateEvent); ok {
						updates++
					}
				}
			}
			result, err := run.Wait()
			if err == nil && (result.Status != StatusCompleted || toolResults(result)[0].Text() != "7") {
				err = fmt.Errorf("run %d: %+v", i, result)
			}
			if err == nil && i%2 == 0 && updates != 1 {
				err = fmt.Errorf("run %d saw %d updates", i, updates)
			}
			if err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestHandlesClosedEarlyAndTwice(t *testing.T) {
	cancelled := make(chan time.Time, 1)
	agent, err := NewAgentFromJSON(scripted(call("c1", "block", map[string]any{})), blocker(cancelled))
	if err != nil {
		t.Fatal(err)
	}
	run, err := agent.Start(context.Background(), Prompt("block"))
	if err != nil {
		t.Fatal(err)
	}
	events := run.Events()
	if run.Events() != events {
		t.Error("Events gave another channel")
	}
	// The run keeps its agent.
	if agent.Close() != nil || agent.Close() != nil {
		t.Error("closing the agent failed")
	}
	if _, err := agent.Start(context.Background(), Prompt("again")); !errors.Is(err, ErrInvalidArg) {
		t.Errorf("a closed agent started a run: %v", err)
	}
	for event := range events {
		if _, ok := event.(*ToolExecutionStartEvent); ok {
			break
		}
	}
	// Closing a live run cancels it; its events still end with run_end.
	if run.Close() != nil || run.Close() != nil {
		t.Error("closing the run failed")
	}
	var last Event
	for event := range events {
		last = event
	}
	end, ok := last.(*RunEndEvent)
	if !ok || end.Status != StatusCancelled || end.Result == nil || end.Result.Status != StatusCancelled {
		t.Fatalf("last event %#v", last)
	}
	// Its events were read, so the result is known after Close.
	if result, err := run.Wait(); err != nil || result.Status != StatusCancelled {
		t.Errorf("waiting on a closed run: %+v, %v", result, err)
	}
	run.Cancel()
}

func TestTheRuntimeIsConfiguredBeforeTheFirstRunOnly(t *testing.T) {
	agent, err := NewAgent(Config{Model: Model{Provider: "scripted", Script: json.RawMessage(`[{"text": "Hi."}]`)}})
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	if _, err := agent.Run(context.Background(), Prompt("Hi")); err != nil {
		t.Fatal(err)
	}
	if err := ConfigureRuntime([]byte(`{"worker_threads": 2}`)); !errors.Is(err, ErrAlreadyInitialized) {
		t.Errorf("after a run: %v", err)
	}
	if err := ConfigureRuntime([]byte(`{"workers": 2}`)); !errors.Is(err, ErrInvalidArg) {
		t.Errorf("an unknown field: %v", err)
	}
}

func TestWaitWithoutEventsAndAReplayedTranscript(t *testing.T) {
	agent, err := NewAgent(Config{Model: Model{Provider: "scripted",
		Script: json.RawMessage(`[{"text": "Hello."}]`)}, System: "Be brief.", MaxRounds: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	first, err := agent.Run(context.Background(), Prompt("Hi"))
	if err != nil || first.Status != StatusCompleted || first.Final.Text() != "Hello." {
		t.Fatalf("first %+v %v", first, err)
	}
	second, err := agent.Run(context.Background(), Messages(append(first.Messages, UserMessage("More"))...))
	// Each run starts the script over; the transcript carries on.
	if err != nil || second.Status != StatusCompleted || len(second.Messages) != 4 ||
		second.Messages[0].Text() != "Hi" || second.Messages[1].Text() != "Hello." || second.Messages[2].Text() != "More" {
		t.Fatalf("second %+v %v", second, err)
	}
}

func TestInvalidConfigurationsAreErrorsWithTheirCodes(t *testing.T) {
	cases := []struct {
		config []byte
		want   error
	}{
		{[]byte(`{"model": `), ErrInvalidJSON},
		{[]byte(`{"model": {"provider": "scripted"}, "colour": "blue"}`), ErrInvalidArg},
		{[]byte(``), ErrInvalidJSON},
	}
	for _, c := range cases {
		_, err := NewAgentFromJSON(c.config)
		var ferr *Error
		if !errors.Is(err, c.want) || !errors.As(err, &ferr) || ferr.Message == "" {
			t.Errorf("%s: %v, expected %v", c.config, err, c.want)
		}
	}
	_, err := NewAgent(Config{Model: Model{Provider: "nonsense"}})
	if !errors.Is(err, ErrInvalidArg) {
		t.Errorf("unknown provider: %v", err)
	}
	bad := NewRawTool("bad", "", json.RawMessage(`{"type": "object", "$ref": "http://example.com/x"}`),
		func(context.Context, *Call, json.RawMessage) (any, error) { return "", nil })
	if _, err := NewAgent(Config{Model: Model{Provider: "scripted"}}, bad); !errors.Is(err, ErrInvalidSchema) {
		t.Errorf("remote reference: %v", err)
	}
	dup := NewRawTool("dup", "", nil, func(context.Context, *Call, json.RawMessage) (any, error) { return "", nil })
	if _, err := NewAgent(Config{Model: Model{Provider: "scripted"}}, dup, dup); !errors.Is(err, ErrDuplicateTool) {
		t.Errorf("duplicate: %v", err)
	}
}

// assertSameJSON fails the test unless data and want are the same JSON document.
func assertSameJSON(t *testing.T, data []byte, want string) {
	t.Helper()
	var got, wanted any
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(want), &wanted); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, wanted) {
		t.Errorf("got  %s\nwant %s", data, want)
	}
}

func TestDurationsRoundUpWithoutOverflowAndStayNegative(t *testing.T) {
	config := Config{Model: Model{Provider: "scripted"}, RunTimeout: math.MaxInt64, ToolTimeout: -time.Microsecond,
		BuiltinTools: &BuiltinTools{BashTimeout: time.Nanosecond}}
	data, err := json.Marshal(config)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"model":{"provider":"scripted"},"run_timeout_ms":9223372036855,"tool_timeout_ms":-1,` +
		`"builtin_tools":{"allowed":null,"bash_timeout_s":1}}`
	assertSameJSON(t, data, want)
}

func TestConfigMarshalsToTheConfigurationJSON(t *testing.T) {
	stream := false
	retries := 0
	config := Config{
		Model:       Model{Provider: "openai", Name: "gpt", Stream: &stream, MaxRetries: &retries, Timeouts: &Timeouts{Idle: new(time.Second), Connect: new(time.Duration(0))}},
		ToolChoice:  ToolChoiceName{Name: "lookup"},
		ToolTimeout: 1500 * time.Millisecond, BuiltinTools: &BuiltinTools{Allowed: []string{}, Confine: true, BashTimeout: 1500 * time.Millisecond},
		HookTimeout: new(2 * time.Second), History: &History{MaxInputTokens: 8000},
		Hooks: []Hook{OnRunStart(func(context.Context, RunStartPayload) (RunStartDecision, error) { return RunStartDecision{}, nil })},
	}
	data, err := json.Marshal(config)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"model":{"provider":"openai","name":"gpt","stream":false,"max_retries":0,"timeouts":{"idle_ms":1000,"connect_ms":0}},` +
		`"tool_choice":{"name":"lookup"},"tool_timeout_ms":1500,"builtin_tools":{"allowed":[],"confine":true,"bash_timeout_s":2},` +
		`"hook_timeout_ms":2000,"history":{"max_input_tokens":8000}}`
	assertSameJSON(t, data, want)
}

func TestARunTimeoutEndsTheRunFailedWithTimeout(t *testing.T) {
	cancelled := make(chan time.Time, 1)
	agent, err := NewAgent(Config{Model: Model{Provider: "scripted",
		Script: json.RawMessage(`[{"tool_calls": [{"id": "c1", "name": "block", "arguments": {}}]}, {"text": "late"}]`)},
		RunTimeout: 100 * time.Millisecond}, blocker(cancelled))
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	result, err := agent.Run(context.Background(), Prompt("block"))
	if err != nil {
		t.Fatal(err)
	}
	if result.Status != StatusFailed || !errors.Is(result.Error, ErrTimeout) {
		t.Fatalf("result %+v", result)
	}
	select {
	case <-cancelled:
	case <-time.After(hangProtection):
		t.Fatal("the running tool was never cancelled")
	}
}

type plan struct {
	Customer string `json:"customer"`
	Plan     string `json:"plan"`
}

func TestStructuredOutputDecodesIntoAGoType(t *testing.T) {
	retries := 0
	agent, err := NewAgent(Config{
		Model: Model{Provider: "scripted", Script: json.RawMessage(`[{"text": "{\"customer\": \"C-100\", \"plan\": \"gold\"}"}]`)},
		OutputSchema: json.RawMessage(`{"type": "object", "properties": {"customer": {"type": "string"}, "plan": {"type": "string"}},
			"required": ["customer", "plan"]}`),
		OutputRetries: &retries,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	result, err := agent.Run(context.Background(), Prompt("plan?"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := Output[plan](result)
	if err != nil || got != (plan{"C-100", "gold"}) {
		t.Fatalf("%+v %v", got, err)
	}
	if _, err := Output[[]int](result); !errors.Is(err, ErrInvalidOutput) {
		t.Errorf("a Go type the output does not fit: %v", err)
	}
	if _, err := Output[plan](&Result{Output: json.RawMessage("null")}); !errors.Is(err, ErrInvalidOutput) {
		t.Errorf("no output: %v", err)
	}
}

func TestAnExecuteOnlyRunRunsTheHostsCallsWithoutTheModel(t *testing.T) {
	var ran atomic.Int32
	lookup := NewTool("lookup", "", func(ctx context.Context, call *Call, args struct {
		Text string `json:"text"`
	}) (string, error) {
		ran.Add(1)
		return "found " + args.Text, nil
	})
	// An empty script: a model request would fail the run.
	agent, err := NewAgent(Config{Model: Model{Provider: "scripted", Script: json.RawMessage(`[]`)}}, lookup)
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	message := Message{ToolCalls: []ToolCall{{ID: "c1", Name: "lookup", Arguments: `{"text": "A"}`}}}
	result, err := agent.Run(context.Background(), Execute(message, UserMessage("Look up A.")))
	if err != nil || result.Status != StatusCompleted || result.Rounds != 0 {
		t.Fatalf("%+v %v", result, err)
	}
	if len(result.Messages) != 3 || toolResults(result)[0].Text() != "found A" || ran.Load() != 1 {
		t.Fatalf("messages %+v", result.Messages)
	}
}
