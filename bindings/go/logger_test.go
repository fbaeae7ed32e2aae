package ferrule

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// keptRecords is a slog handler that keeps what it is given, from minimum up.
type keptRecords struct {
	minimum slog.Level
	mu      sync.Mutex
	records []slog.Record
}

func (k *keptRecords) Enabled(_ context.Context, level slog.Level) bool { return level >= k.minimum }
func (k *keptRecords) Handle(_ context.Context, record slog.Record) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.records = append(k.records, record.Clone())
	return nil
}
func (k *keptRecords) WithAttrs([]slog.Attr) slog.Handler { return k }
func (k *keptRecords) WithGroup(string) slog.Handler      { return k }

// attrs of a record, by key.
func attrs(record slog.Record) map[string]any {
	found := map[string]any{}
	record.Attrs(func(a slog.Attr) bool {
		found[a.Key] = a.Value.Any()
		return true
	})
	return found
}

// waitFor is the kept records pick picks, once there is one (or ten seconds passed).
func (k *keptRecords) waitFor(pick func(slog.Record) bool) []slog.Record {
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		k.mu.Lock()
		var picked []slog.Record
		for _, r := range k.records {
			if pick(r) {
				picked = append(picked, r)
			}
		}
		k.mu.Unlock()
		if len(picked) > 0 || time.Now().After(deadline) {
			return picked
		}
	}
}

// A retried model request reaches the host's slog handler as a warning with
// the run's id and the attempt; nothing below the handler's level is made.
func TestTheLoggerBridgesToSlog(t *testing.T) {
	kept := &keptRecords{minimum: slog.LevelWarn}
	if err := SetLogger(slog.New(kept)); err != nil {
		t.Fatal(err)
	}
	defer SetLogger(nil)
	// Nothing listens on port 1: the request fails, is tried once more, and fails.
	retries, backoff := 1, time.Millisecond
	config := Config{Model: Model{Provider: "openai-compatible", Name: "m", BaseURL: "http://127.0.0.1:1/v1",
		MaxRetries: &retries, RetryBackoff: &backoff}}
	agent, err := NewAgent(config)
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	run, err := agent.Start(context.Background(), Prompt("go"))
	if err != nil {
		t.Fatal(err)
	}
	result, err := run.Wait()
	if err != nil || result.Error == nil || result.Error.Code != CodeProviderNetwork {
		t.Fatalf("%v %+v", err, result)
	}
	found := kept.waitFor(func(r slog.Record) bool { return attrs(r)["run_id"] == run.ID() })
	if len(found) != 1 {
		t.Fatalf("records of the run: %+v", found)
	}
	record := found[0]
	fields := attrs(record)
	if record.Level != slog.LevelWarn || fields["target"] != "ferrule::provider" || fields["attempt"] != int64(2) ||
		fields["code"] != "PROVIDER_NETWORK" || fields["turn"] != int64(1) {
		t.Fatalf("%v %q %v", record.Level, record.Message, fields)
	}
	if time.Since(record.Time) > time.Minute || time.Since(record.Time) < 0 {
		t.Fatalf("made at %v", record.Time)
	}
	kept.mu.Lock()
	defer kept.mu.Unlock()
	for _, r := range kept.records {
		if r.Level < slog.LevelWarn {
			t.Fatalf("below the level: %v %q", r.Level, r.Message)
		}
	}
}

// Each of ferrule's levels maps to slog's, and a handler that enables nothing
// sets no logger.
func TestLogLevelsMapToSlog(t *testing.T) {
	for _, c := range []struct {
		minimum slog.Level
		want    uint32
	}{{slog.LevelError, 1}, {slog.LevelWarn, 2}, {slog.LevelInfo, 3}, {slog.LevelDebug, 4}, {LevelTrace, 5}, {slog.LevelError + 1, 0}} {
		if got := enabledLevel(&keptRecords{minimum: c.minimum}); got != c.want {
			t.Fatalf("%v: %d, want %d", c.minimum, got, c.want)
		}
	}
	sink := &logSink{handler: &keptRecords{minimum: LevelTrace}}
	record, _ := json.Marshal(map[string]any{"level": "trace", "target": "ferrule::mcp", "message": "m",
		"fields": map[string]any{"b": 1.5, "a": []int{1}, "c": nil}, "time_unix_nano": 5})
	sink.handle(record)
	got := sink.handler.(*keptRecords).records
	if len(got) != 1 || got[0].Level != LevelTrace || !got[0].Time.Equal(time.Unix(0, 5)) {
		t.Fatalf("%+v", got)
	}
	var keys []string
	got[0].Attrs(func(a slog.Attr) bool { keys = append(keys, a.Key+"="+a.Value.String()); return true })
	if want := "target=ferrule::mcp a=[1] b=1.5 c=<nil>"; strings.Join(keys, " ") != want {
		t.Fatalf("%s", strings.Join(keys, " "))
	}
}
