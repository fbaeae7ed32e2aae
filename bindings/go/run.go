package ferrule

/*
#include <stdlib.h>
#include "ferrule.h"
#include "shims.h"
*/
import "C"

import (
	"context"
	"encoding/json"
	"runtime"
	"runtime/cgo"
	"sync"
	"sync/atomic"
	"unsafe"
)

// eventBuffer is how many events wait for a slow reader before the run waits.
const eventBuffer = 256

// closedEvents is the channel Events gives once the events were let go.
var closedEvents = func() chan Event {
	ch := make(chan Event)
	close(ch)
	return ch
}()

// Run is a run of an agent. Safe for concurrent use. A Run dropped without
// Close is cancelled and freed by a cleanup, unless its events are being read.
type Run struct {
	id   string
	core *runCore
	// taken is set once the host asked for Events (and must read them).
	taken   atomic.Bool
	cleanup runtime.Cleanup

	wait   sync.Once
	result *Result
	err    error
}

// runCore is what outlives a Run's reachability: the C handle and the events,
// reached by the context watcher and the cleanup without holding the Run.
type runCore struct {
	mu     sync.Mutex
	handle *C.ferrule_run
	events *eventSink
}

// cancel cancels the run unless it was closed.
func (c *runCore) cancel() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.handle != nil {
		C.ferrule_run_cancel(c.handle)
	}
}

// close cancels the run if it is still going and frees the handle; events
// nobody takes from then on are let go.
func (c *runCore) close() {
	c.events.abandon()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.handle != nil {
		C.ferrule_run_cancel(c.handle)
		C.ferrule_run_free(c.handle)
		c.handle = nil
	}
}

// cancelWith cancels the run when done closes before the run is over.
func (c *runCore) cancelWith(done <-chan struct{}) {
	select {
	case <-done:
		c.cancel()
	case <-c.events.ended:
	}
}

// eventSink is what a run's event callback reaches (behind a cgo handle).
type eventSink struct {
	ch chan Event
	// dropped is closed when nobody will read the events: they are not decoded.
	dropped  chan struct{}
	dropOnce sync.Once
	// abandoned is closed by Close: a reader may have stopped, so an event
	// that finds the buffer full is let go instead of waited for.
	abandoned   chan struct{}
	abandonOnce sync.Once
	// ended is closed once the run is over, after its last event.
	ended chan struct{}
	// reader keeps the Run reachable while its events are read, so that its
	// cleanup cannot cancel a run someone is following.
	reader atomic.Pointer[Run]
	// result is the run_end event's, read once ended is closed.
	result *Result
	// endOnly is set for a run of Agent.Run, which asked for run_end alone;
	// end is then that event's JSON, decoded by Wait (not on ferrule's event
	// thread, which would stay busy and make ferrule start more when many runs
	// end at once). Read once ended is closed.
	endOnly bool
	end     []byte
}

// deliver decodes a burst of events (the run was started with event_bursts)
// and hands them to the reader, in order; data is borrowed.
func (s *eventSink) deliver(data []byte) {
	if s.endOnly {
		s.end = append([]byte(nil), data...)
		return
	}
	select {
	case <-s.dropped:
		return
	default:
	}
	for _, event := range decodeEvents(data) {
		if end, ok := event.(*RunEndEvent); ok {
			s.result = end.Result
		}
		s.hand(event)
	}
}

// hand gives the reader an event, waiting for room unless nobody reads.
func (s *eventSink) hand(event Event) {
	// Room in the buffer of a channel someone reads: no need for the select
	// of three (one case and a default takes no lock but the buffer's).
	select {
	case <-s.dropped:
		return
	default:
	}
	select {
	case s.ch <- event:
		return
	default:
	}
	select {
	case s.ch <- event:
	case <-s.dropped:
	case <-s.abandoned:
		select {
		case s.ch <- event:
		default:
		}
	}
}

func (s *eventSink) drop()    { s.dropOnce.Do(func() { close(s.dropped) }) }
func (s *eventSink) abandon() { s.abandonOnce.Do(func() { close(s.abandoned) }) }

// endResult is the run's result from its run_end event, once ended is closed; nil
// when the event was not kept (or does not decode).
func (s *eventSink) endResult() *Result {
	if s.result == nil && s.end != nil {
		if end, ok := decodeReceived(s.end).(*RunEndEvent); ok {
			s.result = end.Result
		}
		s.end = nil
	}
	return s.result
}

// release runs once, after run_end. ended closes before the channel, so a
// reader that saw the channel close also sees the run ended (and its result).
func (s *eventSink) release() {
	close(s.ended)
	close(s.ch)
	s.reader.Store(nil)
}

