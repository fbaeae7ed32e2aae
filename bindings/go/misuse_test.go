package ferrule

// Hosts that misuse the API, and races between its calls: each test here once
// failed (a crash, a hang, a leak or a lost result) and holds since.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"runtime/cgo"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// runWithin runs agent.Run and reports whether it returned within d (a bound
// against hangs, not a measure of speed).
func runWithin(agent *Agent, d time.Duration, in Input) (*Result, error, bool) {
	type out struct {
		r   *Result
		err error
	}
	done := make(chan out, 1)
	go func() {
		r, err := agent.Run(context.Background(), in)
		done <- out{r, err}
	}()
	select {
	case o := <-done:
		return o.r, o.err, true
	case <-time.After(d):
		return nil, nil, false
	}
}

type nilPointerError struct{ msg string }

func (e *nilPointerError) Error() string { return e.msg } // dereferences e

type panickyJSON struct{}

func (panickyJSON) MarshalJSON() ([]byte, error) { panic("marshal bug") }

func TestResultsThatCannotBeEncodedBecomeErrorResults(t *testing.T) {
	tools := []Tool{
		NewTool("typed_nil", "", func(context.Context, *Call, struct{}) (string, error) {
			var e *nilPointerError
			return "", e
		}),
		NewTool("nil_result", "", func(context.Context, *Call, struct{}) (*ToolResult, error) { return nil, nil }),
		NewTool("panicky", "", func(context.Context, *Call, struct{}) (panickyJSON, error) { return panickyJSON{}, nil }),
	}
	var calls []map[string]any
	for i, tool := range tools {
		calls = append(calls, call(fmt.Sprint("c", i), tool.Name(), map[string]any{}))
	}
	agent, err := NewAgentFromJSON(scripted(calls...), tools...)
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	result, err := agent.Run(context.Background(), Prompt("go"))
	if err != nil {
		t.Fatal(err)
	}
	results := toolResults(result)
	if !results[0].IsError || !strings.Contains(results[0].Text(), "panicked") {
		t.Errorf("typed nil error: %+v", results[0])
	}
	if results[1].IsError || results[1].Text() != "" {
		t.Errorf("nil *ToolResult: %+v", results[1])
	}
	if !results[2].IsError || !strings.Contains(results[2].Text(), "marshal bug") {
		t.Errorf("panicking MarshalJSON: %+v", results[2])
	}
}

func TestDurationsBelowAMillisecondAreNotNone(t *testing.T) {
	var o toolOptions
	Timeout(500 * time.Microsecond)(&o)
	if o.TimeoutMS != 1 {
		t.Errorf("timeout_ms %d", o.TimeoutMS)
	}
	data, _ := json.Marshal(Config{Model: Model{Provider: "scripted"}, ToolTimeout: time.Microsecond})
	if !strings.Contains(string(data), `"tool_timeout_ms":1`) {
		t.Errorf("config %s", data)
	}
}

func TestAnUnknownErrorCodeKeepsItsName(t *testing.T) {
	var e Error
	if err := json.Unmarshal([]byte(`{"code":"QUOTA_EXCEEDED","message":"m"}`), &e); err != nil {
		t.Fatal(err)
	}
	if e.Code != 0 || !strings.Contains(e.Error(), "QUOTA_EXCEEDED") {
		t.Errorf("%v", &e)
	}
}

// liveHandleCount counts live cgo handles numbered in [from, to).
func liveHandleCount(from, to cgo.Handle) int {
	n := 0
	for h := from; h < to; h++ {
		func() {
			defer func() { _ = recover() }()
			_ = h.Value()
			n++
		}()
	}
	return n
}

func currentHandle() cgo.Handle {
	h := cgo.NewHandle(0)
	h.Delete()
	return h
}

// bindingGoroutines counts goroutines running code of this package, other than
// the test itself (C threads that called into Go show up as goroutines too).
func bindingGoroutines() int {
	buf := make([]byte, 1<<22)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "ferrule/bindings/go.") && !strings.Contains(g, "go.Test") {
			n++
		}
	}
	return n
}

func liveCallCount() int {
	n := 0
	liveCalls.Range(func(any, any) bool { n++; return true })
	return n
}

