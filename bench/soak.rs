//! The soak (`make soak`; not part of `make test`): millions of runs of mixed
//! workloads through the C ABI, the way a C host drives ferrule (tools and
//! hooks are `extern "C"` callbacks handed over as function pointers; runs are
//! started, waited for and freed by handle), with the process's resident set,
//! open descriptors and threads sampled every second. Flat is the aim.
//!
//! The mix, by run number modulo 100: 70 runs of two rounds of two tool calls
//! (a blocking tool and a `nonblocking` one, each completing at once), 10 with a
//! hook consulted on every call, 8 that stop for approval and are resumed from
//! their state, 6 cancelled a millisecond after they start (mostly while their
//! tool waits), 4 whose tool times out and
//! completes late, and 2 of two HTTP rounds against a local OpenAI-compatible
//! server on 127.0.0.1. Then the concurrency ceiling: that many runs of a C tool
//! at once, each model turn taking 10 ms, with the peak resident set.
//!
//! `FERRULE_SOAK_RUNS` (10,000,000), `FERRULE_SOAK_WORKERS` (threads starting
//! runs, 16), `FERRULE_SOAK_CEILING` (100,000 concurrent runs; 0 skips it),
//! `FERRULE_SOAK_SAMPLES` (the samples as CSV, `build/soak.csv`).

use std::collections::BTreeMap;
use std::ffi::c_void;
use std::io::Write;
use std::net::TcpListener;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ferrule::ffi::*;
use serde_json::{json, Value};

mod common;
#[path = "../tests/it/common/wire.rs"]
mod wire;

use common::http::Requests;
use common::proc_status;

fn main() {
    let setting = |name: &str, default: u64| std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default);
    let runs = setting("FERRULE_SOAK_RUNS", 10_000_000);
    let workers = setting("FERRULE_SOAK_WORKERS", 16);
    let ceiling = setting("FERRULE_SOAK_CEILING", 100_000);
    let samples = std::env::var("FERRULE_SOAK_SAMPLES").unwrap_or_else(|_| "build/soak.csv".to_owned());
    // Before any thread of the soak's starts.
    std::env::set_var("FERRULE_SOAK_KEY", "sk-soak");
    let server = serve();
    let agents = Agents::build(&server);
    println!("soak: {runs} runs of the mix on {workers} threads; samples every second in {samples}");
    let done = Arc::new(AtomicU64::new(0));
    let sampler = sample_process(&samples, done.clone());
    let started = Instant::now();
    let next = Arc::new(AtomicU64::new(0));
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| loop {
                let number = next.fetch_add(1, Ordering::Relaxed);
                if number >= runs {
                    break;
                }
                agents.run(number);
                done.fetch_add(1, Ordering::Relaxed);
            });
        }
    });
    let wall = started.elapsed();
    let curve = sampler.stop();
    println!(
        "soak: {runs} runs in {:.0} s ({:.1} us a run)",
        wall.as_secs_f64(),
        wall.as_secs_f64() * 1e6 / runs.max(1) as f64
    );
    print_curve(&curve);
    if ceiling > 0 {
        concurrency_ceiling(ceiling as usize);
    }
}

/// A sample: seconds since the start, runs done, resident set (KiB), open
/// descriptors, threads.
type Sample = (u64, u64, u64, u64, u64);

/// A thread that takes a step every `period` until it is stopped, then hands
/// back what its steps kept.
struct Periodic<T> {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<T>,
}

impl<T: Send + 'static> Periodic<T> {
    fn start(period: Duration, mut kept: T, mut step: impl FnMut(&mut T) + Send + 'static) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        let thread = std::thread::spawn(move || {
            while !stopped.load(Ordering::Relaxed) {
                std::thread::sleep(period);
                step(&mut kept);
            }
            kept
        });
        Periodic { stop, thread }
    }

    fn stop(self) -> T {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().expect("the sampling thread")
    }
}

