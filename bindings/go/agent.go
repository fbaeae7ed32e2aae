package ferrule

/*
#include "ferrule.h"
*/
import "C"

import (
	"context"
	"encoding/json"
	"runtime"
	"sync"
	"unsafe"
)

// Agent is a built agent: its configuration and tools, shared by every run.
// Safe for concurrent use. Close it when done; runs already started go on.
type Agent struct {
	mu      sync.RWMutex
	handle  *C.ferrule_agent
	cleanup runtime.Cleanup
}

// NewAgent builds an agent from a configuration (with its Hooks) and Go tools.
func NewAgent(cfg Config, tools ...Tool) (*Agent, error) {
	config, err := json.Marshal(cfg)
	if err != nil {
		return nil, &Error{Code: CodeInvalidArg, Message: "config: " + err.Error()}
	}
	return newAgent(config, cfg.Hooks, cfg.Model.Host, tools...)
}

// NewAgentFromJSON builds an agent from configuration JSON (the format of
// ferrule's C ABI) and Go tools.
func NewAgentFromJSON(config []byte, tools ...Tool) (*Agent, error) {
	return NewAgentFromJSONWithHooks(config, nil, tools...)
}

// NewAgentFromJSONWithHooks builds an agent from configuration JSON, hooks and
// Go tools.
func NewAgentFromJSONWithHooks(config []byte, hooks []Hook, tools ...Tool) (*Agent, error) {
	return newAgent(config, hooks, nil, tools...)
}

// NewAgentFromJSONWithModel builds an agent from configuration JSON whose
// model is {"provider": "host", "name": ...}, the model the host runs, hooks
// and Go tools: Model.Host for a configuration kept as JSON.
func NewAgentFromJSONWithModel(config []byte, model HostModel, hooks []Hook, tools ...Tool) (*Agent, error) {
	if model == nil {
		return nil, &Error{Code: CodeNullArg, Message: "no host model"}
	}
	return newAgent(config, hooks, model, tools...)
}

// newAgent builds an agent from configuration JSON, hooks, the host's model
// (nil for a built-in provider) and Go tools.
func newAgent(config []byte, hooks []Hook, model HostModel, tools ...Tool) (*Agent, error) {
	text, length := cArg(config)
	var builder *C.ferrule_agent_builder
	if err := takeError(C.ferrule_agent_builder_new(text, length, &builder)); err != nil {
		return nil, err
	}
	for _, tool := range tools {
		if err := tool.register(builder); err != nil {
			C.ferrule_agent_builder_free(builder)
			return nil, err
		}
	}
	for _, hook := range hooks {
		if err := hook.register(builder); err != nil {
			C.ferrule_agent_builder_free(builder)
			return nil, err
		}
	}
	if model != nil {
		var named struct {
			Model struct {
				Name string `json:"name"`
			} `json:"model"`
		}
		_ = json.Unmarshal(config, &named)
		if err := registerModel(builder, named.Model.Name, model); err != nil {
			C.ferrule_agent_builder_free(builder)
			return nil, err
		}
	}
	var handle *C.ferrule_agent
	if err := takeError(C.ferrule_agent_build(builder, &handle)); err != nil {
		return nil, err
	}
	agent := &Agent{handle: handle}
	agent.cleanup = runtime.AddCleanup(agent, func(h *C.ferrule_agent) { C.ferrule_agent_free(h) }, handle)
	return agent, nil
}

// Start starts a run. Cancelling ctx cancels the run. Read Events to the end, or
// call Wait without ever calling Events.
func (a *Agent) Start(ctx context.Context, in Input) (*Run, error) {
	return a.start(ctx, in, true)
}

// Run starts a run and waits for its result (its events are never decoded).
func (a *Agent) Run(ctx context.Context, in Input) (*Result, error) {
	run, err := a.start(ctx, in, false)
	if err != nil {
		return nil, err
	}
	defer run.Close()
	return run.Wait()
}

// start starts a run under the agent's lock, with its events for a reader or
// let go.
func (a *Agent) start(ctx context.Context, in Input, events bool) (*Run, error) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	if a.handle == nil {
		return nil, errClosed("the agent")
	}
	return start(ctx, a.handle, in, events)
}

// UnusedRecordings lists the exchanges of the cassette the agent's model
// replays (Model.Record with Mode "replay" or "replay_or_record") that none of
// its requests has used so far, in cassette order: read once the runs are
// over, it says what a replay left out. An error with CodeInvalidArg when the
// model replays no cassette. Safe from any goroutine.
func (a *Agent) UnusedRecordings() ([]UnusedExchange, error) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	if a.handle == nil {
		return nil, errClosed("the agent")
	}
	var text *C.char
	var length C.size_t
	if err := takeError(C.ferrule_agent_unused_recordings(a.handle, &text, &length)); err != nil {
		return nil, err
	}
	defer C.ferrule_string_free(text)
	var report struct {
		Unused []UnusedExchange `json:"unused"`
	}
	if err := json.Unmarshal(unsafe.Slice((*byte)(unsafe.Pointer(text)), length), &report); err != nil {
		return nil, &Error{Code: CodeInvalidJSON, Message: "the unused recordings: " + err.Error()}
	}
	return report.Unused, nil
}

// Close lets go of the agent; later calls do nothing. Runs already started keep
// it alive until they end.
func (a *Agent) Close() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.handle != nil {
		a.cleanup.Stop()
		C.ferrule_agent_free(a.handle)
		a.handle = nil
	}
	return nil
}
