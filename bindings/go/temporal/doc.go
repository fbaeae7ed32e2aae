// Package ferruletemporal runs ferrule agents as Temporal workflows: a run
// that survives the process holding it.
//
// The workflow (AgentRun) keeps a run's portable state and nothing else: each
// model request is an activity (Step: a ferrule run that returns its calls
// instead of running them, ferrule.Input.ReturnCalls), and each call is an
// activity of its own (Call: a ferrule.Invoke run, its updates sent as
// heartbeats, told its attempt). Approvals wait for a signal (SignalDecide),
// which may come days later, to whichever worker holds the run then.
// Cancelling the workflow cancels the activity under way and so the tool.
// Usage, events and the calls that wait are workflow queries. After a bounded
// number of steps the workflow continues as new, carrying the state.
//
// Workers register the workflow and activities with Register, naming the
// agents they run; a worker builds its agents from the same configuration and
// tools as every other worker of the task queue. Clients start runs with
// Start and decide with Decide.
//
// The package's name is not its directory's, so that it does not shadow
// go.temporal.io/sdk/temporal.
package ferruletemporal
