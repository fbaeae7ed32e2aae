package ferrule

import (
	"encoding/json"
	"time"
)

// Config is an agent's configuration; it marshals to the configuration JSON of
// ferrule's C ABI. Zero values mean the default and are left out.
type Config struct {
	Model              Model
	System             string
	ToolExecution      string // "parallel" (default) or "sequential"
	ToolChoice         any    // "auto", "none", "required" or ToolChoiceName{...}
	MaxRounds          int
	MaxConcurrentTools int
	ToolTimeout        time.Duration
	MaxToolResultBytes int
	BuiltinTools       *BuiltinTools
	// RunTimeout bounds a whole run: at the deadline it ends failed with code
	// TIMEOUT (Result.Error), its running tools cancelled.
	RunTimeout time.Duration
	// OutputSchema is a JSON Schema the final answer must satisfy (see Output);
	// OutputRetries is how many times a wrong answer goes back to the model
	// (nil: 2) before the run fails with INVALID_OUTPUT.
	OutputSchema  json.RawMessage
	OutputRetries *int
	// History, when set, bounds the estimated input of each request: the
	// oldest messages are left out of a request that would exceed it (a
	// HistoryCompactedEvent says so); the transcript keeps them.
	History *History
	// HookTimeout bounds one hook's decision (zero: 60 s; there is no unbounded
	// setting here, as there is in the configuration JSON); a hook that takes
	// longer ends the run failed with code TIMEOUT.
	HookTimeout time.Duration
	// Hooks are consulted at their stages of every run (see Hook).
	Hooks []Hook
}

// History is the history budget.
type History struct {
	MaxInputTokens int `json:"max_input_tokens"`
}

// ToolChoiceName makes the model call one tool.
type ToolChoiceName struct {
	Name string `json:"name"`
}

// Model says which model serves the agent and how to reach it.
type Model struct {
	Provider, Name, BaseURL, APIKeyEnv string
	Headers                            map[string]string
	// Script is the scripted model's turns (provider "scripted").
	Script     json.RawMessage
	Stream     *bool
	MaxTokens  int
	MaxRetries *int
	// RetryBackoff is the first retry's delay (doubling, with jitter).
	RetryBackoff time.Duration
	Timeouts     *Timeouts
	// ImageInput false replaces images by notes; StrictTools says whether the
	// provider can guarantee strict tool arguments.
	ImageInput, StrictTools *bool
	// EncryptedReasoning and ServerHistory are openai-responses options.
	EncryptedReasoning *bool
	ServerHistory      bool
}

// Timeouts of one model request; zero leaves ferrule's default.
type Timeouts struct {
	Connect, FirstByte, Idle, Total time.Duration
}

// BuiltinTools selects and configures ferrule's built-in tools (read, write,
// edit, bash, apply_patch, list_files).
type BuiltinTools struct {
	WorkingDirectory string
	// Allowed names the tools offered, built-in and host alike: nil offers the
	// default selection, an empty non-nil slice none.
	Allowed  []string
	Excluded []string
	Disable  bool
	Confine  bool
	// BashPassEnv names key variables bash commands may see after all.
	BashPassEnv []string
	// NeedsApproval names built-ins whose calls wait for the host's decision
	// (as the NeedsApproval tool option).
	NeedsApproval []string
}

