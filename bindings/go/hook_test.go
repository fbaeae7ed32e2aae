package ferrule

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

type echoArgs struct {
	Text string `json:"text"`
}

func echoTool(name string) Tool {
	return NewTool(name, "Echoes.", func(ctx context.Context, call *Call, args echoArgs) (string, error) {
		return args.Text, nil
	})
}

func scriptOf(turns ...map[string]any) json.RawMessage {
	data, _ := json.Marshal(turns)
	return data
}

func TestTypedHooksAtEveryStage(t *testing.T) {
	var sawTools []string
	cfg := Config{
		Model: Model{Provider: "scripted", Script: scriptOf(
			map[string]any{"tool_calls": []any{call("c1", "echo", echoArgs{"one"}), call("c2", "echo", echoArgs{"two"}),
				call("c3", "delete", echoArgs{"three"})}},
			map[string]any{"text": "The secret is 42."},
			map[string]any{"text": "Done."},
		)},
		Hooks: []Hook{
			OnRunStart(func(ctx context.Context, p RunStartPayload) (RunStartDecision, error) {
				return RunStartDecision{Messages: append(p.Messages, Message{Role: "system", Content: []Part{Text("Be careful.")}})}, nil
			}),
			OnTurnStart(func(ctx context.Context, p TurnStartPayload) (TurnStartDecision, error) {
				if p.Turn == 1 {
					sawTools = p.Tools
					return TurnStartDecision{Tools: []string{"echo"}}, nil
				}
				return TurnStartDecision{}, nil
			}),
			OnToolCall(func(ctx context.Context, p ToolCallPayload) (ToolCallDecision, error) {
				if p.Call.ID == "c1" {
					return ToolCallDecision{Arguments: echoArgs{"ONE"}}, nil
				}
				return ToolCallDecision{}, nil
			}),
			OnToolResult(func(ctx context.Context, p ToolResultPayload) (ToolResultDecision, error) {
				if p.CallID == "c2" {
					return ToolResultDecision{Result: ToolResult{Content: []Part{Text("[hidden] " + p.Result.Text())}}}, nil
				}
				return ToolResultDecision{}, nil
			}),
			OnFinalAnswer(func(ctx context.Context, p FinalAnswerPayload) (FinalAnswerDecision, error) {
				if strings.Contains(p.Message.Text(), "secret") {
					return FinalAnswerDecision{Retry: "Keep secrets."}, nil
				}
				return FinalAnswerDecision{}, nil
			}),
		},
	}
	agent, err := NewAgent(cfg, echoTool("echo"), echoTool("delete"))
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	result, err := agent.Run(context.Background(), Prompt("go"))
	if err != nil || result.Status != StatusCompleted {
		t.Fatalf("%+v, %v", result, err)
	}
	if strings.Join(sawTools, ",") != "echo,delete" {
		t.Errorf("the turn start hook saw tools %v", sawTools)
	}
	texts := []string{}
	for _, m := range toolResults(result) {
		texts = append(texts, m.Text())
	}
	if texts[0] != "ONE" || texts[1] != "[hidden] two" || !strings.Contains(texts[2], `Unknown tool "delete"`) {
		t.Errorf("results %q", texts)
	}
	if result.Messages[1].Role != "system" || result.Rounds != 3 {
		t.Errorf("transcript %+v, %d rounds", result.Messages, result.Rounds)
	}
}

