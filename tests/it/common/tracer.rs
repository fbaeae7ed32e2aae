//! The process's tracer, taken in turns by the tests that read spans.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use ferrule::trace::{AttributeValue, SpanData};

/// One tracer at a time.
pub static TURN: Mutex<()> = Mutex::new(());

/// The spans a tracer received; the tracer is removed, and the turn passed
/// on, when it goes.
pub struct Received {
    pub spans: Arc<Mutex<Vec<Arc<SpanData>>>>,
    _turn: MutexGuard<'static, ()>,
}

impl Received {
    /// Sets a tracer keeping every span, once the turn came.
    pub fn set() -> Received {
        let turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
        let spans: Arc<Mutex<Vec<Arc<SpanData>>>> = Arc::default();
        let kept = Arc::clone(&spans);
        ferrule::trace::set_tracer(move |span| kept.lock().unwrap().push(span)).unwrap();
        Received { spans, _turn: turn }
    }

    /// The spans of the trace of `run_id`'s run, once its `invoke_agent` span
    /// came (the last of a trace to end), in the order they ended.
    pub fn trace_of(&self, run_id: &str) -> Vec<Arc<SpanData>> {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let spans = self.spans.lock().unwrap().clone();
            let root = spans.iter().find(|s| run_of(s) == Some(run_id)).cloned();
            if let Some(root) = root {
                return spans.into_iter().filter(|s| s.trace_id == root.trace_id).collect();
            }
            assert!(Instant::now() < deadline, "no span of {run_id}");
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

impl Drop for Received {
    fn drop(&mut self) {
        ferrule::trace::remove_tracer();
    }
}

/// The run whose `invoke_agent` span `span` is.
fn run_of(span: &SpanData) -> Option<&str> {
    match span.attributes.get("ferrule.run.id") {
        Some(AttributeValue::String(id)) => Some(id),
        _ => None,
    }
}
