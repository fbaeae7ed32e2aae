package ferruletemporal

// The harness: a real Temporal server (testserver, in a process of its own),
// workers in this process or in processes of their own (this test binary
// again, FERRULE_TEMPORAL_ROLE=worker), and the agents every worker runs.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	ferrule "github.com/ferrule-dev/ferrule/bindings/go"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/worker"
)

// server is where the test server listens, once TestMain started it.
var server struct {
	hostPort, namespace string
}

func TestMain(m *testing.M) {
	if os.Getenv("FERRULE_TEMPORAL_ROLE") == "worker" {
		os.Exit(workerMain())
	}
	path := os.Getenv("FERRULE_TEMPORAL_SERVER")
	if path == "" {
		fmt.Fprintln(os.Stderr, "FERRULE_TEMPORAL_SERVER names no Temporal test server: run make test-temporal")
		os.Exit(2)
	}
	stop, err := startServer(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "the Temporal test server did not start:", err)
		os.Exit(2)
	}
	code := m.Run()
	stop()
	os.Exit(code)
}

// startServer starts the server and reads where it listens; stop closes its
// standard input, which ends it, and waits for it.
func startServer(path string) (stop func(), err error) {
	cmd := exec.Command(path)
	// What it says goes to a file, shown when it does not start.
	logFile, err := os.CreateTemp("", "temporal-test-server-*.log")
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	cmd.Stderr = logFile
	// It ends with this process, however this process ends.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	stop = func() {
		stdin.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	fields := strings.Fields(line)
	if err != nil || len(fields) != 2 {
		stop()
		said, _ := os.ReadFile(logFile.Name())
		if len(said) > 4000 {
			said = said[len(said)-4000:]
		}
		return nil, fmt.Errorf("its first line was %q (%v); it said:\n%s", line, err, said)
	}
	os.Remove(logFile.Name())
	server.hostPort, server.namespace = fields[0], fields[1]
	return stop, nil
}

// dial connects a client to the test server, its payloads converted by
// converter (nil: Temporal's default).
func dial(t testing.TB, converter converter.DataConverter) client.Client {
	t.Helper()
	c, err := client.Dial(client.Options{HostPort: server.hostPort, Namespace: server.namespace, Logger: quiet{},
		DataConverter: converter})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// quiet is a logger that keeps the SDK's chatter out of the test's output.
type quiet struct{}

func (quiet) Debug(string, ...any) {}
func (quiet) Info(string, ...any)  {}
func (quiet) Warn(string, ...any)  {}
func (quiet) Error(string, ...any) {}

// toolLog is where the test tools write what they did, one line each:
// "<event> <call id> <attempt>". Shared by the workers of a test, in their
// processes.
type toolLog string

func (l toolLog) write(event, id string, attempt int) {
	file, err := os.OpenFile(string(l), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		panic(err)
	}
	defer file.Close()
	fmt.Fprintf(file, "%s %s %d\n", event, id, attempt)
}

// lines are the log's lines; none before anything was written.
func (l toolLog) lines() []string {
	data, _ := os.ReadFile(string(l))
	return strings.Fields(strings.ReplaceAll(string(data), " ", "_"))
}

// count is how many lines read "<event> <id> ...".
func (l toolLog) count(event, id string) int {
	n := 0
	for _, line := range l.lines() {
		if strings.HasPrefix(line, event+"_"+id+"_") {
			n++
		}
	}
	return n
}

// waitFor polls until ok, or fails the test after a minute.
func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("waited a minute for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// scripted is a scripted model's config with these turns.
func scripted(turns ...any) ferrule.Config {
	script, err := json.Marshal(turns)
	if err != nil {
		panic(err)
	}
	return ferrule.Config{Model: ferrule.Model{Provider: "scripted", Script: script}}
}

func withMaxRounds(config ferrule.Config, n int) ferrule.Config {
	config.MaxRounds = n
	return config
}

func calls(calls ...any) map[string]any { return map[string]any{"tool_calls": calls} }

func call(id, name string) map[string]any {
	return map[string]any{"id": id, "name": name, "arguments": map[string]any{}}
}

func answer(text string) map[string]any { return map[string]any{"text": text} }

// Rounds is how many rounds the long agent's model calls a tool before it
// answers.
const rounds = 500

// agents are the agents every worker of the tests runs, their tools writing
// to log.
func agents(log toolLog) (map[string]*ferrule.Agent, error) {
	// step records its start and end.
	step := ferrule.NewTool("step", "Does a step.",
		func(ctx context.Context, call *ferrule.Call, args struct{}) (string, error) {
			log.write("start", call.ID(), call.Attempt())
			log.write("done", call.ID(), call.Attempt())
			return "stepped " + call.ID(), nil
		})
	// stall never ends its first attempt (its worker is killed meanwhile);
	// a later one ends at once.
	stall := ferrule.NewTool("stall", "Takes a while.",
		func(ctx context.Context, call *ferrule.Call, args struct{}) (string, error) {
			log.write("start", call.ID(), call.Attempt())
			if call.Attempt() == 1 {
				<-ctx.Done()
				return "", ctx.Err()
			}
			log.write("done", call.ID(), call.Attempt())
			return "stalled " + call.ID(), nil
		})
	// send needs approval.
	send := ferrule.NewTool("send", "Sends.",
		func(ctx context.Context, call *ferrule.Call, args struct{}) (string, error) {
			log.write("done", call.ID(), call.Attempt())
			return "sent", nil
		}, ferrule.NeedsApproval())
	// wait waits for its cancellation, and says when it came.
	wait := ferrule.NewTool("wait", "Waits.",
		func(ctx context.Context, call *ferrule.Call, args struct{}) (string, error) {
			log.write("start", call.ID(), call.Attempt())
			<-ctx.Done()
			log.write("cancelled", call.ID(), call.Attempt())
			return "", ctx.Err()
		})
	long := make([]any, 0, rounds+1)
	for i := 1; i <= rounds; i++ {
		long = append(long, calls(call(fmt.Sprintf("r%d", i), "step")))
	}
	long = append(long, answer("All done."))
	specs := map[string]struct {
		config ferrule.Config
		tools  []ferrule.Tool
	}{
		"batch": {scripted(calls(call("c1", "step"), call("c2", "step"), call("c3", "stall"), call("c4", "step")),
			answer("Four steps.")), []ferrule.Tool{step, stall}},
		"approval": {scripted(calls(call("a1", "send"), call("a2", "step")), answer("Sent.")), []ferrule.Tool{send, step}},
		"cancel":   {scripted(calls(call("w1", "wait")), answer("Never.")), []ferrule.Tool{wait}},
		"long":     {withMaxRounds(scripted(long...), rounds+1), []ferrule.Tool{step}},
	}
	built := map[string]*ferrule.Agent{}
	for name, spec := range specs {
		agent, err := ferrule.NewAgent(spec.config, spec.tools...)
		if err != nil {
			return nil, fmt.Errorf("agent %s: %w", name, err)
		}
		built[name] = agent
	}
	return built, nil
}

// inProcessWorker runs a worker of queue in this process until the test ends.
func inProcessWorker(t *testing.T, c client.Client, queue string, log toolLog) {
	t.Helper()
	built, err := agents(log)
	if err != nil {
		t.Fatal(err)
	}
	w := worker.New(c, queue, worker.Options{})
	Register(w, built)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		w.Stop()
		for _, agent := range built {
			agent.Close()
		}
	})
}

