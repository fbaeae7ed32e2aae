/*
 * Traces through the C ABI: the host's tracer receives each span as JSON,
 * the run goes under the host's span, and a tool call and a hook consultation
 * each give the traceparent of the span they are in.
 */
#include "harness.h"

#include <unistd.h>

static const char *const HOST_TRACE = "0af7651916cd43dd8448eb211c80319c";

/* What the tool and the hook saw of their spans. */
static char tool_traceparent[64], hook_traceparent[64];

static void copy_str(char *to, ferrule_str from) {
    size_t len = from.len < 63 ? from.len : 63;
    memcpy(to, from.ptr, len);
    to[len] = '\0';
}

static void traced_tool(void *user_data, ferrule_tool_call *call) {
    (void)user_data;
    copy_str(tool_traceparent, ferrule_tool_call_traceparent(call));
    ferrule_error_free(ferrule_tool_call_complete(call, STR("\"Gold\"")));
}

static void traced_hook(void *user_data, ferrule_hook *hook) {
    (void)user_data;
    copy_str(hook_traceparent, ferrule_hook_traceparent(hook));
    ferrule_error_free(ferrule_hook_respond(hook, STR("{}")));
}

static ferrule_agent *traced_agent(void) {
    const char *config =
        "{\"name\": \"support\", \"model\": {\"provider\": \"scripted\", \"script\": ["
        "{\"tool_calls\": [{\"id\": \"c1\", \"name\": \"lookup\", \"arguments\": {}}]}, {\"text\": \"done\"}]}}";
    ferrule_agent_builder *builder = NULL;
    if (!harness_expect_ok(ferrule_agent_builder_new(STR(config), &builder), __FILE__, __LINE__)) return NULL;
    ferrule_tool_spec spec = harness_spec("lookup", "", traced_tool, NULL, NULL);
    if (!harness_expect_ok(ferrule_agent_builder_add_tool(builder, &spec), __FILE__, __LINE__) ||
        !harness_expect_ok(ferrule_agent_builder_add_hook(builder, STR("{\"stages\": [\"tool_call\"]}"), traced_hook,
                                                          NULL, NULL),
                           __FILE__, __LINE__)) {
        ferrule_agent_builder_free(builder);
        return NULL;
    }
    ferrule_agent *agent = NULL;
    if (!harness_expect_ok(ferrule_agent_build(builder, &agent), __FILE__, __LINE__)) return NULL;
    return agent;
}

/* The span of `log` whose JSON contains `needle`, or NULL. */
static const char *span_with(event_log *log, const char *needle) {
    const char *found = NULL;
    pthread_mutex_lock(&log->lock);
    for (size_t i = 0; i < log->count && !found; i++) {
        if (strstr(log->events[i], needle)) found = log->events[i];
    }
    pthread_mutex_unlock(&log->lock);
    return found;
}

/* The 16 hex digits after `"span_id":"` in `span`. */
static void span_id_of(const char *span, char out[17]) {
    const char *at = strstr(span, "\"span_id\":\"");
    out[0] = '\0';
    if (at) {
        memcpy(out, at + 11, 16);
        out[16] = '\0';
    }
}

