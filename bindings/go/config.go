package ferrule

// The configuration's types (Config, Model, Timeouts, History, BuiltinTools)
// are generated from the schema (inputs_gen.go): zero values mean the default
// and are left out, durations are time.Duration.

// ToolChoiceName makes the model call one tool (Config.ToolChoice).
type ToolChoiceName struct {
	Name string `json:"name"`
}
