package ferruletemporal

import (
	ferrule "github.com/ferrule-dev/ferrule/bindings/go"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// Register registers AgentRun and its activities on w, running the agents by
// the names requests give (Request.Agent). Every worker of a task queue must
// register the same names, each agent built from the same configuration and
// tools: a run's steps and calls go to whichever worker is free. The agents
// stay the caller's: close them after the worker stopped.
func Register(w worker.Registry, agents map[string]*ferrule.Agent) {
	kept := make(map[string]*ferrule.Agent, len(agents))
	for name, agent := range agents {
		kept[name] = agent
	}
	activities := &Activities{agents: kept}
	w.RegisterWorkflowWithOptions(AgentRun, workflowRegistration)
	w.RegisterActivityWithOptions(activities.Step, activity.RegisterOptions{Name: StepActivityName})
	w.RegisterActivityWithOptions(activities.Call, activity.RegisterOptions{Name: CallActivityName})
}

// workflowRegistration names AgentRun.
var workflowRegistration = workflow.RegisterOptions{Name: WorkflowName}
