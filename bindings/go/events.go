package ferrule

// Event is one event of a run, in order. Switch on its concrete type (the
// types, one per event, are generated from the schema: events_gen.go); types
// added to ferrule later arrive as *UnknownEvent.
type Event interface {
	// EventType is the event's snake_case type name ("run_start").
	EventType() string
	// RunID is the id of the run it belongs to.
	RunID() string
}
