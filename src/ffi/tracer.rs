//! The host's tracer: `ferrule_runtime_set_tracer`.

use std::ffi::{c_char, c_void};
use std::sync::Arc;

use super::boundary::guard;
use super::error::ferrule_error;
use super::foreign_data::{ferrule_free_fn, ForeignData};
use crate::trace::SpanData;

/// Receives one finished span: a JSON object (`trace_id`, `span_id`,
/// `parent_span_id`, `name`, `kind`, `start_time_unix_nano`,
/// `end_time_unix_nano`, `attributes`, `events`, `status`), `len` bytes at
/// `span_json` (NUL-terminated), borrowed for the duration of the call. Called
/// on ferrule's tracer thread, one span at a time, in the order they ended
/// (the spans under a span usually before it; not those of an operation the
/// run abandoned).
pub type ferrule_span_fn = Option<unsafe extern "C" fn(user_data: *mut c_void, span_json: *const c_char, len: usize)>;

/// Sets the process's tracer: from the next run on, every run records spans
/// after the OpenTelemetry GenAI conventions (`invoke_agent`, `chat`,
/// `execute_tool`; docs/tracing.md), and `on_span` receives each when it ends.
/// Spans wait in a bounded queue (4096): past that they are dropped (the
/// logger says how many); a slow tracer never slows a run. Without a tracer,
/// runs record nothing.
///
/// A NULL `on_span` removes the tracer (`user_data` and `free_user_data` are
/// then ignored). A tracer replaces the one before it, which still receives
/// the spans that ended for it; `free_user_data(user_data)`, if not NULL, runs
/// once the tracer was replaced or removed and its last call returned.
/// `FERRULE_ERROR_RESOURCE_EXHAUSTED` when the system refuses the tracer's
/// thread; on error the host still owns `user_data`. Any thread, at any time.
#[no_mangle]
pub unsafe extern "C" fn ferrule_runtime_set_tracer(
    on_span: ferrule_span_fn,
    user_data: *mut c_void,
    free_user_data: ferrule_free_fn,
) -> *mut ferrule_error {
    guard(|| {
        let Some(on_span) = on_span else {
            crate::trace::remove_tracer();
            return Ok(());
        };
        crate::trace::set_tracer_made(|| {
            // Nothing can fail from here on: the user data belongs to ferrule.
            let host = ForeignData::new(user_data, free_user_data);
            Arc::new(move |span: Arc<SpanData>| {
                let host = &host;
                let mut json = serde_json::to_vec(&*span).unwrap_or_default();
                let len = json.len();
                json.push(0);
                // SAFETY: the host gave `on_span` for `user_data`; the span is
                // borrowed for the call only.
                unsafe { on_span(host.data, json.as_ptr().cast(), len) };
            })
        })
    })
}