/// Samples the process every second, each a line of CSV in `path` too.
fn sample_process(path: &str, done: Arc<AtomicU64>) -> Periodic<Vec<Sample>> {
    if let Some(dir) = std::path::Path::new(path).parent() {
        std::fs::create_dir_all(dir).expect("the samples' directory");
    }
    let mut file = std::fs::File::create(path).expect("the samples' file");
    writeln!(file, "seconds,runs,rss_kib,fds,threads").unwrap();
    let started = Instant::now();
    Periodic::start(Duration::from_secs(1), Vec::new(), move |samples| {
        let sample = (
            started.elapsed().as_secs(),
            done.load(Ordering::Relaxed),
            proc_status("VmRSS:"),
            std::fs::read_dir("/proc/self/fd").map_or(0, |dir| dir.count() as u64),
            proc_status("Threads:"),
        );
        let (seconds, runs, rss, fds, threads) = sample;
        writeln!(file, "{seconds},{runs},{rss},{fds},{threads}").unwrap();
        samples.push(sample);
    })
}

/// The curve at each tenth of the samples, and the spread after the first tenth.
fn print_curve(samples: &[Sample]) {
    if samples.is_empty() {
        return;
    }
    println!("  {:>8} {:>12} {:>10} {:>6} {:>8}", "seconds", "runs", "RSS MiB", "fds", "threads");
    for i in (0..10).map(|tenth| tenth * (samples.len() - 1) / 9) {
        let (seconds, runs, rss, fds, threads) = samples[i];
        println!("  {seconds:>8} {runs:>12} {:>10.1} {fds:>6} {threads:>8}", rss as f64 / 1024.0);
    }
    let settled = &samples[samples.len() / 10..];
    let range = |field: fn(&Sample) -> u64| {
        let values = settled.iter().map(field);
        (values.clone().min().unwrap_or(0), values.max().unwrap_or(0))
    };
    let (rss, fds, threads) = (range(|s| s.2), range(|s| s.3), range(|s| s.4));
    println!(
        "  after the first tenth: RSS {:.1} - {:.1} MiB, fds {} - {}, threads {} - {}",
        rss.0 as f64 / 1024.0,
        rss.1 as f64 / 1024.0,
        fds.0,
        fds.1,
        threads.0,
        threads.1
    );
}

/// The agents of the mix, built once through the C ABI.
struct Agents {
    tools: Agent,
    hooked: Agent,
    gated: Agent,
    waiting: Agent,
    late: Agent,
    http: Agent,
}