func TestDecisionsMarshalToTheDecisionJSON(t *testing.T) {
	for _, c := range []struct {
		decision any
		want     string
	}{
		{TurnStartDecision{}, `{}`},
		{TurnStartDecision{Tools: []string{}}, `{"tools":[]}`},
		{TurnStartDecision{Inject: []Message{UserMessage("x")}}, `{"inject":[{"role":"user","content":[{"type":"text","text":"x"}]}]}`},
		{RunStartDecision{Messages: []Message{}}, `{}`},
		{ToolCallDecision{Approve: true}, `{"approve":true}`},
		{ToolCallDecision{Arguments: map[string]int{"a": 1}}, `{"arguments":{"a":1}}`},
		{ToolResultDecision{Result: "x"}, `{"result":"x"}`},
		{ToolResultDecision{Abort: "no"}, `{"abort":"no"}`},
		{ToolResultDecision{Result: (*ToolResult)(nil)}, `{}`},
		{FinalAnswerDecision{Retry: "again"}, `{"retry":"again"}`},
	} {
		data, err := json.Marshal(c.decision)
		if err != nil || string(data) != c.want {
			t.Errorf("%#v: got %s (%v), want %s", c.decision, data, err, c.want)
		}
	}
}

func TestAHookErrorOrPanicOrAbortAbortsTheRun(t *testing.T) {
	for name, hook := range map[string]Hook{
		"abort": OnToolCall(func(ctx context.Context, p ToolCallPayload) (ToolCallDecision, error) {
			return ToolCallDecision{Abort: "not on production"}, nil
		}),
		"error": OnToolCall(func(ctx context.Context, p ToolCallPayload) (ToolCallDecision, error) {
			return ToolCallDecision{}, errors.New("not on production")
		}),
		"panic": OnToolCall(func(ctx context.Context, p ToolCallPayload) (ToolCallDecision, error) {
			panic("hook bug")
		}),
	} {
		cfg := Config{Model: Model{Provider: "scripted", Script: scriptOf(
			map[string]any{"tool_calls": []any{call("c1", "echo", echoArgs{"a"})}})}, Hooks: []Hook{hook}}
		result := runFailing(t, cfg, ErrHookAborted, echoTool("echo"))
		if name != "panic" && !strings.Contains(result.Error.Message, "not on production") {
			t.Errorf("%s: %s", name, result.Error.Message)
		}
	}
}

func TestAHookThatTakesTooLongSeesItsContextCancelled(t *testing.T) {
	cancelled := make(chan struct{})
	cfg := Config{Model: Model{Provider: "scripted", Script: scriptOf(map[string]any{"text": "x"})},
		HookTimeout: new(20 * time.Millisecond),
		Hooks: []Hook{OnTurnStart(func(ctx context.Context, p TurnStartPayload) (TurnStartDecision, error) {
			<-ctx.Done()
			close(cancelled)
			return TurnStartDecision{}, nil
		})}}
	runFailing(t, cfg, ErrTimeout)
	select {
	case <-cancelled:
	case <-time.After(hangProtection):
		t.Fatal("the hook's context was never cancelled")
	}
}

