package ferrule

import (
	"bufio"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"testing/iotest"
)

// encoding/json: "UnmarshalJSON must copy the JSON data if it wishes to retain
// the data after returning." A NestedEvent of a type this package does not
// know keeps the bytes it was given as its Raw: read line by line with a
// bufio.Scanner (whose buffer the next lines overwrite), the first event's
// Raw turns into bytes of the second.
func TestReviewANestedUnknownEventKeepsItsOwnBytes(t *testing.T) {
	lines := `{"type":"brand_new","run_id":"run-2","n":1}` + "\n" + `{"type":"other_new","run_id":"run-3","n":2}` + "\n"
	scanner := bufio.NewScanner(iotest.OneByteReader(strings.NewReader(lines)))
	scanner.Buffer(make([]byte, 64), 4096) // a small buffer, as a long stream's would be reused
	var events []NestedEvent
	for scanner.Scan() {
		var event NestedEvent
		if err := json.Unmarshal(scanner.Bytes(), &event); err != nil {
			t.Fatal(err)
		}
		events = append(events, event)
	}
	first, ok := events[0].Event.(*UnknownEvent)
	if !ok {
		t.Fatalf("the first event is %T", events[0].Event)
	}
	if got := string(first.Raw); got != `{"type":"brand_new","run_id":"run-2","n":1}` {
		t.Errorf("the first event's Raw changed under it: %s", got)
	}
	again, err := json.Marshal(events[0])
	if err != nil || !strings.Contains(string(again), "brand_new") {
		t.Errorf("the first event marshals as %s (%v)", again, err)
	}
}

// Swift and Kotlin read an agent_event without its "event" as an unknown
// event; Go gives an *AgentEventEvent whose NestedEvent holds no Event, so
// its promoted methods panic on the host's side.
func TestReviewAnAgentEventWithoutItsEventIsNotAnEventWithNothingInside(t *testing.T) {
	for _, inner := range []string{``, `,"event":null`} {
		data := `{"type":"agent_event","run_id":"run-1","call_id":"c1","agent":"worker","depth":1` + inner + `}`
		event := decodeEvent([]byte(data))
		nested, ok := event.(*AgentEventEvent)
		if !ok {
			continue // unknown as a whole, as in Swift and Kotlin
		}
		if nested.Event.Event == nil {
			t.Errorf("%s: an *AgentEventEvent whose Event is nil", data)
			continue
		}
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("%s: RunID of the nested event panics: %v", data, r)
				}
			}()
			_ = nested.Event.RunID()
		}()
	}
}

// MarshalJSON of a NestedEvent holding a typed nil event panics (writing
// into the nil map that "null" unmarshals to) instead of returning an error
// or null.
func TestReviewMarshallingANestedEventHoldingATypedNilDoesNotPanic(t *testing.T) {
	for _, event := range []Event{(*TurnStartEvent)(nil), (*UnknownEvent)(nil)} {
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("json.Marshal(NestedEvent{%T(nil)}) panics: %v", event, r)
				}
			}()
			_, _ = json.Marshal(NestedEvent{Event: event})
		}()
	}
}

// The conformance runner writes an event this package did not know as
// {"type": "unknown", ...}, which the judge fails ("an event the binding does
// not know"), and the judge checks nested runs for it too. A nested event
// that did not decode is written through NestedEvent.MarshalJSON, as the JSON
// it came with: the judge cannot see that this package did not know it.
func TestReviewTheConformanceRunnerMarksANestedEventItDidNotKnow(t *testing.T) {
	data := `{"type":"agent_event","run_id":"run-1","call_id":"c1","agent":"worker","depth":1,` +
		`"event":{"type":"message_end","run_id":"run-2","turn":1,"message":{"role":"assistant","content":7}}}`
	event := decodeEvent([]byte(data))
	nested, ok := event.(*AgentEventEvent)
	if !ok {
		t.Fatalf("the agent_event is %T", event)
	}
	if _, unknown := nested.Event.Event.(*UnknownEvent); !unknown {
		t.Fatalf("the nested message_end decoded as %T", nested.Event.Event)
	}
	written := written(t, event).(map[string]any)
	inner, _ := written["event"].(map[string]any)
	if inner["type"] != "unknown" {
		t.Errorf("a nested event this package did not know is written as %v", inner)
	}
}

// docs/agents.md: "Unknown fields and an option of the other mode are
// INVALID_ARG", and the hardening made that hold "even at their default"
// (Swift and Kotlin send timeoutMs: 0 and are refused). Go leaves Timeout(0)
// out of the options, so a Handoff given a Timeout is built.
func TestReviewAHandoffRefusesATimeoutEvenOfZero(t *testing.T) {
	billing := workerAgent(t, false, new(atomic.Int32))
	defer billing.Close()
	config := scriptedTurns(map[string]any{"text": "x"})
	front, err := NewAgentFromJSON(config, Handoff("billing", "Billing.", billing, Timeout(0)))
	if err == nil {
		front.Close()
		t.Errorf("a Handoff with Timeout(0) was built")
	}
	var ferr *Error
	if err != nil && !(errors.As(err, &ferr) && ferr.Code == CodeInvalidArg) {
		t.Errorf("refused with %v", err)
	}
}
