package ferrule

import (
	"bytes"
	"encoding/json"
	"reflect"

	"github.com/buger/jsonparser"
	"github.com/valyala/fastjson"
)

// Event is one event of a run, in order. Switch on its concrete type (the
// types, one per event, are generated from the schema: events_gen.go); types
// added to ferrule later arrive as *UnknownEvent.
type Event interface {
	// EventType is the event's snake_case type name ("run_start").
	EventType() string
	// RunID is the id of the run it belongs to.
	RunID() string
}

// NestedEvent is an event of a run nested in another (an agent called as a
// tool), as an AgentEventEvent carries it; switch on its Event as on any.
type NestedEvent struct {
	Event
}

// UnmarshalJSON reads the nested event as decodeEvent does: one of an unknown
// type (or that does not decode) is an *UnknownEvent.
func (n *NestedEvent) UnmarshalJSON(data []byte) error {
	n.Event = decodeEvent(data)
	return nil
}

// decodeFrom reads the nested event from parsed JSON, as UnmarshalJSON does.
func (n *NestedEvent) decodeFrom(value *fastjson.Value) error {
	n.Event = eventFrom(value, nil)
	return nil
}

// MarshalJSON writes the nested event's JSON with its type (one of an unknown
// type as it came; none, or a nil pointer, as null).
func (n NestedEvent) MarshalJSON() ([]byte, error) {
	if n.Event == nil || reflect.ValueOf(n.Event).IsNil() {
		return []byte("null"), nil
	}
	if unknown, ok := n.Event.(*UnknownEvent); ok {
		return unknown.Raw, nil
	}
	data, err := json.Marshal(n.Event)
	if err != nil {
		return nil, err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		return nil, err
	}
	fields["type"], _ = json.Marshal(n.Event.EventType())
	return json.Marshal(fields)
}

// decodeEvents reads a burst of events, a JSON list; text that is no list is
// one *UnknownEvent holding it. A big burst is read event by event, so that a
// run_end in it is read in parts (decodeRunEndInParts).
func decodeEvents(data []byte) []Event {
	if len(data) > bigEvent {
		if events := decodeEventsOneByOne(data); events != nil {
			return events
		}
	}
	return parseEvents(data)
}

// decodeEventsOneByOne reads a list of event objects one by one, as
// parseEvents reads them; nil for anything else.
func decodeEventsOneByOne(data []byte) []Event {
	parser := parsers.Get()
	defer parsers.Put(parser)
	var events []Event
	objects := true
	closing, err := jsonparser.ArrayEach(data, func(item []byte, kind jsonparser.ValueType, _ int, err error) {
		if objects = objects && err == nil && kind == jsonparser.Object; !objects {
			return
		}
		if len(item) > bigEvent {
			if event := decodeRunEndInParts(item); event != nil {
				events = append(events, event)
				return
			}
		}
		value, err := parser.ParseBytes(item)
		if objects = err == nil; objects {
			events = append(events, eventFrom(value, nil))
		}
	})
	if err != nil || !objects || len(bytes.TrimLeft(data[closing+1:], " \t\r\n")) > 0 {
		return nil
	}
	return events
}

// parseEvents reads a burst parsed whole.
func parseEvents(data []byte) []Event {
	parser := parsers.Get()
	defer parsers.Put(parser)
	value, err := parser.ParseBytes(data)
	if err != nil || value.Type() != fastjson.TypeArray {
		return []Event{&UnknownEvent{Raw: append([]byte(nil), data...)}}
	}
	items, _ := value.Array()
	events := make([]Event, len(items))
	for i, item := range items {
		events[i] = eventFrom(item, nil)
	}
	return events
}

// incomplete reports an event that decoded but lacks what it must hold (an
// agent_event without its nested event): decodeEvent makes it unknown.
func incomplete(event Event) bool {
	nested, ok := event.(*AgentEventEvent)
	return ok && nested.Event.Event == nil
}
