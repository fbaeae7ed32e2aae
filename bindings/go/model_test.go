package ferrule

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// pocket is a host model: it looks a plan up, then answers with what the tool
// said. It streams from a goroutine of its own.
func pocket(requests *atomic.Int32, seen chan<- *ModelRequest) HostModel {
	return HostModelFunc(func(ctx context.Context, request *ModelRequest, out *ModelOutput) error {
		requests.Add(1)
		if seen != nil {
			seen <- request
		}
		done := make(chan error, 1)
		messages, err := request.Messages()
		if err != nil {
			return err
		}
		go func() {
			last := messages[len(messages)-1]
			if last.Role != "tool" {
				_ = out.Thinking("need the plan")
				_ = out.Text("Looking.")
				_ = out.ToolCall(0, "", "lookup", `{"text":`)
				_ = out.ToolCall(0, "", "", `"Gold"}`)
				_ = out.Usage(Usage{InputTokens: 10, OutputTokens: 3})
			} else {
				_ = out.Text("The plan is " + last.Text() + ".")
				out.Stop("end_turn")
			}
			done <- nil
		}()
		return <-done
	})
}

func hostConfig(model HostModel, extra func(*Config)) Config {
	cfg := Config{Model: Model{Provider: "host", Name: "pocket", Host: model}}
	if extra != nil {
		extra(&cfg)
	}
	return cfg
}

func TestAHostModelStreamsCallsAndAnswersLikeAProvider(t *testing.T) {
	var requests atomic.Int32
	seen := make(chan *ModelRequest, 2)
	agent, err := NewAgent(hostConfig(pocket(&requests, seen), func(c *Config) { c.System = "Be brief." }),
		echoTool("lookup"))
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	run, err := agent.Start(context.Background(), Prompt("what plan?"))
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	var thinking, text strings.Builder
	var callDeltas int
	for event := range run.Events() {
		switch e := event.(type) {
		case *MessageDeltaEvent:
			thinking.WriteString(e.Thinking)
			text.WriteString(e.Text)
		case *ToolCallDeltaEvent:
			callDeltas++
		}
	}
	result, err := run.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if result.Status != StatusCompleted || result.Final.Text() != "The plan is Gold." {
		t.Fatalf("%s: %+v", result.Status, result.Final)
	}
	if thinking.String() != "need the plan" || !strings.HasPrefix(text.String(), "Looking.") || callDeltas != 2 {
		t.Fatalf("deltas: %q %q %d", thinking.String(), text.String(), callDeltas)
	}
	call := result.Messages[1].ToolCalls[0]
	if !strings.HasPrefix(call.ID, "call_") || call.Arguments != `{"text":"Gold"}` {
		t.Fatalf("the call: %+v", call)
	}
	first, second := <-seen, <-seen
	if first.System != "Be brief." || first.Model != "pocket" || first.Turn != 1 || len(first.Tools) != 1 ||
		!strings.HasPrefix(first.RunID, "run-") || second.RunID != first.RunID ||
		first.Tools[0].Name != "lookup" || string(first.ToolChoice) != `"auto"` || first.FirstNewMessage != 0 {
		t.Fatalf("the first request: %+v", first)
	}
	fresh, err := second.NewMessages()
	if second.Turn != 2 || second.FirstNewMessage != 1 || second.MessageCount != 3 || err != nil ||
		len(fresh) != 2 || fresh[0].Role != "assistant" || fresh[1].Role != "tool" {
		t.Fatalf("the second request: turn %d, first new %d, %d messages, new %+v %v", second.Turn,
			second.FirstNewMessage, second.MessageCount, fresh, err)
	}
	if _, err := second.Messages(); err == nil || err.(*Error).Code != CodeAlreadyCompleted {
		t.Fatalf("the whole transcript after the answer: %v", err)
	}
	if result.Usage.InputTokens != 10 || requests.Load() != 2 {
		t.Fatalf("usage %+v, %d requests", result.Usage, requests.Load())
	}
}

