//go:build !ferrule_only

// Left out of the binary that measures the other library's W3 alone (`make
// bench-go`), whose peak resident set would otherwise count this code too.

package gobench

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/components/tool/utils"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/flow/agent/react"
	"github.com/cloudwego/eino/schema"
)

// fakeModel plays the scripted model's part for eino: calls per round until the
// last round, then an answer, after an optional delay per turn.
type fakeModel struct {
	rounds, calls int
	delay         time.Duration
	arguments     func(call int) string
}

func (m *fakeModel) Generate(ctx context.Context, input []*schema.Message, _ ...model.Option) (*schema.Message, error) {
	if m.delay > 0 {
		time.Sleep(m.delay)
	}
	// The input is the prompt, then per round an assistant message and its results.
	round := (len(input) - 1) / (m.calls + 1)
	if round >= m.rounds-1 {
		return schema.AssistantMessage("done", nil), nil
	}
	calls := make([]schema.ToolCall, m.calls)
	for i := range calls {
		calls[i] = schema.ToolCall{ID: fmt.Sprintf("c%d", i+1), Type: "function",
			Function: schema.FunctionCall{Name: "noop", Arguments: m.arguments(i)}}
	}
	return schema.AssistantMessage("", calls), nil
}

func (m *fakeModel) Stream(ctx context.Context, input []*schema.Message, opts ...model.Option) (*schema.StreamReader[*schema.Message], error) {
	message, err := m.Generate(ctx, input, opts...)
	if err != nil {
		return nil, err
	}
	return schema.StreamReaderFromArray([]*schema.Message{message}), nil
}

func (m *fakeModel) WithTools([]*schema.ToolInfo) (model.ToolCallingChatModel, error) { return m, nil }

// noopArgs are W2's arguments; eino decodes them into this type (it does not
// check them against a JSON schema).
type noopArgs struct {
	ID   int    `json:"id,omitempty"`
	Name string `json:"name,omitempty"`
}

func einoAgent(b *testing.B, m *fakeModel) *react.Agent {
	noop, err := utils.InferTool("noop", "Does nothing.", func(ctx context.Context, args noopArgs) (string, error) {
		return "ok", nil
	})
	if err != nil {
		b.Fatal(err)
	}
	agent, err := react.NewAgent(context.Background(), &react.AgentConfig{
		ToolCallingModel: m,
		ToolsConfig:      compose.ToolsNodeConfig{Tools: []tool.BaseTool{noop}},
		MaxStep:          2*m.rounds + 10,
	})
	if err != nil {
		b.Fatal(err)
	}
	return agent
}

func einoRun(b *testing.B, agent *react.Agent) {
	answer, err := agent.Generate(context.Background(), []*schema.Message{schema.UserMessage("go")})
	if err != nil || answer.Content != "done" {
		b.Fatalf("%v %v", answer, err)
	}
}

func benchmarkEino(b *testing.B, name string) {
	w := load(b, name)
	m := &fakeModel{rounds: w.Rounds, calls: w.CallsPerRound, arguments: func(i int) string {
		if name == "w2" {
			return fmt.Sprintf(`{"id": %d, "name": "%c"}`, i+1, 'a'+i%26)
		}
		return "{}"
	}}
	agent := einoAgent(b, m)
	each(b, w, func() { einoRun(b, agent) })
}

func BenchmarkEinoW1(b *testing.B) { benchmarkEino(b, "w1") }
func BenchmarkEinoW2(b *testing.B) { benchmarkEino(b, "w2") }

func BenchmarkEinoW3(b *testing.B) {
	agent := einoAgent(b, &fakeModel{rounds: 5, calls: 1, delay: 10 * time.Millisecond,
		arguments: func(int) string { return "{}" }})
	concurrently(b, func() { einoRun(b, agent) })
}
