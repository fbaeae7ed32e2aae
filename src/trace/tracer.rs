//! Where an agent's finished spans go: the host's tracer (the process's, set
//! with `ferrule_runtime_set_tracer`) and the agent's own OTLP exporter.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use super::config::TraceConfig;
use super::otlp::Exporter;
use super::span::SpanData;
use crate::error::Result;
use crate::runtime::{Outlet, Receive};

/// Finished spans waiting for the host's tracer at most.
pub(crate) const QUEUED_SPANS: usize = 4096;

static HOST: Outlet<Arc<SpanData>> = Outlet::new("ferrule-trace", QUEUED_SPANS, dropped_spans);
/// Whether the host set a tracer.
static HOST_SET: AtomicBool = AtomicBool::new(false);

/// A host's tracer: takes each finished span on ferrule's tracer thread.
pub type HostTracer = Arc<dyn Fn(Arc<SpanData>) + Send + Sync>;

/// Sets the process's tracer: every span of every agent goes to it when it
/// ends. The previous tracer receives what was made for it and is then
/// dropped. Fails with `RESOURCE_EXHAUSTED`, changing nothing, when the
/// system refuses the tracer's thread. Any thread.
pub fn set_tracer(tracer: impl Fn(Arc<SpanData>) + Send + Sync + 'static) -> Result<()> {
    set_tracer_made(move || Arc::new(tracer))
}

/// Removes the process's tracer. Runs started after this record no spans for
/// it (an agent with its own exporter still records them). Any thread.
pub fn remove_tracer() {
    let _one_at_a_time = SETTING.lock().unwrap_or_else(|e| e.into_inner());
    HOST_SET.store(false, Ordering::SeqCst);
    HOST.set(None);
}

/// Setting and removing the tracer take turns, so `HOST_SET` says whether
/// there is one.
static SETTING: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Sets the tracer `make` gives, made once nothing can fail.
pub(crate) fn set_tracer_made(make: impl FnOnce() -> HostTracer) -> Result<()> {
    let _one_at_a_time = SETTING.lock().unwrap_or_else(|e| e.into_inner());
    HOST.open()?;
    let tracer: Arc<Receive<Arc<SpanData>>> = make();
    HOST.set(Some(tracer));
    HOST_SET.store(true, Ordering::SeqCst);
    Ok(())
}

/// What the host's tracer is told after spans were dropped: nothing (a span
/// cannot say it), so the logger is.
fn dropped_spans(count: u64) -> Option<Arc<SpanData>> {
    crate::log::log!(Warn, "ferrule::trace", format!("{count} spans were dropped: the tracer did not keep up"),
        "dropped" => count);
    None
}

/// An agent's tracing: its settings and where its spans go. Shared by its runs.
#[derive(Debug, Default)]
pub(crate) struct Tracer {
    pub(crate) config: TraceConfig,
    /// The agent's own exporter (`trace.otlp`).
    exporter: Option<Exporter>,
}

impl Tracer {
    /// The tracing of an agent configured with `config`, its exporter started.
    pub(crate) fn new(config: TraceConfig) -> Result<Tracer> {
        let exporter = config.otlp.as_ref().map(Exporter::start).transpose()?;
        Ok(Tracer { config, exporter })
    }

    /// Whether a run started now records spans: when the host set a tracer
    /// or the agent exports them.
    pub(crate) fn is_on(&self) -> bool {
        self.exporter.is_some() || HOST_SET.load(Ordering::Relaxed)
    }

    /// Hands a finished span on.
    pub(crate) fn finished(&self, span: SpanData) {
        let span = Arc::new(span);
        if let Some(exporter) = &self.exporter {
            exporter.offer(Arc::clone(&span));
        }
        if HOST_SET.load(Ordering::Relaxed) {
            HOST.offer(span);
        }
    }
}
