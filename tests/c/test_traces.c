/*
 * Traces through the C ABI: the host's tracer receives each span as JSON,
 * the run goes under the host's span, and a tool call and a hook consultation
 * each give the traceparent of the span they are in.
 */
#include "harness.h"

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

int main(int argc, char **argv) {
    static const harness_case cases[] = {
        {"spans_reach_the_tracer_and_calls_and_hooks_give_their_traceparent",
         spans_reach_the_tracer_and_calls_and_hooks_give_their_traceparent},
        {"a_malformed_trace_context_is_invalid_arg", a_malformed_trace_context_is_invalid_arg},
    };
    return harness_main(cases, sizeof cases / sizeof cases[0], argc, argv);
}