// workerProcess is a worker in a process of its own.
type workerProcess struct {
	cmd  *exec.Cmd
	once sync.Once
}

// startWorkerProcess starts a worker of queue in a process of its own,
// killed when the test ends if it was not before.
func startWorkerProcess(t *testing.T, queue string, log toolLog) *workerProcess {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "FERRULE_TEMPORAL_ROLE=worker", "FERRULE_TEMPORAL_QUEUE="+queue,
		"FERRULE_TEMPORAL_LOG="+string(log), "FERRULE_TEMPORAL_HOSTPORT="+server.hostPort,
		"FERRULE_TEMPORAL_NAMESPACE="+server.namespace)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &workerProcess{cmd: cmd}
	t.Cleanup(p.kill)
	return p
}

// kill kills the worker at once, as a crash would, and reaps it.
func (p *workerProcess) kill() {
	p.once.Do(func() {
		p.cmd.Process.Kill()
		p.cmd.Wait()
	})
}

// workerMain is a worker process: it runs until killed.
func workerMain() int {
	c, err := client.Dial(client.Options{HostPort: os.Getenv("FERRULE_TEMPORAL_HOSTPORT"),
		Namespace: os.Getenv("FERRULE_TEMPORAL_NAMESPACE"), Logger: quiet{}})
	if err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		return 1
	}
	built, err := agents(toolLog(os.Getenv("FERRULE_TEMPORAL_LOG")))
	if err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		return 1
	}
	w := worker.New(c, os.Getenv("FERRULE_TEMPORAL_QUEUE"), worker.Options{})
	Register(w, built)
	if err := w.Run(worker.InterruptCh()); err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		return 1
	}
	return 0
}

// testQueue is a task queue of the test's own.
func testQueue(t *testing.T) string {
	return "ferrule-" + strings.ReplaceAll(t.Name(), "/", "-")
}

// newLog is a tool log in the test's directory.
func newLog(t *testing.T) toolLog { return toolLog(filepath.Join(t.TempDir(), "tools.log")) }