func TestAToolThatCallsGoexitStillCompletesItsCall(t *testing.T) {
	tool := NewRawTool("exit", "", nil, func(context.Context, *Call, json.RawMessage) (any, error) {
		runtime.Goexit() // what t.Fatal / t.FailNow / require.* do inside a tool
		return "unreachable", nil
	})
	agent, err := NewAgentFromJSON(scripted(call("c1", "exit", map[string]any{})), tool)
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	res, err, ok := runWithin(agent, hangProtection, Prompt("go"))
	if !ok {
		t.Fatalf("the run never ended: the call of a tool that called runtime.Goexit was never completed")
	}
	if err != nil || toolResults(res)[0].IsError == false {
		t.Fatalf("result %+v %v", res, err)
	}
}

func TestALiveRunDroppedWithoutCloseIsCancelled(t *testing.T) {
	cancelled := make(chan time.Time, 1)
	agent, err := NewAgentFromJSON(scripted(call("c1", "block", map[string]any{})), blocker(cancelled))
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	started := make(chan struct{})
	func() {
		run, err := agent.Start(context.Background(), Prompt("block"))
		if err != nil {
			t.Fatal(err)
		}
		go func() { time.Sleep(200 * time.Millisecond); close(started) }()
		_ = run // dropped without Close, Wait or Events
	}()
	<-started
	for range 20 {
		runtime.GC()
		time.Sleep(50 * time.Millisecond)
	}
	select {
	case <-cancelled:
	case <-time.After(2 * time.Second):
		t.Fatal("a Run dropped without Close was never cancelled: its tool still runs (docs/go.md: cleanups free handles dropped without Close)")
	}
}

func TestWaitKeepsTheResultWhenAnotherGoroutineClosesTheRun(t *testing.T) {
	cancelled := make(chan time.Time, 1)
	agent, err := NewAgentFromJSON(scripted(call("c1", "block", map[string]any{})), blocker(cancelled))
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	run, err := agent.Start(context.Background(), Prompt("block"))
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(200 * time.Millisecond) // Wait is blocked by now
		run.Close()                        // e.g. a shutdown path aborting the run
	}()
	res, err := run.Wait()
	if err != nil || res == nil || res.Status != StatusCancelled {
		t.Fatalf("Wait (called before Close) returned %+v, %v; expected the cancelled result", res, err)
	}
}

func TestBreakingOutOfEventsThenClosingEndsTheRun(t *testing.T) {
	const n = 100
	var calls []map[string]any
	for i := range n {
		calls = append(calls, call(fmt.Sprint("c", i), "block", map[string]any{}))
	}
	cancelled := make(chan time.Time, n)
	config := map[string]any{}
	_ = json.Unmarshal(scripted(calls...), &config)
	config["max_concurrent_tools"] = n // every call runs at once
	data, _ := json.Marshal(config)
	agent, err := NewAgentFromJSON(data, blocker(cancelled))
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	run, err := agent.Start(context.Background(), Prompt("block"))
	if err != nil {
		t.Fatal(err)
	}
	sink := run.core.events
	for event := range run.Events() {
		if _, ok := event.(*ToolExecutionStartEvent); ok {
			break // the host saw enough
		}
	}
	run.Close()
	select {
	case <-sink.ended:
	case <-time.After(3 * time.Second):
		t.Fatalf("after break + Close the run never ended (%d of %d events buffered, event thread blocked forever)",
			len(sink.ch), cap(sink.ch))
	}
}

func TestEventsAfterWaitIsClosedOrComplete(t *testing.T) {
	var calls []map[string]any
	for i := range 100 {
		calls = append(calls, call(fmt.Sprint("c", i), "echo", map[string]any{}))
	}
	echo := NewRawTool("echo", "", nil, func(context.Context, *Call, json.RawMessage) (any, error) { return "ok", nil })
	agent, err := NewAgentFromJSON(scripted(calls...), echo)
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	run, err := agent.Start(context.Background(), Prompt("go"))
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	time.Sleep(200 * time.Millisecond)
	if _, err := run.Wait(); err != nil {
		t.Fatal(err)
	}
	var got []Event
	for e := range run.Events() {
		got = append(got, e)
	}
	if len(got) == 0 {
		return // nothing at all would be a consistent answer
	}
	if _, ok := got[len(got)-1].(*RunEndEvent); !ok {
		t.Errorf("Events after Wait gave %d events ending with %T, not a RunEndEvent (doc: closed after the RunEndEvent)",
			len(got), got[len(got)-1])
	}
}

