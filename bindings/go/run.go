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
const eventBuffer = 64

// Run is a run of an agent. Safe for concurrent use.
type Run struct {
	id     string
	events *eventSink
	// taken is set once the host asked for Events (and must read them).
	taken atomic.Bool

	mu      sync.Mutex
	handle  *C.ferrule_run
	cleanup runtime.Cleanup

	wait   sync.Once
	result *Result
	err    error
}

// eventSink is what a run's event callback reaches (behind a cgo handle).
type eventSink struct {
	ch chan Event
	// dropped is closed when nobody will read the events any more.
	dropped  chan struct{}
	dropOnce sync.Once
	// ended is closed once the run is over, after its last event.
	ended chan struct{}
	// run keeps the Run reachable while events come, so that its cleanup
	// cannot cancel a run whose events are being read.
	run atomic.Pointer[Run]
	// result is the run_end event's, read once ended is closed.
	result *Result
}

func (s *eventSink) deliver(data []byte) {
	select {
	case <-s.dropped:
		return // nobody reads them: not even decoded
	default:
	}
	event := decodeEvent(data)
	if end, ok := event.(*RunEndEvent); ok {
		s.result = end.Result
	}
	select {
	case s.ch <- event:
	case <-s.dropped:
	}
}

func (s *eventSink) drop() { s.dropOnce.Do(func() { close(s.dropped) }) }

// release runs once, after run_end.
func (s *eventSink) release() {
	close(s.ch)
	close(s.ended)
	s.run.Store(nil)
}

// start starts a run. Without events (for Agent.Run) ferrule's event callback
// is a C function that ignores them; either way the sink learns of the run's
// end when ferrule lets go of it, so nothing waits for the run inside C.
func start(ctx context.Context, agent *C.ferrule_agent, in Input, events bool) (*Run, error) {
	if err := ctx.Err(); err != nil {
		return nil, &Error{Code: CodeCancelled, Message: "the context is done: " + err.Error()}
	}
	sink := &eventSink{ch: make(chan Event, eventBuffer), dropped: make(chan struct{}), ended: make(chan struct{})}
	onEvent := C.ferrule_event_fn(C.ferrule_go_event)
	if !events {
		onEvent = C.ferrule_event_fn(C.ferrule_go_ignore_event)
		sink.drop()
	}
	handle := cgo.NewHandle(sink)
	text, length := cArg(in.json)
	var run *C.ferrule_run
	err := takeError(C.ferrule_agent_start(agent, text, length, onEvent, handleData(handle),
		C.ferrule_free_fn(C.ferrule_go_free), &run))
	if err != nil {
		handle.Delete() // not taken: still ours
		return nil, err
	}
	r := &Run{id: goStr(C.ferrule_run_id(run)), events: sink, handle: run}
	sink.run.Store(r)
	r.cleanup = runtime.AddCleanup(r, func(h *C.ferrule_run) { C.ferrule_run_free(h) }, run)
	if done := ctx.Done(); done != nil {
		go r.cancelWith(done)
	}
	return r, nil
}

// cancelWith cancels the run when done closes before the run is over.
func (r *Run) cancelWith(done <-chan struct{}) {
	select {
	case <-done:
		r.Cancel()
	case <-r.events.ended:
	}
}

// ID is the run's id, as in its events.
func (r *Run) ID() string { return r.id }

// Events is every event of the run, in order; it is closed after the
// RunEndEvent. Every call returns the same channel. A host that calls Events
// must read it to the end: the run waits for its reader.
func (r *Run) Events() <-chan Event {
	r.taken.Store(true)
	return r.events.ch
}

// Wait waits for the run to end and returns its result, for every status (a
// failed run's error is in Result.Error). The error is only for a failure of the
// call itself. Without an earlier call of Events, the events are let go.
func (r *Run) Wait() (*Result, error) {
	r.wait.Do(func() {
		if !r.taken.Load() {
			r.events.drop()
		}
		// Wait here, not inside C, where the goroutine would keep its P.
		<-r.events.ended
		if r.events.result != nil {
			// The events were read: the run_end event carried the result.
			r.result = r.events.result
			return
		}
		r.mu.Lock()
		if r.handle == nil {
			r.mu.Unlock()
			r.err = errClosed("the run")
			return
		}
		// A handle of its own keeps the run while this waits without the lock.
		handle := C.ferrule_run_clone(r.handle)
		r.mu.Unlock()
		defer C.ferrule_run_free(handle)
		var text *C.char
		var length C.size_t
		if r.err = takeError(C.ferrule_run_wait(handle, &text, &length)); r.err != nil {
			return
		}
		defer C.ferrule_string_free(text)
		var result Result
		if err := json.Unmarshal(C.GoBytes(unsafe.Pointer(text), C.int(length)), &result); err != nil {
			r.err = &Error{Code: CodeInvalidJSON, Message: "the run result: " + err.Error()}
			return
		}
		r.result = &result
	})
	return r.result, r.err
}

// Cancel cancels the run: running tools see their context cancelled, nothing
// new starts, and the run ends with status cancelled unless it already ended.
func (r *Run) Cancel() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.handle != nil {
		C.ferrule_run_cancel(r.handle)
	}
}

// Close cancels the run if it is still going and lets go of it; later calls do
// nothing. Its events channel still closes after the RunEndEvent; events
// nobody asked for are let go.
func (r *Run) Close() error {
	if !r.taken.Load() {
		r.events.drop()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.handle != nil {
		C.ferrule_run_cancel(r.handle)
		r.cleanup.Stop()
		C.ferrule_run_free(r.handle)
		r.handle = nil
	}
	return nil
}