func TestInjectAndPerRunTools(t *testing.T) {
	var run *Run
	started := make(chan struct{})
	slow := NewTool("slow", "Works.", func(ctx context.Context, call *Call, args struct{}) (string, error) {
		<-started
		if err := run.Inject(UserMessage("Also check B.")); err != nil {
			return "", err
		}
		return "worked", nil
	})
	agent, err := NewAgent(Config{Model: Model{Provider: "scripted", Script: scriptOf(
		map[string]any{"tool_calls": []any{call("c1", "slow", map[string]any{}), call("c2", "other", map[string]any{})}},
		map[string]any{"text": "Done."})}}, slow, echoTool("other"))
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	in := Prompt("go")
	in.Tools = []string{"slow"}
	run, err = agent.Start(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	close(started)
	var injected int
	for event := range run.Events() {
		if e, ok := event.(*MessageInjectedEvent); ok && e.Message.Origin == "injection" {
			injected++
		}
	}
	result, err := run.Wait()
	if err != nil || result.Status != StatusCompleted || injected != 1 {
		t.Fatalf("%+v, %v, %d injected", result, err, injected)
	}
	last := result.Messages[len(result.Messages)-2]
	if last.Role != "user" || last.Origin != "injection" || last.Text() != "Also check B." {
		t.Errorf("the injection is %+v", last)
	}
	if !strings.Contains(toolResults(result)[1].Text(), `Unknown tool "other"`) {
		t.Errorf("a tool outside the run's set ran: %q", toolResults(result)[1].Text())
	}
	if err := run.Inject(UserMessage("late")); !errors.Is(err, ErrAlreadyCompleted) {
		t.Errorf("an injection after the end: %v", err)
	}
	run.Close()
	bad := Prompt("go")
	bad.Tools = []string{"nope"}
	if _, err := agent.Start(context.Background(), bad); !errors.Is(err, ErrInvalidArg) {
		t.Errorf("an unknown tool in Input.Tools: %v", err)
	}
}

func TestAHookThatCallsGoexitStillResponds(t *testing.T) {
	cfg := Config{Model: Model{Provider: "scripted", Script: scriptOf(map[string]any{"text": "x"})},
		Hooks: []Hook{OnTurnStart(func(ctx context.Context, p TurnStartPayload) (TurnStartDecision, error) {
			runtime.Goexit()
			return TurnStartDecision{}, nil
		})}}
	runFailing(t, cfg, ErrHookAborted)
}

// runFailing runs cfg's agent, which must fail with the code of want.
func runFailing(t *testing.T, cfg Config, want error, tools ...Tool) *Result {
	t.Helper()
	agent, err := NewAgent(cfg, tools...)
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	result, err := agent.Run(context.Background(), Prompt("go"))
	if err != nil || result.Status != StatusFailed || !errors.Is(result.Error, want) {
		t.Fatalf("%+v, %v", result, err)
	}
	return result
}

func TestInlineHooksWithoutHistorySeeTheCountAndDecide(t *testing.T) {
	type seen struct{ count, messages int }
	var turns, starts []seen
	cfg := Config{
		Model: Model{Provider: "scripted", Script: scriptOf(
			map[string]any{"tool_calls": []any{call("c1", "echo", echoArgs{"one"})}},
			map[string]any{"text": "Done."},
		)},
		Hooks: []Hook{
			OnRunStart(func(ctx context.Context, p RunStartPayload) (RunStartDecision, error) {
				starts = append(starts, seen{p.MessageCount, len(p.Messages)})
				return RunStartDecision{}, nil
			}, InlineHook(), WithoutHistory()),
			OnTurnStart(func(ctx context.Context, p TurnStartPayload) (TurnStartDecision, error) {
				turns = append(turns, seen{p.MessageCount, len(p.Messages)})
				if ctx.Err() != nil {
					return TurnStartDecision{}, errors.New("the context is done")
				}
				if p.Turn > 1 {
					return TurnStartDecision{}, nil
				}
				return TurnStartDecision{Inject: []Message{UserMessage("note")}}, nil
			}, InlineHook(), WithoutHistory()),
			OnToolCall(func(ctx context.Context, p ToolCallPayload) (ToolCallDecision, error) {
				return ToolCallDecision{Arguments: echoArgs{"ONE"}}, nil
			}, InlineHook()),
			OnFinalAnswer(func(ctx context.Context, p FinalAnswerPayload) (FinalAnswerDecision, error) {
				panic("an answer hook that panics")
			}, InlineHook()),
		},
	}
	agent, err := NewAgent(cfg, echoTool("echo"))
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	res, err := agent.Run(context.Background(), Prompt("go"))
	if err != nil {
		t.Fatal(err)
	}
	// The panicking hook aborted the run after the call ran with the new arguments.
	if res.Status != StatusFailed || res.Error.Code != CodeHookAborted || !strings.Contains(res.Error.Message, "panicked") {
		t.Fatalf("%+v %+v", res, res.Error)
	}
	if results := toolResults(res); len(results) != 1 || results[0].Text() != "ONE" {
		t.Fatalf("results %+v", results)
	}
	// Turn 2's history: the prompt, the injected note, the call and its result.
	if !slices.Equal(starts, []seen{{1, 0}}) || !slices.Equal(turns, []seen{{1, 0}, {4, 0}}) {
		t.Fatalf("run_start %v, turn_start %v", starts, turns)
	}
	if res.Messages[1].Text() != "note" {
		t.Fatalf("the injected message is missing: %+v", res.Messages)
	}
}

// A typed turn_start hook sees the whole history at every turn, as a raw hook
// given the whole history does, though each payload carries the new messages
// alone; after another hook replaced the history it sees the replacement, and
// what an earlier payload gave it stays as it was. Inline and on goroutines.
func TestTypedHooksSeeTheWholeHistoryFromTheNewMessages(t *testing.T) {
	for _, inline := range []bool{false, true} {
		var opts []HookOption
		if inline {
			opts = append(opts, InlineHook())
		}
		var whole []string
		var typed [][]Message
		var starts []int
		turns := []map[string]any{}
		for i := range 5 {
			turns = append(turns, map[string]any{"tool_calls": []any{call("c"+string(rune('1'+i)), "echo", echoArgs{"x"})}})
		}
		cfg := Config{
			Model: Model{Provider: "scripted", Script: scriptOf(append(turns, map[string]any{"text": "Done."})...)},
			Hooks: []Hook{
				RawHook("turn_start", func(ctx context.Context, payload json.RawMessage) (json.RawMessage, error) {
					var p struct {
						Turn int `json:"turn"`
					}
					_ = json.Unmarshal(payload, &p)
					if p.Turn == 4 {
						return json.RawMessage(`{"messages": [{"role": "user", "content": "again"}]}`), nil
					}
					return json.RawMessage("{}"), nil
				}, opts...),
				RawHook("turn_start", func(ctx context.Context, payload json.RawMessage) (json.RawMessage, error) {
					var p struct {
						Messages json.RawMessage `json:"messages"`
					}
					_ = json.Unmarshal(payload, &p)
					whole = append(whole, string(p.Messages))
					return json.RawMessage("{}"), nil
				}, opts...),
				OnRunStart(func(ctx context.Context, p RunStartPayload) (RunStartDecision, error) {
					starts = append(starts, len(p.Messages))
					return RunStartDecision{}, nil
				}, opts...),
				OnTurnStart(func(ctx context.Context, p TurnStartPayload) (TurnStartDecision, error) {
					typed = append(typed, p.Messages)
					return TurnStartDecision{}, nil
				}, opts...),
			},
		}
		agent, err := NewAgent(cfg, echoTool("echo"))
		if err != nil {
			t.Fatal(err)
		}
		for range 2 {
			whole, typed, starts = nil, nil, nil
			res, err := agent.Run(context.Background(), Prompt("go"))
			if err != nil || res.Status != StatusCompleted {
				t.Fatalf("%+v %v", res, err)
			}
			if len(typed) != 6 || len(whole) != 6 || !slices.Equal(starts, []int{1}) {
				t.Fatalf("inline %v: %d typed, %d whole, run_start %v", inline, len(typed), len(whole), starts)
			}
			for turn := range typed {
				var want []Message
				if err := json.Unmarshal([]byte(whole[turn]), &want); err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(want, typed[turn]) {
					t.Fatalf("inline %v, turn %d: the typed hook saw\n%+v\nthe raw one\n%s", inline, turn+1, typed[turn], whole[turn])
				}
			}
			// Each message was decoded once: the turns share the history kept,
			// until the replacement at turn 4.
			first := func(turn int) *Part { return &typed[turn][0].Content[0] }
			if first(1) != first(0) || first(2) != first(0) || first(3) == first(0) || first(5) != first(3) {
				t.Fatalf("inline %v: the turns' histories were decoded again", inline)
			}
			// Turn 3 had the prompt and two calls with their results; the
			// replacement at turn 4 left it so.
			if len(typed[2]) != 5 || len(typed[3]) != 1 || typed[3][0].Text() != "again" || typed[2][0].Text() != "go" {
				t.Fatalf("inline %v: turn 3 %+v, turn 4 %+v", inline, typed[2], typed[3])
			}
		}
		agent.Close()
	}
}

// A payload is ferrule's memory only while the hook decides: what a raw hook
// keeps and what a typed payload holds stay intact after the response, inline
// and on goroutines alike.
func TestPayloadsKeptPastTheResponseStayIntact(t *testing.T) {
	for _, inline := range []bool{false, true} {
		var opts []HookOption
		if inline {
			opts = append(opts, InlineHook())
		}
		var raws []json.RawMessage
		var ids []string
		var tools [][]string
		cfg := Config{
			Model: Model{Provider: "scripted", Script: scriptOf(
				map[string]any{"tool_calls": []any{call("call-one", "echo", echoArgs{"one"})}},
				map[string]any{"tool_calls": []any{call("call-two", "echo", echoArgs{"two"})}},
				map[string]any{"text": "Done."},
			)},
			Hooks: []Hook{
				RawHook("tool_call", func(ctx context.Context, payload json.RawMessage) (json.RawMessage, error) {
					raws = append(raws, payload)
					return json.RawMessage("{}"), nil
				}, opts...),
				OnToolResult(func(ctx context.Context, p ToolResultPayload) (ToolResultDecision, error) {
					ids = append(ids, p.CallID)
					return ToolResultDecision{}, nil
				}, opts...),
				OnTurnStart(func(ctx context.Context, p TurnStartPayload) (TurnStartDecision, error) {
					tools = append(tools, p.Tools)
					return TurnStartDecision{}, nil
				}, opts...),
			},
		}
		agent, err := NewAgent(cfg, echoTool("echo"))
		if err != nil {
			t.Fatal(err)
		}
		res, err := agent.Run(context.Background(), Prompt("go"))
		agent.Close()
		if err != nil || res.Status != StatusCompleted {
			t.Fatalf("%+v %v", res, err)
		}
		// Later consultations and the run's end reused ferrule's memory by now.
		runtime.GC()
		runID := ""
		for i, want := range []string{"call-one", "call-two"} {
			var p ToolCallPayload
			err := json.Unmarshal(raws[i], &p)
			if runID == "" {
				runID = p.RunID
			}
			if err != nil || p.Call.ID != want || p.RunID == "" || p.RunID != runID {
				t.Fatalf("inline %v: raw payload %d is %q (%v)", inline, i, raws[i], err)
			}
		}
		if !slices.Equal(ids, []string{"call-one", "call-two"}) || len(tools) != 3 || !slices.Equal(tools[2], []string{"echo"}) {
			t.Fatalf("inline %v: call ids %q, tools %q", inline, ids, tools)
		}
	}
}

// Inline consultations race the run's cancellation: every run ends once,
// cancelled or completed. Every fourth run is not cancelled, so hooks are
// consulted whatever the timing.
func TestInlineHooksRaceCancel(t *testing.T) {
	var consulted atomic.Int64
	count := func(context.Context, ToolCallPayload) (ToolCallDecision, error) {
		consulted.Add(1)
		return ToolCallDecision{}, nil
	}
	script := `{"model": {"provider": "scripted", "script": [
		{"tool_calls": [{"id": "a", "name": "echo", "arguments": {"text": "x"}}], "repeat": 40}, {"text": "done"}]},
		"max_rounds": 50}`
	agent, err := NewAgentFromJSONWithHooks(json.RawMessage(script), []Hook{OnToolCall(count, InlineHook()),
		OnTurnStart(func(context.Context, TurnStartPayload) (TurnStartDecision, error) { return TurnStartDecision{}, nil },
			InlineHook(), WithoutHistory())}, echoTool("echo"))
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	cancelAfter := func(i int) (time.Duration, bool) { return time.Duration(i%5) * 50 * time.Microsecond, i%4 != 0 }
	raceCancel(t, agent, 200, cancelAfter, func(i int, res *Result) {
		if (res.Status != StatusCancelled && res.Status != StatusCompleted) || (i%4 == 0 && res.Status != StatusCompleted) {
			t.Errorf("%+v", res)
		}
	})
	if consulted.Load() == 0 {
		t.Fatal("no hook was consulted")
	}
}
