package ferruletemporal

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	ferrule "github.com/ferrule-dev/ferrule/bindings/go"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"google.golang.org/protobuf/encoding/protojson"
)

// short makes a worker's death noticed within two seconds.
var short = Options{Heartbeat: 2 * time.Second, CallRetry: &temporal.RetryPolicy{InitialInterval: 100 * time.Millisecond}}

func startRun(t *testing.T, c client.Client, queue string, req Request) client.WorkflowRun {
	t.Helper()
	run, err := Start(context.Background(), c, client.StartWorkflowOptions{ID: queue, TaskQueue: queue}, req)
	if err != nil {
		t.Fatal(err)
	}
	return run
}

func finished(t *testing.T, run client.WorkflowRun) *Response {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var res Response
	if err := run.Get(ctx, &res); err != nil {
		t.Fatal(err)
	}
	return &res
}

// A worker killed while a call of a batch runs: the run finishes on another
// worker, the killed call runs again there (attempt 2), and no call that
// ended is run twice.
func TestAWorkerKilledInABatchAndTheRunFinishingOnAnother(t *testing.T) {
	c, queue, log := dial(t, nil), testQueue(t), newLog(t)
	first := startWorkerProcess(t, queue, log)
	run := startRun(t, c, queue, Request{Agent: "batch", Prompt: "Four steps.", Options: short})
	// Killed once the server has the step's and three calls' completions:
	// a call whose tool ended but whose completion never reached the
	// server runs again, as Temporal promises.
	waitFor(t, "the batch under way", func() bool {
		return log.count("start", "c3") == 1 && completedActivities(t, c, queue, run.GetRunID()) == 4
	})
	first.kill()
	startWorkerProcess(t, queue, log)
	res := finished(t, run)
	if res.Status != ferrule.StatusCompleted || res.Final.Text() != "Four steps." {
		t.Fatalf("%+v", res)
	}
	for _, id := range []string{"c1", "c2", "c4"} {
		if started, done := log.count("start", id), log.count("done", id); started != 1 || done != 1 {
			t.Errorf("%s started %d and ended %d times: %v", id, started, done, log.lines())
		}
	}
	if got := fmt.Sprint(log.lines()); log.count("start", "c3") != 2 || log.count("done", "c3") != 1 ||
		!contains(log.lines(), "start_c3_1") || !contains(log.lines(), "done_c3_2") {
		t.Errorf("c3 should start twice and end once, on its second attempt: %s", got)
	}
	if res.Rounds != 2 {
		t.Errorf("rounds %d", res.Rounds)
	}
}

// An approval signalled after the worker that stopped for it died reaches
// the run on the next worker; the pending query names the call meanwhile.
func TestAnApprovalAfterTheWorkerRestarted(t *testing.T) {
	c, queue, log := dial(t, nil), testQueue(t), newLog(t)
	first := startWorkerProcess(t, queue, log)
	run := startRun(t, c, queue, Request{Agent: "approval", Prompt: "Send it.", Options: short})
	var pending []ferrule.Interruption
	waitFor(t, "the call to wait for approval", func() bool {
		var err error
		pending, err = Pending(context.Background(), c, queue, "")
		return err == nil && len(pending) == 1
	})
	if pending[0].Key != "a1" || pending[0].Name != "send" {
		t.Fatalf("%+v", pending)
	}
	first.kill()
	if err := Decide(context.Background(), c, queue, "", map[string]ferrule.Decision{"a1": {Approve: true}}); err != nil {
		t.Fatal(err)
	}
	startWorkerProcess(t, queue, log)
	res := finished(t, run)
	if res.Status != ferrule.StatusCompleted || log.count("done", "a1") != 1 || log.count("done", "a2") != 1 {
		t.Fatalf("%+v, %v", res, log.lines())
	}
	usage, err := Usage(context.Background(), c, queue, "")
	if err != nil || usage != res.Usage {
		t.Errorf("usage %+v (%v), the result's %+v", usage, err, res.Usage)
	}
}