// start starts a run. Without events (for Agent.Run) the run delivers run_end
// alone, whose result is the run's; either way the sink learns of the run's
// end when ferrule lets go of it, so nothing waits for the run inside C.
func start(ctx context.Context, agent *C.ferrule_agent, in Input, events bool) (*Run, error) {
	if err := ctx.Err(); err != nil {
		return nil, &Error{Code: CodeCancelled, Message: "the context is done: " + err.Error()}
	}
	if in.err != nil {
		return nil, in.err
	}
	if in.Tools != nil {
		tools, _ := json.Marshal(in.Tools)
		in.json = withField(in.json, "tools", tools)
	}
	if in.WithoutMessages {
		in.json = withField(in.json, "result_messages", []byte(`"none"`))
	}
	if in.ReturnCalls {
		in.json = withField(in.json, "calls", []byte(`"return"`))
	}
	if events {
		// One call into Go per burst of events, not per event.
		in.json = withField(in.json, "event_bursts", []byte("true"))
	} else {
		// Only run_end, whose delivery tells the sink the run is over: the
		// run builds no other event.
		in.json = withField(in.json, "events", []byte(`"run_end"`))
	}
	sink := &eventSink{dropped: make(chan struct{}), abandoned: make(chan struct{}), ended: make(chan struct{})}
	if events {
		sink.ch = make(chan Event, eventBuffer)
	} else {
		// Nothing is sent on ch: it only closes when the run is over.
		sink.ch = make(chan Event)
		sink.endOnly = true
		sink.drop()
	}
	handle := cgo.NewHandle(sink)
	text, length := cArg(in.json)
	var run *C.ferrule_run
	err := takeError(C.ferrule_agent_start(agent, text, length, C.ferrule_event_fn(C.ferrule_go_event), handleData(handle),
		C.ferrule_free_fn(C.ferrule_go_free), &run))
	if err != nil {
		handle.Delete() // not taken: still ours
		return nil, err
	}
	core := &runCore{handle: run, events: sink}
	r := &Run{id: goStr(C.ferrule_run_id(run)), core: core}
	r.cleanup = runtime.AddCleanup(r, (*runCore).close, core)
	if done := ctx.Done(); done != nil {
		go core.cancelWith(done)
	}
	return r, nil
}

// ID is the run's id, as in its events.
func (r *Run) ID() string { return r.id }

// Events is every event of the run, in order; it is closed after the
// RunEndEvent. Every call returns the same channel. A host that calls Events
// must read it to the end (or Close the run): the run waits for its reader.
// After Wait without Events, or on a run of Agent.Run, the events were let go
// and the channel is closed.
func (r *Run) Events() <-chan Event {
	sink := r.core.events
	select {
	case <-sink.dropped:
		if !r.taken.Load() {
			return closedEvents
		}
	default:
	}
	if !r.taken.Swap(true) {
		select {
		case <-sink.ended:
		default:
			sink.reader.Store(r)
		}
	}
	return sink.ch
}

// Wait waits for the run to end and returns its result, for every status (a
// failed run's error is in Result.Error). The error is only for a failure of the
// call itself. Without an earlier call of Events, the events are let go. A Wait
// inside one of the run's own tools waits forever: the run waits for the tool.
func (r *Run) Wait() (*Result, error) {
	r.wait.Do(func() {
		sink := r.core.events
		if !r.taken.Load() {
			sink.drop()
		}
		// A handle of its own, taken now, keeps the result reachable should
		// another goroutine Close the run meanwhile.
		r.core.mu.Lock()
		if r.core.handle == nil {
			r.core.mu.Unlock()
			r.result, r.err = r.knownResult()
			return
		}
		handle := C.ferrule_run_clone(r.core.handle)
		r.core.mu.Unlock()
		defer C.ferrule_run_free(handle)
		// Wait here, not inside C, where the goroutine would keep its P.
		<-sink.ended
		if result := sink.endResult(); result != nil {
			// The run_end event carried the result.
			r.result = result
			return
		}
		var text *C.char
		var length C.size_t
		if r.err = takeError(C.ferrule_run_wait(handle, &text, &length)); r.err != nil {
			return
		}
		defer C.ferrule_string_free(text)
		var result Result
		if err := decodeJSON(unsafe.Slice((*byte)(unsafe.Pointer(text)), length), &result); err != nil {
			r.err = &Error{Code: CodeInvalidJSON, Message: "the run result: " + err.Error()}
			return
		}
		r.result = &result
	})
	return r.result, r.err
}

// knownResult is the result of a closed run whose run_end event was read.
func (r *Run) knownResult() (*Result, error) {
	sink := r.core.events
	select {
	case <-sink.ended:
		if result := sink.endResult(); result != nil {
			return result, nil
		}
	default:
	}
	return nil, errClosed("the run")
}

// Cancel cancels the run: running tools see their context cancelled, nothing
// new starts, and the run ends with status cancelled unless it already ended.
func (r *Run) Cancel() { r.core.cancel() }

// Inject queues a user or system message into the live run: it enters the
// transcript before the next model request (never between a call and its
// result), with Origin "injection" and a MessageInjectedEvent. A message still
// waiting when the model answers keeps the run going for one more request.
// Errors: ALREADY_COMPLETED once the run is over (or closed), INVALID_ARG for
// another role.
func (r *Run) Inject(msg Message) error {
	data, err := json.Marshal(msg)
	if err != nil {
		return &Error{Code: CodeInvalidArg, Message: "inject: " + err.Error()}
	}
	r.core.mu.Lock()
	defer r.core.mu.Unlock()
	if r.core.handle == nil {
		return &Error{Code: CodeAlreadyCompleted, Message: "inject: the run was closed"}
	}
	p, n := cArg(data)
	return takeError(C.ferrule_run_inject(r.core.handle, p, n))
}

// Close cancels the run if it is still going and lets go of it; later calls do
// nothing. Its events channel still closes after the RunEndEvent, but events
// that find the channel's buffer full are let go from now on.
func (r *Run) Close() error {
	if !r.taken.Load() {
		r.core.events.drop()
	}
	r.cleanup.Stop()
	r.core.close()
	return nil
}