func TestUnpaddedBase64ImagesDecode(t *testing.T) {
	img := NewRawTool("shot", "", nil, func(context.Context, *Call, json.RawMessage) (any, error) {
		// unpadded base64 (RawStdEncoding), as many encoders produce; ferrule accepts it
		return RawResult(`{"content":[{"type":"text","text":"here"},{"type":"image","media_type":"image/png","data":"iVBORw0KGgo"}]}`), nil
	})
	agent, err := NewAgentFromJSON(scripted(call("c1", "shot", map[string]any{})), img)
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	res, err := agent.Run(context.Background(), Prompt("go"))
	if err != nil {
		t.Errorf("Agent.Run: %v (the run completed in ferrule; the Go result is gone)", err)
	} else if res.Status != StatusCompleted {
		t.Errorf("status %v", res.Status)
	}
	run, err := agent.Start(context.Background(), Prompt("go"))
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	var unknown []string
	for e := range run.Events() {
		if u, ok := e.(*UnknownEvent); ok {
			unknown = append(unknown, u.Type)
		}
	}
	if len(unknown) > 0 {
		t.Errorf("known events decoded as *UnknownEvent: %v", unknown)
	}
}

func TestInvalidUTF8InAToolErrorKeepsTheMessage(t *testing.T) {
	tool := NewRawTool("open", "", nil, func(context.Context, *Call, json.RawMessage) (any, error) {
		return nil, fmt.Errorf("open %s: no such file", "report-\xff.txt") // a file name from disk
	})
	agent, err := NewAgentFromJSON(scripted(call("c1", "open", map[string]any{})), tool)
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	res, err := agent.Run(context.Background(), Prompt("go"))
	if err != nil {
		t.Fatal(err)
	}
	if text := toolResults(res)[0].Text(); !strings.Contains(text, "no such file") {
		t.Errorf("the model saw %q instead of the tool's error", text)
	}
}

// replays runs tool once (called with callID), then continues the transcript
// ferrule returned: Go must send it back as ferrule accepts it.
func replays(t *testing.T, callID string, tool Tool) {
	t.Helper()
	agent, err := NewAgentFromJSON(scripted(call(callID, tool.Name(), map[string]any{})), tool)
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	first, err := agent.Run(context.Background(), Prompt("go"))
	if err != nil || first.Status != StatusCompleted {
		t.Fatalf("%+v %v", first, err)
	}
	again, err := agent.Run(context.Background(), Messages(append(first.Messages, UserMessage("more"))...))
	if err != nil || again.Status != StatusCompleted {
		data, _ := json.Marshal(first.Messages[2])
		t.Errorf("replaying ferrule's own transcript: %v\n  the tool message as Go sends it: %s", err, data)
	}
}

func TestATranscriptWithAnEmptyFileReplays(t *testing.T) {
	replays(t, "c1", NewRawTool("cat", "", nil, func(context.Context, *Call, json.RawMessage) (any, error) {
		return RawResult(`{"content":[{"type":"file","media_type":"text/plain","data":"","name":"empty.txt"}]}`), nil
	}))
}

func TestATranscriptWithCallsWithoutIDsReplays(t *testing.T) {
	replays(t, "", NewRawTool("echo", "", nil, func(context.Context, *Call, json.RawMessage) (any, error) {
		return "ok", nil
	}))
}

func TestNoHandlesCallsOrGoroutinesLeakAfterManyRuns(t *testing.T) {
	echo := NewTool("echo", "", func(ctx context.Context, call *Call, args struct{}) (string, error) {
		_ = call.Update("partial")
		return "ok", nil
	})
	agent, err := NewAgentFromJSON(scripted(call("c1", "echo", map[string]any{})), echo)
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	time.Sleep(100 * time.Millisecond)
	g0 := bindingGoroutines()
	from := currentHandle()
	for i := range 500 {
		ctx, cancel := context.WithCancel(context.Background())
		run, err := agent.Start(ctx, Prompt("go"))
		if err != nil {
			t.Fatal(err)
		}
		switch i % 4 {
		case 0:
			for range run.Events() {
			}
			run.Wait()
		case 1:
			run.Wait()
		case 2:
			run.Close()
		case 3:
			// dropped, never waited
		}
		cancel()
	}
	agent.Close()
	agent = nil
	deadline := time.Now().Add(5 * time.Second)
	var live, calls, g int
	for time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(50 * time.Millisecond)
		live, calls, g = liveHandleCount(from, currentHandle()), liveCallCount(), bindingGoroutines()
		if live == 0 && calls == 0 && g <= g0 {
			return
		}
	}
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	t.Errorf("after 500 runs and Close: %d cgo handles, %d liveCalls, goroutines %d -> %d\n%s", live, calls, g0, g, buf)
}