// Cancelling the workflow cancels the call under way: its tool sees it.
func TestACancelReachesTheTool(t *testing.T) {
	c, queue, log := dial(t, nil), testQueue(t), newLog(t)
	inProcessWorker(t, c, queue, log)
	run := startRun(t, c, queue, Request{Agent: "cancel", Prompt: "Wait.", Options: short})
	waitFor(t, "the call to start", func() bool { return log.count("start", "w1") == 1 })
	if err := c.CancelWorkflow(context.Background(), queue, ""); err != nil {
		t.Fatal(err)
	}
	var res Response
	err := run.Get(context.Background(), &res)
	var cancelled *temporal.CanceledError
	if !errors.As(err, &cancelled) {
		t.Fatalf("the run ended %v, %+v", err, res)
	}
	if log.count("cancelled", "w1") != 1 {
		t.Errorf("the tool did not see the cancellation: %v", log.lines())
	}
}

// A run of 500 rounds continues as new along the way, carrying its state
// (compressed: DataConverter), and ends with every call run once and the
// rounds and events counted across.
func TestFiveHundredRoundsAcrossContinueAsNew(t *testing.T) {
	c, queue, log := dial(t, DataConverter()), testQueue(t), newLog(t)
	inProcessWorker(t, c, queue, log)
	options := short
	options.StepsPerRun = 60
	options.EventsKept = 10
	run := startRun(t, c, queue, Request{Agent: "long", Prompt: "Go on.", Options: options})
	firstRun := run.GetRunID()
	res := finished(t, run)
	if res.Status != ferrule.StatusCompleted || res.Rounds != rounds+1 || res.Steps != rounds+1 {
		t.Fatalf("%+v", res)
	}
	if lines := log.lines(); len(lines) != 2*rounds {
		t.Fatalf("%d lines", len(lines))
	}
	for i := 1; i <= rounds; i++ {
		if id := fmt.Sprintf("r%d", i); log.count("done", id) != 1 {
			t.Fatalf("%s ran %d times", id, log.count("done", id))
		}
	}
	described, err := c.DescribeWorkflowExecution(context.Background(), queue, firstRun)
	if err != nil {
		t.Fatal(err)
	}
	if status := described.WorkflowExecutionInfo.Status; status != enumspb.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW {
		t.Errorf("the first run ended %v", status)
	}
	events, err := LatestEvents(context.Background(), c, queue, "")
	if err != nil || len(events.Events) != 10 || events.Count < 4*rounds {
		t.Errorf("%d events of %d (%v)", len(events.Events), events.Count, err)
	}
	// Payloads went compressed.
	history := c.GetWorkflowHistory(context.Background(), queue, firstRun, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for history.HasNext() {
		event, err := history.Next()
		if err != nil {
			t.Fatal(err)
		}
		if scheduled := event.GetActivityTaskScheduledEventAttributes(); scheduled != nil {
			if encoding := string(scheduled.Input.Payloads[0].Metadata["encoding"]); encoding != "binary/zlib" {
				t.Errorf("a step's input went as %q", encoding)
			}
			break
		}
	}
}

// completedActivities counts the activity completions in a run's history.
func completedActivities(t *testing.T, c client.Client, workflowID, runID string) int {
	history := c.GetWorkflowHistory(context.Background(), workflowID, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	n := 0
	for history.HasNext() {
		event, err := history.Next()
		if err != nil {
			t.Fatal(err)
		}
		if event.GetEventType() == enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED {
			n++
		}
	}
	return n
}

// The workflow replays the history of a run with calls, an approval and an
// end, recorded now and as testdata/approval-history.json recorded before:
// it reads nothing but its activities' results and its signals.
func TestTheWorkflowReplaysItsHistory(t *testing.T) {
	c, queue, log := dial(t, nil), testQueue(t), newLog(t)
	inProcessWorker(t, c, queue, log)
	run := startRun(t, c, queue, Request{Agent: "approval", Prompt: "Send it."})
	waitFor(t, "the call to wait for approval", func() bool {
		pending, err := Pending(context.Background(), c, queue, "")
		return err == nil && len(pending) == 1
	})
	if err := Decide(context.Background(), c, queue, "", map[string]ferrule.Decision{"a1": {Approve: false}}); err != nil {
		t.Fatal(err)
	}
	if res := finished(t, run); res.Status != ferrule.StatusCompleted {
		t.Fatalf("%+v", res)
	}
	history := &historypb.History{}
	events := c.GetWorkflowHistory(context.Background(), queue, run.GetRunID(), false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for events.HasNext() {
		event, err := events.Next()
		if err != nil {
			t.Fatal(err)
		}
		history.Events = append(history.Events, event)
	}
	replayer := worker.NewWorkflowReplayer()
	replayer.RegisterWorkflowWithOptions(AgentRun, workflowRegistration)
	if err := replayer.ReplayWorkflowHistory(quiet{}, history); err != nil {
		t.Fatalf("the history just recorded: %v", err)
	}
	recorded := filepath.Join("testdata", "approval-history.json")
	if os.Getenv("FERRULE_TEMPORAL_RECORD") != "" {
		data, err := protojson.Marshal(history)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(recorded, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := replayer.ReplayWorkflowHistoryFromJSONFile(quiet{}, recorded); err != nil {
		t.Fatalf("%s: %v", recorded, err)
	}
}

// A step's output over the payload limit fails the run at once, saying
// what to do.
func TestAPayloadOverItsLimitFailsTheRunSayingSo(t *testing.T) {
	c, queue, log := dial(t, nil), testQueue(t), newLog(t)
	inProcessWorker(t, c, queue, log)
	run := startRun(t, c, queue, Request{Agent: "approval", Prompt: "Send it.", Options: Options{PayloadLimit: 100}})
	var res Response
	err := run.Get(context.Background(), &res)
	var failed *temporal.ApplicationError
	if !errors.As(err, &failed) || failed.Type() != "ferrule.PayloadTooLarge" ||
		!strings.Contains(failed.Error(), "over the limit of 100 (Options.PayloadLimit)") {
		t.Fatalf("the run ended %v", err)
	}
}

// A run that continues as new after an approval: a decision sent before
// the call waited is dropped, the call's own is taken, the run continues as
// new with the step that goes on from it, and ends.
func TestAnApprovalAcrossContinueAsNew(t *testing.T) {
	c, queue, log := dial(t, nil), testQueue(t), newLog(t)
	inProcessWorker(t, c, queue, log)
	run := startRun(t, c, queue, Request{Agent: "approval", Prompt: "Send it.", Options: Options{StepsPerRun: 1}})
	firstRun := run.GetRunID()
	if err := Decide(context.Background(), c, queue, "", map[string]ferrule.Decision{"zz": {Approve: true}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the call to wait for approval", func() bool {
		pending, err := Pending(context.Background(), c, queue, "")
		return err == nil && len(pending) == 1
	})
	if err := Decide(context.Background(), c, queue, "", map[string]ferrule.Decision{"a1": {Approve: false}}); err != nil {
		t.Fatal(err)
	}
	res := finished(t, run)
	if res.Status != ferrule.StatusCompleted || res.Steps != 3 || log.count("done", "a1") != 0 || log.count("done", "a2") != 1 {
		t.Fatalf("%+v, %v", res, log.lines())
	}
	described, err := c.DescribeWorkflowExecution(context.Background(), queue, firstRun)
	if err != nil || described.WorkflowExecutionInfo.Status != enumspb.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW {
		t.Fatalf("the first run: %v (%v)", described, err)
	}
}

func contains(lines []string, line string) bool {
	for _, l := range lines {
		if l == line {
			return true
		}
	}
	return false
}
