package ferruletemporal

// The names the workflow, its activities, signal and queries are registered
// under: a client of another language reaches them by these.
const (
	// WorkflowName is the agent run workflow (AgentRun).
	WorkflowName = "ferrule.AgentRun"
	// StepActivityName is the activity that makes one model request (or
	// resumes the run with results or decisions) and stops at the next batch.
	StepActivityName = "ferrule.Step"
	// CallActivityName is the activity that runs one call.
	CallActivityName = "ferrule.Call"
	// SignalDecide carries decisions for calls that wait for approval: a
	// map[string]ferrule.Decision keyed by the interruptions' keys.
	SignalDecide = "ferrule.decide"
	// QueryUsage answers the run's ferrule.Usage so far.
	QueryUsage = "ferrule.usage"
	// QueryEvents answers an Events: the run's last events and how many
	// there were.
	QueryEvents = "ferrule.events"
	// QueryPending answers the []ferrule.Interruption that wait for a
	// decision (none while the run is not waiting).
	QueryPending = "ferrule.pending"
)