// MarshalJSON writes the configuration JSON.
func (c Config) MarshalJSON() ([]byte, error) {
	type config struct {
		Model              Model           `json:"model"`
		System             string          `json:"system,omitempty"`
		ToolExecution      string          `json:"tool_execution,omitempty"`
		ToolChoice         any             `json:"tool_choice,omitempty"`
		MaxRounds          int             `json:"max_rounds,omitempty"`
		MaxConcurrentTools int             `json:"max_concurrent_tools,omitempty"`
		ToolTimeoutMS      int64           `json:"tool_timeout_ms,omitempty"`
		MaxToolResultBytes int             `json:"max_tool_result_bytes,omitempty"`
		BuiltinTools       *BuiltinTools   `json:"builtin_tools,omitempty"`
		RunTimeoutMS       int64           `json:"run_timeout_ms,omitempty"`
		OutputSchema       json.RawMessage `json:"output_schema,omitempty"`
		OutputRetries      *int            `json:"output_retries,omitempty"`
		HookTimeoutMS      int64           `json:"hook_timeout_ms,omitempty"`
		History            *History        `json:"history,omitempty"`
	}
	return json.Marshal(config{c.Model, c.System, c.ToolExecution, c.ToolChoice, c.MaxRounds,
		c.MaxConcurrentTools, millis(c.ToolTimeout), c.MaxToolResultBytes, c.BuiltinTools, millis(c.RunTimeout),
		c.OutputSchema, c.OutputRetries, millis(c.HookTimeout), c.History})
}

// MarshalJSON writes the "model" object.
func (m Model) MarshalJSON() ([]byte, error) {
	type model struct {
		Provider           string            `json:"provider"`
		Name               string            `json:"name,omitempty"`
		BaseURL            string            `json:"base_url,omitempty"`
		APIKeyEnv          string            `json:"api_key_env,omitempty"`
		Headers            map[string]string `json:"headers,omitempty"`
		Script             json.RawMessage   `json:"script,omitempty"`
		Stream             *bool             `json:"stream,omitempty"`
		MaxTokens          int               `json:"max_tokens,omitempty"`
		MaxRetries         *int              `json:"max_retries,omitempty"`
		RetryBackoffMS     int64             `json:"retry_backoff_ms,omitempty"`
		Timeouts           *Timeouts         `json:"timeouts,omitempty"`
		ImageInput         *bool             `json:"image_input,omitempty"`
		StrictTools        *bool             `json:"strict_tools,omitempty"`
		EncryptedReasoning *bool             `json:"encrypted_reasoning,omitempty"`
		ServerHistory      bool              `json:"server_history,omitempty"`
	}
	return json.Marshal(model{m.Provider, m.Name, m.BaseURL, m.APIKeyEnv, m.Headers, m.Script, m.Stream,
		m.MaxTokens, m.MaxRetries, millis(m.RetryBackoff), m.Timeouts, m.ImageInput, m.StrictTools,
		m.EncryptedReasoning, m.ServerHistory})
}

// MarshalJSON writes the "timeouts" object.
func (t Timeouts) MarshalJSON() ([]byte, error) {
	type timeouts struct {
		Connect   int64 `json:"connect_ms,omitempty"`
		FirstByte int64 `json:"first_byte_ms,omitempty"`
		Idle      int64 `json:"idle_ms,omitempty"`
		Total     int64 `json:"total_ms,omitempty"`
	}
	return json.Marshal(timeouts{millis(t.Connect), millis(t.FirstByte), millis(t.Idle), millis(t.Total)})
}

// MarshalJSON writes the "builtin_tools" object.
func (b BuiltinTools) MarshalJSON() ([]byte, error) {
	type builtins struct {
		WorkingDirectory string   `json:"working_directory,omitempty"`
		Allowed          []string `json:"allowed"`
		Excluded         []string `json:"excluded,omitempty"`
		Disable          bool     `json:"disable,omitempty"`
		Confine          bool     `json:"confine,omitempty"`
		BashPassEnv      []string `json:"bash_pass_env,omitempty"`
		NeedsApproval    []string `json:"needs_approval,omitempty"`
	}
	// nil marshals as null (the default selection), an empty slice as [].
	return json.Marshal(builtins{b.WorkingDirectory, b.Allowed, b.Excluded, b.Disable, b.Confine, b.BashPassEnv,
		b.NeedsApproval})
}

// millis is d in whole milliseconds, rounded up so that a positive duration
// never becomes 0 (which means "none"); a negative one stays negative, for
// ferrule to refuse.
func millis(d time.Duration) int64 {
	if d > 0 {
		return int64((d + time.Millisecond - 1) / time.Millisecond)
	}
	return d.Milliseconds()
}
