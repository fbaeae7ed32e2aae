package ferrule

import "encoding/json"

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

// MarshalJSON writes the nested event's JSON with its type (one of an unknown
// type as it came).
func (n NestedEvent) MarshalJSON() ([]byte, error) {
	if unknown, ok := n.Event.(*UnknownEvent); ok {
		return unknown.Raw, nil
	}
	if n.Event == nil {
		return []byte("null"), nil
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