static void spans_reach_the_tracer_and_calls_and_hooks_give_their_traceparent(void) {
    CHECK(ferrule_tool_call_traceparent(NULL).len == 0 && ferrule_hook_traceparent(NULL).len == 0);
    event_log spans;
    event_log_init(&spans);
    CHECK_OK(ferrule_runtime_set_tracer(event_log_on_event, &spans, event_log_free));
    ferrule_agent *agent = traced_agent();
    CHECK(agent != NULL);
    const char *input = "{\"prompt\": \"go\", \"trace_context\": {\"traceparent\": "
                        "\"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01\"}}";
    ferrule_run *run = NULL;
    CHECK_OK(ferrule_agent_start(agent, STR(input), NULL, NULL, NULL, &run));
    char *result = harness_wait(run);
    CHECK(result != NULL && strstr(result, "\"status\":\"completed\""));
    ferrule_string_free(result);
    ferrule_run_free(run);
    for (int i = 0; i < 1000 && !span_with(&spans, "\"name\":\"invoke_agent support\""); i++) harness_sleep_ms(10);

    const char *root = span_with(&spans, "\"name\":\"invoke_agent support\"");
    const char *tool = span_with(&spans, "\"name\":\"execute_tool lookup\"");
    CHECK(root && tool);
    CHECK(strstr(root, "\"trace_id\":\"0af7651916cd43dd8448eb211c80319c\""));
    CHECK(strstr(root, "\"parent_span_id\":\"b7ad6b7169203331\""));
    CHECK(strstr(root, "\"gen_ai.operation.name\":\"invoke_agent\""));
    CHECK(event_log_count(&spans, "\"gen_ai.operation.name\":\"chat\"") == 2);
    char root_id[17], tool_id[17], expected[64];
    span_id_of(root, root_id);
    span_id_of(tool, tool_id);
    snprintf(expected, sizeof expected, "\"parent_span_id\":\"%s\"", root_id);
    CHECK(strstr(tool, expected));
    snprintf(expected, sizeof expected, "00-%s-%s-01", HOST_TRACE, tool_id);
    CHECK(strcmp(tool_traceparent, expected) == 0);
    snprintf(expected, sizeof expected, "00-%s-%s-01", HOST_TRACE, root_id);
    CHECK(strcmp(hook_traceparent, expected) == 0);
    CHECK(strstr(root, "\"name\":\"ferrule.hook\""));

    /* Removed: its data is freed, and runs record nothing. */
    CHECK_OK(ferrule_runtime_set_tracer(NULL, NULL, NULL));
    CHECK(wait_for_count(&spans.freed, 1, 10000));
    char *again = harness_run(agent, NULL);
    CHECK(again != NULL && strstr(again, "\"status\":\"completed\""));
    ferrule_string_free(again);
    CHECK(tool_traceparent[0] == '\0' && hook_traceparent[0] == '\0');
    ferrule_agent_free(agent);
    event_log_destroy(&spans);
}

static void a_malformed_trace_context_is_invalid_arg(void) {
    ferrule_agent *agent = harness_agent("{\"model\": {\"provider\": \"scripted\"}}", NULL, 0);
    CHECK(agent != NULL);
    ferrule_run *run = NULL;
    const char *input = "{\"prompt\": \"go\", \"trace_context\": {\"traceparent\": \"00-zz\"}}";
    CHECK_ERROR(ferrule_agent_start(agent, STR(input), NULL, NULL, NULL, &run), FERRULE_ERROR_INVALID_ARG,
                "trace_context.traceparent");
    CHECK(run == NULL);
    ferrule_agent_free(agent);
}

/* ---- the tracer and the logger replaced while runs go on ----------------------- */

/* One tracer's or logger's user data: what it received, and whether anything
 * came after its free. */
typedef struct {
    atomic_int received;
    atomic_int frees;
    atomic_int after_free;
} outlet_sink;

enum { SWAPS = 3000 };
static outlet_sink tracer_sinks[SWAPS], logger_sinks[SWAPS];
static atomic_int runners_left;

static void sink_receive(void *user_data, const char *json, size_t len) {
    outlet_sink *sink = user_data;
    if (strlen(json) != len || atomic_load(&sink->frees) != 0) atomic_fetch_add(&sink->after_free, 1);
    atomic_fetch_add(&sink->received, 1);
}

static void sink_free(void *user_data) {
    atomic_fetch_add(&((outlet_sink *)user_data)->frees, 1);
}

static void answer_gold(void *user_data, ferrule_tool_call *call) {
    (void)user_data;
    ferrule_error_free(ferrule_tool_call_complete(call, STR("\"Gold\"")));
}

/* A host model that is always too busy: each run's request is tried again
 * once (a logged retry) before the run fails. */
static void always_busy(void *user_data, ferrule_model_request *request) {
    (void)user_data;
    ferrule_error_free(ferrule_model_request_fail(request, FERRULE_ERROR_PROVIDER_OVERLOADED, STR("busy"), true));
}

static ferrule_agent *busy_agent(void) {
    ferrule_agent_builder *builder = NULL;
    const char *config = "{\"model\": {\"provider\": \"host\", \"name\": \"busy\", \"max_retries\": 1, "
                         "\"retry_backoff_ms\": 1}}";
    if (!harness_expect_ok(ferrule_agent_builder_new(STR(config), &builder), __FILE__, __LINE__)) return NULL;
    ferrule_model_spec spec = {
        .struct_size = sizeof(ferrule_model_spec), .name = "busy", .name_len = 4, .generate = always_busy,
        .nonblocking = true,
    };
    ferrule_agent *agent = NULL;
    if (!harness_expect_ok(ferrule_agent_builder_set_model(builder, &spec), __FILE__, __LINE__)) {
        ferrule_agent_builder_free(builder);
        return NULL;
    }
    if (!harness_expect_ok(ferrule_agent_build(builder, &agent), __FILE__, __LINE__)) return NULL;
    return agent;
}

