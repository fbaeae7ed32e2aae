// Package gobench compares ferrule's Go binding with eino (github.com/cloudwego/eino),
// a Go agent library people pick today, on DESIGN section 7's workloads with the
// tool in Go: W1 (one no-op call per round, 2000 rounds), W2 (64 parallel
// schema-validated calls per round, 200 rounds) and W3 (1,000 concurrent runs of
// 5 rounds with 10 ms of model time per turn). eino runs its ReAct agent with a
// fake chat model written here. Run with `make bench-go`; nothing is asserted.
package gobench

import (
	"encoding/json"
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// workload is one of bench/workloads.json's.
type workload struct {
	Config json.RawMessage `json:"config"`
	Rounds int             `json:"rounds"`
	Calls  int             `json:"calls"`
	// Schema is the tool's input schema; CallsPerRound the batch size.
	Schema        json.RawMessage `json:"-"`
	CallsPerRound int             `json:"-"`
}

func load(b *testing.B, name string) workload {
	data, err := os.ReadFile("../workloads.json")
	if err != nil {
		b.Fatal(err)
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(data, &all); err != nil {
		b.Fatal(err)
	}
	var w workload
	if err := json.Unmarshal(all[name], &w); err != nil {
		b.Fatal(err)
	}
	w.Schema = all["open_schema"]
	if name == "w2" {
		w.Schema = all["schema"]
	}
	w.CallsPerRound = (w.Calls + w.Rounds - 2) / (w.Rounds - 1)
	return w
}

// each runs run once per iteration and reports the median run's cost per
// round and per call, and the spread of the runs (slowest over fastest): a
// mean would carry this VM's occasional slow run into every figure.
func each(b *testing.B, w workload, run func()) {
	var times []time.Duration
	for b.Loop() {
		start := time.Now()
		run()
		times = append(times, time.Since(start))
	}
	slices.Sort(times)
	median := float64(times[len(times)/2].Nanoseconds())
	b.ReportMetric(median/float64(w.Rounds)/1e3, "us/round")
	b.ReportMetric(median/float64(w.Calls)/1e3, "us/call")
	b.ReportMetric(float64(times[len(times)-1])/float64(times[0]), "max/min")
}

// concurrently runs 1,000 runs at once per iteration (W3) and reports the
// median wall time of a thousand and the process's peak resident set during
// them (the peak is reset first, after the garbage of earlier benchmarks was
// returned to the system, so what they reached does not count).
func concurrently(b *testing.B, run func()) {
	const runs = 1000
	debug.FreeOSMemory()
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		b.Fatalf("resetting the peak resident set: %v", err)
	}
	var times []time.Duration
	for b.Loop() {
		start := time.Now()
		var wg sync.WaitGroup
		for range runs {
			wg.Go(run)
		}
		wg.Wait()
		times = append(times, time.Since(start))
	}
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)/2].Microseconds())/1e3, "ms/1000runs")
	b.ReportMetric(float64(peakRSSKiB())/1024, "peakRSS_MiB")
}

// peakRSSKiB is the process's peak resident set (VmHWM).
func peakRSSKiB() int {
	status, _ := os.ReadFile("/proc/self/status")
	for _, line := range strings.Split(string(status), "\n") {
		if fields := strings.Fields(line); len(fields) > 1 && fields[0] == "VmHWM:" {
			kib := 0
			for _, c := range fields[1] {
				kib = kib*10 + int(c-'0')
			}
			return kib
		}
	}
	return 0
}