impl Agents {
    fn build(server: &str) -> Agents {
        let two_rounds = json!({"provider": "scripted", "script": [
            {"tool_calls": [call("a", "lookup"), call("b", "quick")]},
            {"tool_calls": [call("c", "lookup"), call("d", "quick")]},
            {"text": "done"}]});
        let tools = json!({"model": two_rounds});
        let gated = json!({"model": {"provider": "scripted", "script": [
            {"tool_calls": [call("a", "gated")]}, {"text": "done"}]}});
        let waiting = json!({"model": {"provider": "scripted", "script": [
            {"tool_calls": [call("a", "waits")]}, {"text": "done"}]}});
        let late = json!({"model": {"provider": "scripted", "script": [
            {"tool_calls": [call("a", "slow")]}, {"text": "done"}]}, "tool_timeout_ms": 1});
        let http = json!({"model": {"provider": "openai", "name": "soak", "base_url": format!("{server}/v1"),
            "api_key_env": "FERRULE_SOAK_KEY"}, "max_rounds": 4});
        let both: &[(&str, &str, ToolFn)] =
            &[("lookup", "{}", complete), ("quick", r#"{"nonblocking": true}"#, complete)];
        Agents {
            tools: Agent::new(&tools, both, false),
            hooked: Agent::new(&tools, both, true),
            gated: Agent::new(&gated, &[("gated", r#"{"needs_approval": true}"#, complete)], false),
            waiting: Agent::new(&waiting, &[("waits", "{}", wait_for_cancel)], false),
            late: Agent::new(&late, &[("slow", "{}", complete_late)], false),
            http: Agent::new(&http, &[("lookup", "{}", complete)], false),
        }
    }

    /// Run `number` of the mix, to its end; panics on a result the workload
    /// does not give.
    fn run(&self, number: u64) {
        match number % 100 {
            0..70 => assert_eq!(self.tools.run(r#"{"prompt": "go"}"#, false)["status"], "completed"),
            70..80 => assert_eq!(self.hooked.run(r#"{"prompt": "go"}"#, false)["status"], "completed"),
            80..88 => {
                let stopped = self.gated.run(r#"{"prompt": "go"}"#, false);
                assert_eq!(stopped["status"], "interrupted");
                let resume = json!({"resume": stopped["state"], "decisions": {"a": {"approve": true}}}).to_string();
                assert_eq!(self.gated.run(&resume, false)["status"], "completed");
            }
            88..94 => assert_eq!(self.waiting.run(r#"{"prompt": "go"}"#, true)["status"], "cancelled"),
            94..98 => assert_eq!(self.late.run(r#"{"prompt": "go"}"#, false)["status"], "completed"),
            _ => assert_eq!(self.http.run(r#"{"prompt": "go"}"#, false)["status"], "completed"),
        }
    }
}

fn call(id: &str, name: &str) -> Value {
    json!({"id": id, "name": name, "arguments": {}})
}

/// An agent handle of the C ABI.
struct Agent(*mut ferrule_agent);

// SAFETY: an agent handle may be used from any thread (include/ferrule.h).
unsafe impl Send for Agent {}
unsafe impl Sync for Agent {}

type ToolFn = unsafe extern "C" fn(*mut c_void, *mut ferrule_tool_call);

impl Agent {
    /// Built from `config` with `tools` (name, options, function), and with a
    /// hook on every tool call when `hooked`.
    fn new(config: &Value, tools: &[(&str, &str, ToolFn)], hooked: bool) -> Agent {
        let config = config.to_string();
        let mut builder = std::ptr::null_mut();
        ok(unsafe { ferrule_agent_builder_new(config.as_ptr().cast(), config.len(), &mut builder) });
        for (name, options, function) in tools {
            let spec = ferrule_tool_spec {
                struct_size: std::mem::size_of::<ferrule_tool_spec>() as u32,
                name: name.as_ptr().cast(),
                name_len: name.len(),
                description: c"A soak tool.".as_ptr(),
                description_len: 12,
                input_schema: c"{\"type\": \"object\"}".as_ptr(),
                input_schema_len: 18,
                options: options.as_ptr().cast(),
                options_len: options.len(),
                execute: Some(*function),
                user_data: std::ptr::null_mut(),
                free_user_data: None,
            };
            ok(unsafe { ferrule_agent_builder_add_tool(builder, &spec) });
        }
        if hooked {
            let stages = r#"["tool_call"]"#;
            ok(unsafe {
                ferrule_agent_builder_add_hook(
                    builder,
                    stages.as_ptr().cast(),
                    stages.len(),
                    Some(go_on),
                    std::ptr::null_mut(),
                    None,
                )
            });
        }
        let mut agent = std::ptr::null_mut();
        ok(unsafe { ferrule_agent_build(builder, &mut agent) });
        Agent(agent)
    }

    /// Runs `input` to its end (cancelled a millisecond after it starts, by
    /// then mostly while its tool waits, when `cancel`); the result.
    fn run(&self, input: &str, cancel: bool) -> Value {
        let mut run = std::ptr::null_mut();
        ok(unsafe {
            ferrule_agent_start(self.0, input.as_ptr().cast(), input.len(), None, std::ptr::null_mut(), None, &mut run)
        });
        if cancel {
            std::thread::sleep(Duration::from_millis(1));
            unsafe { ferrule_run_cancel(run) };
        }
        let (mut json, mut len) = (std::ptr::null_mut(), 0);
        ok(unsafe { ferrule_run_wait(run, &mut json, &mut len) });
        let result = serde_json::from_slice(unsafe { std::slice::from_raw_parts(json.cast::<u8>(), len) });
        unsafe {
            ferrule_string_free(json);
            ferrule_run_free(run);
        }
        result.expect("a result")
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        unsafe { ferrule_agent_free(self.0) };
    }
}

/// Panics on an error of the C ABI, with its message.
fn ok(error: *mut ferrule_error) {
    if error.is_null() {
        return;
    }
    let message = unsafe { ferrule_error_message(error) };
    let text = unsafe { std::slice::from_raw_parts(message.ptr.cast::<u8>(), message.len) };
    panic!("{}", String::from_utf8_lossy(text));
}

const RESULT: &str = "\"ok\"";

unsafe extern "C" fn complete(_: *mut c_void, call: *mut ferrule_tool_call) {
    ok(ferrule_tool_call_complete(call, RESULT.as_ptr().cast(), RESULT.len()));
}

/// Waits until the run is cancelled, then fails the call (which nothing reads).
unsafe extern "C" fn wait_for_cancel(_: *mut c_void, call: *mut ferrule_tool_call) {
    while !ferrule_tool_call_is_cancelled(call) {
        std::thread::sleep(Duration::from_micros(200));
    }
    let why = "cancelled";
    ferrule_error_free(ferrule_tool_call_fail(call, why.as_ptr().cast(), why.len()));
}

/// Completes after the call's 1 ms timeout: the completion is discarded.
unsafe extern "C" fn complete_late(_: *mut c_void, call: *mut ferrule_tool_call) {
    std::thread::sleep(Duration::from_millis(2));
    ferrule_error_free(ferrule_tool_call_complete(call, RESULT.as_ptr().cast(), RESULT.len()));
}

unsafe extern "C" fn go_on(_: *mut c_void, hook: *mut ferrule_hook) {
    ok(ferrule_hook_respond(hook, c"{}".as_ptr(), 2));
}

/// A local OpenAI-compatible server: a tool call while the request holds no
/// tool result, then an answer. Its address.
fn serve() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for socket in listener.incoming().map_while(Result::ok) {
            std::thread::spawn(move || {
                let mut requests = Requests::new(socket);
                while let Some(body) = requests.next_body() {
                    let answered = body.windows(13).any(|w| w == b"\"role\":\"tool\"");
                    let reply = match answered {
                        true => wire::chat("done", &[]),
                        false => wire::chat("", &[("call_1", "lookup", "{}")]),
                    };
                    if !requests.reply(&reply, true) {
                        return;
                    }
                }
            });
        }
    });
    url
}

/// `runs` runs at once of five rounds of a C tool, each model turn taking
/// 10 ms: the wall time, the peak resident set and the threads.
fn concurrency_ceiling(runs: usize) {
    let config = json!({"model": {"provider": "scripted", "script": [
        {"tool_calls": [call("a", "lookup")], "delay_ms": 10, "repeat": 4},
        {"text": "done", "delay_ms": 10}]}});
    let agent = Agent::new(&config, &[("lookup", "{}", complete)], false);
    // The peak so far is the mix's: the ceiling's own starts from here.
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    let before = proc_status("VmRSS:");
    let input = r#"{"prompt": "go"}"#;
    let pools = sample_pools();
    let started = Instant::now();
    let handles: Vec<*mut ferrule_run> = (0..runs)
        .map(|_| {
            let mut run = std::ptr::null_mut();
            ok(unsafe {
                ferrule_agent_start(
                    agent.0,
                    input.as_ptr().cast(),
                    input.len(),
                    None,
                    std::ptr::null_mut(),
                    None,
                    &mut run,
                )
            });
            run
        })
        .collect();
    let threads_waiting = proc_status("Threads:");
    for run in handles {
        let (mut json, mut len) = (std::ptr::null_mut(), 0);
        ok(unsafe { ferrule_run_wait(run, &mut json, &mut len) });
        unsafe {
            ferrule_string_free(json);
            ferrule_run_free(run);
        }
    }
    println!(
        "ceiling: {runs} concurrent runs x 5 rounds, 10 ms model delay: wall {:.0} ms, RSS {} MiB before, peak {} MiB \
         ({:.1} KB a run), {} threads while they ran",
        started.elapsed().as_secs_f64() * 1e3,
        before / 1024,
        proc_status("VmHWM:") / 1024,
        (proc_status("VmHWM:").saturating_sub(before)) as f64 * 1.024 / runs as f64,
        threads_waiting
    );
    let pools: Vec<String> = pools.stop().iter().map(|(name, most)| format!("{name} {most}")).collect();
    println!("ceiling: most threads of each kind while the runs ran: {}", pools.join(", "));
}

/// Samples the process's threads by kind every 10 ms: the name without its
/// number (`ferrule-cb-7` is one of `ferrule-cb`, the tool callback pool;
/// `ferrule-ev` the event threads; `ferrule` the runtime's workers and
/// blocking threads), keeping each kind's most.
fn sample_pools() -> Periodic<BTreeMap<String, usize>> {
    Periodic::start(Duration::from_millis(10), BTreeMap::new(), |most| {
        let mut now = BTreeMap::<String, usize>::new();
        for task in std::fs::read_dir("/proc/self/task").into_iter().flatten().flatten() {
            let name = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
            let kind = name.trim_end().trim_end_matches(|c: char| c.is_ascii_digit()).trim_end_matches('-');
            *now.entry(kind.to_owned()).or_default() += 1;
        }
        for (kind, count) in now {
            let seen = most.entry(kind).or_default();
            *seen = count.max(*seen);
        }
    })
}