func TestRacesBetweenWaitCancelCloseAndTheRunEnding(t *testing.T) {
	cancelled := make(chan time.Time, 10000)
	tools := []Tool{blocker(cancelled), NewRawTool("quick", "", nil, func(ctx context.Context, c *Call, _ json.RawMessage) (any, error) {
		go func() { // updates from goroutines the tool spawned, racing its return
			for range 3 {
				_ = c.Update("late")
			}
		}()
		_ = c.Update("now")
		return "ok", nil
	})}
	agent, err := NewAgentFromJSON(scripted(call("c1", "quick", map[string]any{}), call("c2", "quick", map[string]any{})), tools...)
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	var bad sync.Map
	var closedErrs atomic.Int32
	for i := range 2000 {
		ctx, cancel := context.WithCancel(context.Background())
		run, err := agent.Start(ctx, Prompt("go"))
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		if i%3 == 0 {
			wg.Go(func() {
				for range run.Events() {
				}
			})
		}
		wg.Go(func() {
			res, err := run.Wait()
			if err != nil {
				if i%2 == 0 && errors.Is(err, ErrInvalidArg) {
					closedErrs.Add(1) // F4: Wait racing Close
					return
				}
				bad.Store(err.Error(), i)
			} else if res.Status != StatusCompleted && res.Status != StatusCancelled {
				bad.Store(string(res.Status), i)
			}
		})
		wg.Go(func() { run.Cancel() })
		wg.Go(cancel)
		if i%2 == 0 {
			wg.Go(func() { run.Close() })
		}
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("iteration %d hung", i)
		}
		run.Close()
	}
	bad.Range(func(k, v any) bool { t.Errorf("%v (e.g. iteration %v)", k, v); return true })
	// A Wait that starts after a racing Close finished may only say the run
	// is closed; one already waiting keeps its result (tested on its own).
	t.Logf("Wait came after Close in %d of 1000 iterations", closedErrs.Load())
}

func TestAgentCloseWhileRunsStart(t *testing.T) {
	echo := NewRawTool("echo", "", nil, func(context.Context, *Call, json.RawMessage) (any, error) { return "ok", nil })
	for range 200 {
		agent, err := NewAgentFromJSON(scripted(call("c1", "echo", map[string]any{})), echo)
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for j := range 8 {
			wg.Go(func() {
				if j%2 == 0 {
					res, err := agent.Run(context.Background(), Prompt("go"))
					if err == nil && res.Status != StatusCompleted {
						t.Errorf("status %v", res.Status)
					} else if err != nil && !errors.Is(err, ErrInvalidArg) {
						t.Error(err)
					}
					return
				}
				run, err := agent.Start(context.Background(), Prompt("go"))
				if err != nil {
					if !errors.Is(err, ErrInvalidArg) {
						t.Error(err)
					}
					return
				}
				for range run.Events() {
				}
				if res, err := run.Wait(); err != nil || res.Status != StatusCompleted {
					t.Errorf("%+v %v", res, err)
				}
				run.Close()
			})
		}
		wg.Go(func() { agent.Close() })
		wg.Wait()
	}
}

// User data carrying a cgo handle is never a small number: the runtime
// kills the process when it finds an unsafe.Pointer below 4096 on a stack it
// moves.
func TestHandleDataIsNeverASmallPointer(t *testing.T) {
	for _, h := range []uintptr{1, 2, 470, 4095} {
		data := handleData(cgo.Handle(h))
		if uintptr(data) < 4096 {
			t.Fatalf("handle %d is the user data %#x", h, uintptr(data))
		}
		if back := dataHandle(data); uintptr(back) != h {
			t.Fatalf("handle %d came back as %d", h, back)
		}
	}
}