/* Runs, one after the other: a traced one with a call, and one whose model is
 * too busy. */
static void *run_repeatedly(void *arg) {
    (void)arg;
    ferrule_tool_spec spec = harness_spec("lookup", "", answer_gold, NULL, NULL);
    ferrule_agent *traced = harness_agent(
        "{\"name\": \"support\", \"model\": {\"provider\": \"scripted\", \"script\": ["
        "{\"tool_calls\": [{\"id\": \"c1\", \"name\": \"lookup\", \"arguments\": {}}]}, {\"text\": \"done\"}]}}",
        &spec, 1);
    ferrule_agent *retrying = busy_agent();
    for (int i = 0; i < 300 && traced && retrying; i++) {
        ferrule_string_free(harness_run(traced, NULL));
        ferrule_string_free(harness_run(retrying, NULL));
    }
    ferrule_agent_free(traced);
    ferrule_agent_free(retrying);
    atomic_fetch_sub(&runners_left, 1);
    return NULL;
}

/* Tracers and loggers set, replaced and removed from one thread while runs on
 * two others make spans and records: each sink gets nothing after its free,
 * which comes exactly once. */
static void the_tracer_and_logger_replaced_while_runs_go_on(void) {
    enum { RUNNERS = 2 };
    pthread_t runners[RUNNERS];
    atomic_store(&runners_left, RUNNERS);
    for (int i = 0; i < RUNNERS; i++) pthread_create(&runners[i], NULL, run_repeatedly, NULL);
    int swaps = 0;
    for (; swaps < SWAPS && atomic_load(&runners_left) > 0; swaps++) {
        if (swaps % 3 == 2) {
            CHECK_OK(ferrule_runtime_set_tracer(NULL, NULL, NULL));
            CHECK_OK(ferrule_runtime_set_logger(NULL, NULL, NULL, 0));
            /* Set again on the next swap: these two are never handed over. */
            atomic_store(&tracer_sinks[swaps].frees, 1);
            atomic_store(&logger_sinks[swaps].frees, 1);
        } else {
            CHECK_OK(ferrule_runtime_set_tracer(sink_receive, &tracer_sinks[swaps], sink_free));
            CHECK_OK(ferrule_runtime_set_logger(sink_receive, &logger_sinks[swaps], sink_free, FERRULE_LOG_LEVEL_TRACE));
        }
        usleep(200);
    }
    for (int i = 0; i < RUNNERS; i++) pthread_join(runners[i], NULL);
    CHECK_OK(ferrule_runtime_set_tracer(NULL, NULL, NULL));
    CHECK_OK(ferrule_runtime_set_logger(NULL, NULL, NULL, 0));
    int spans = 0, records = 0;
    for (int i = 0; i < swaps; i++) {
        CHECK(wait_for_count(&tracer_sinks[i].frees, 1, 10000) && wait_for_count(&logger_sinks[i].frees, 1, 10000));
        CHECK(atomic_load(&tracer_sinks[i].frees) == 1 && atomic_load(&logger_sinks[i].frees) == 1);
        CHECK(atomic_load(&tracer_sinks[i].after_free) == 0 && atomic_load(&logger_sinks[i].after_free) == 0);
        spans += atomic_load(&tracer_sinks[i].received);
        records += atomic_load(&logger_sinks[i].received);
    }
    CHECK(swaps > 10 && spans > 0 && records > 0);
}

int main(int argc, char **argv) {
    static const harness_case cases[] = {
        {"spans_reach_the_tracer_and_calls_and_hooks_give_their_traceparent",
         spans_reach_the_tracer_and_calls_and_hooks_give_their_traceparent},
        {"a_malformed_trace_context_is_invalid_arg", a_malformed_trace_context_is_invalid_arg},
        {"the_tracer_and_logger_replaced_while_runs_go_on", the_tracer_and_logger_replaced_while_runs_go_on},
    };
    return harness_main(cases, sizeof cases / sizeof cases[0], argc, argv);
}