func TestAHostModelsErrorsRetriesAndCancellation(t *testing.T) {
	// A retryable failure before any output is asked again.
	var attempts atomic.Int32
	flaky := HostModelFunc(func(ctx context.Context, request *ModelRequest, out *ModelOutput) error {
		if attempts.Add(1) == 1 {
			return &ModelError{Code: CodeProviderRateLimited, Message: "slow down", Retryable: true}
		}
		return out.Text("fine")
	})
	agent, err := NewAgent(hostConfig(flaky, func(c *Config) {
		retries, backoff := 2, time.Millisecond
		c.Model.MaxRetries = &retries
		c.Model.RetryBackoff = &backoff
	}))
	if err != nil {
		t.Fatal(err)
	}
	result, err := agent.Run(context.Background(), Prompt("go"))
	agent.Close()
	if err != nil || result.Status != StatusCompleted || result.Final.Text() != "fine" || attempts.Load() != 2 {
		t.Fatalf("%v %+v %d", err, result, attempts.Load())
	}

	// Any other error fails the run; a panic too, and the output is closed after.
	var late *ModelOutput
	broken := HostModelFunc(func(ctx context.Context, request *ModelRequest, out *ModelOutput) error {
		late = out
		panic("the engine broke")
	})
	agent, err = NewAgent(hostConfig(broken, nil))
	if err != nil {
		t.Fatal(err)
	}
	result, err = agent.Run(context.Background(), Prompt("go"))
	agent.Close()
	if err != nil || result.Status != StatusFailed || result.Error.Code != CodeProviderServer ||
		!strings.Contains(result.Error.Message, "the engine broke") {
		t.Fatalf("%v %+v", err, result.Error)
	}
	if err := late.Text("too late"); err == nil || err.(*Error).Code != CodeAlreadyCompleted {
		t.Fatalf("a piece after the end: %v", err)
	}

	// Cancelling the run once the model was asked cancels the model's context
	// (a cancel before that never asks it).
	asked := make(chan struct{}, 1)
	cancelled := make(chan struct{})
	waiting := HostModelFunc(func(ctx context.Context, request *ModelRequest, out *ModelOutput) error {
		asked <- struct{}{}
		<-ctx.Done()
		close(cancelled)
		return ctx.Err()
	})
	agent, err = NewAgent(hostConfig(waiting, nil))
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-asked:
		case <-time.After(hangProtection):
		}
		cancel()
	}()
	result, err = agent.Run(ctx, Prompt("go"))
	if err != nil || result.Status != StatusCancelled {
		t.Fatalf("%v %+v", err, result)
	}
	select {
	case <-cancelled:
	case <-time.After(hangProtection):
		t.Fatal("the model's context was never cancelled")
	}

	// The configuration must name the host provider and the model.
	_, err = NewAgent(Config{Model: Model{Provider: "scripted", Host: waiting}})
	if err == nil || err.(*Error).Code != CodeInvalidArg {
		t.Fatalf("a host model on a scripted configuration: %v", err)
	}
	_, err = NewAgentFromJSON(json.RawMessage(`{"model": {"provider": "host", "name": "pocket"}}`))
	if err == nil || !strings.Contains(err.Error(), "no model was set") {
		t.Fatalf("a host configuration without a model: %v", err)
	}
}

// A configuration kept as JSON takes the host's model too; without one, or
// for a configuration naming another provider, the build is refused.
func TestNewAgentFromJSONWithModel(t *testing.T) {
	answer := HostModelFunc(func(ctx context.Context, request *ModelRequest, out *ModelOutput) error {
		return out.Text("from JSON")
	})
	agent, err := NewAgentFromJSONWithModel([]byte(`{"model": {"provider": "host", "name": "m"}}`), answer, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	result, err := agent.Run(context.Background(), Prompt("hi"))
	if err != nil || result.Final.Text() != "from JSON" {
		t.Fatalf("result %+v, error %v", result, err)
	}
	for config, code := range map[string]Code{
		`{"model": {"provider": "host", "name": "m"}}`:      CodeNullArg,
		`{"model": {"provider": "scripted", "script": []}}`: CodeInvalidArg,
	} {
		model := HostModel(answer)
		if code == CodeNullArg {
			model = nil
		}
		_, err := NewAgentFromJSONWithModel([]byte(config), model, nil)
		var ferr *Error
		if !errors.As(err, &ferr) || ferr.Code != code {
			t.Errorf("%s: %v, want %v", config, err, code)
		}
	}
}
