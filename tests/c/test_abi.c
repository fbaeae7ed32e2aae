/*
 * Every entry point's argument checks: NULL pointers, invalid UTF-8, invalid
 * JSON and unknown fields, each with its error code and a message that says what
 * was wrong; user data is never taken by a call that fails.
 */
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

static const char SCRIPTED[] = "{\"model\": {\"provider\": \"scripted\", \"script\": [{\"text\": \"hi\"}]}}";
static const char BAD_UTF8[] = "{\"prompt\": \"\xff\xfe\"}";

static void complete_now(void *user_data, ferrule_tool_call *call) {
    (void)user_data;
    ferrule_error_free(ferrule_tool_call_complete(call, STR("\"done\"")));
}

static void runtime_configure_is_checked_and_only_once(void) {
    /* First in this process: the runtime has not started yet. */
    CHECK_ERROR(ferrule_runtime_configure(NULL, 3), FERRULE_ERROR_NULL_ARG, "json");
    CHECK_ERROR(ferrule_runtime_configure(STR("{\"worker_threads\": ")), FERRULE_ERROR_INVALID_JSON, NULL);
    CHECK_ERROR(ferrule_runtime_configure(STR("{\"workers\": 2}")), FERRULE_ERROR_INVALID_ARG, "workers");
    CHECK_ERROR(ferrule_runtime_configure(STR("{\"worker_threads\": 0}")), FERRULE_ERROR_INVALID_ARG, "at least 1");
    CHECK_OK(ferrule_runtime_configure(STR("{\"worker_threads\": 2, \"max_blocking_threads\": 64}")));
    CHECK_ERROR(ferrule_runtime_configure(STR("{}")), FERRULE_ERROR_ALREADY_INITIALIZED, NULL);
}

static void versions_match_the_header(void) {
    ferrule_str version = ferrule_version();
    CHECK(version.len > 0 && version.ptr[version.len] == '\0');
    CHECK(ferrule_abi_version() == FERRULE_ABI_VERSION);
}

static void errors_and_strings_accept_null(void) {
    CHECK(ferrule_error_code(NULL) == 0);
    ferrule_str empty = ferrule_error_message(NULL);
    CHECK(empty.len == 0 && empty.ptr != NULL && empty.ptr[0] == '\0');
    ferrule_error_free(NULL);
    ferrule_string_free(NULL);
    ferrule_agent_builder_free(NULL);
    ferrule_agent_free(NULL);
    ferrule_run_free(NULL);
    ferrule_run_cancel(NULL);
    CHECK(ferrule_agent_clone(NULL) == NULL);
    CHECK(ferrule_run_clone(NULL) == NULL);
    CHECK(ferrule_run_id(NULL).len == 0);
    CHECK(ferrule_tool_call_id(NULL).len == 0);
    CHECK(ferrule_tool_call_name(NULL).len == 0);
    CHECK(ferrule_tool_call_arguments(NULL).len == 0);
    ferrule_str id = {"x", 1}, name = {"x", 1}, payload = {"x", 1};
    ferrule_tool_call_strings(NULL, &id, &name, NULL);
    CHECK(id.len == 0 && id.ptr[0] == '\0' && name.len == 0 && name.ptr[0] == '\0');
    ferrule_hook_strings(NULL, NULL, &payload);
    CHECK(payload.len == 0 && payload.ptr[0] == '\0');
    CHECK(ferrule_tool_call_is_cancelled(NULL)); /* not a live call: stop working */
}

static void builder_new_checks_its_arguments(void) {
    ferrule_agent_builder *builder = NULL;
    CHECK_ERROR(ferrule_agent_builder_new(STR(SCRIPTED), NULL), FERRULE_ERROR_NULL_ARG, "out");
    CHECK_ERROR(ferrule_agent_builder_new(NULL, 5, &builder), FERRULE_ERROR_NULL_ARG, "config_json");
    CHECK_ERROR(ferrule_agent_builder_new(STR("{\"model\": \"\xc3\x28\"}"), &builder), FERRULE_ERROR_INVALID_UTF8,
                "config_json");
    CHECK_ERROR(ferrule_agent_builder_new(STR("{\"model\": "), &builder), FERRULE_ERROR_INVALID_JSON, NULL);
    CHECK_ERROR(ferrule_agent_builder_new(STR("{\"model\": {\"provider\": \"scripted\"}, \"max_round\": 2}"), &builder),
                FERRULE_ERROR_INVALID_ARG, "max_round");
    CHECK_ERROR(ferrule_agent_builder_new(STR("{\"model\": {\"provider\": \"gpt\"}}"), &builder),
                FERRULE_ERROR_INVALID_ARG, "gpt");
    CHECK(builder == NULL); /* out-parameters are written only on success */
    CHECK_OK(ferrule_agent_builder_new(STR(SCRIPTED), &builder));
    CHECK(builder != NULL);
    ferrule_agent_builder_free(builder);
}

static void add_tool_checks_its_arguments_and_keeps_user_data_on_error(void) {
    counter owned = {0};
    ferrule_agent_builder *builder = NULL;
    CHECK_OK(ferrule_agent_builder_new(STR(SCRIPTED), &builder));
    ferrule_tool_spec spec = harness_spec("lookup", "", complete_now, &owned, counter_free);

    CHECK_ERROR(ferrule_agent_builder_add_tool(NULL, &spec), FERRULE_ERROR_NULL_ARG, "builder");
    CHECK_ERROR(ferrule_agent_builder_add_tool(builder, NULL), FERRULE_ERROR_NULL_ARG, "spec");

    ferrule_tool_spec bad = spec;
    bad.struct_size = 8;
    CHECK_ERROR(ferrule_agent_builder_add_tool(builder, &bad), FERRULE_ERROR_INVALID_ARG, "struct_size");
    bad = spec;
    bad.name = "\xff";
    bad.name_len = 1;
    CHECK_ERROR(ferrule_agent_builder_add_tool(builder, &bad), FERRULE_ERROR_INVALID_UTF8, "spec->name");
    bad = spec;
    bad.name = NULL;
    CHECK_ERROR(ferrule_agent_builder_add_tool(builder, &bad), FERRULE_ERROR_NULL_ARG, "spec->name");
    bad = spec;
    bad.name = "has space";
    bad.name_len = 9;
    CHECK_ERROR(ferrule_agent_builder_add_tool(builder, &bad), FERRULE_ERROR_INVALID_ARG, "has space");
    bad = spec;
    bad.input_schema = "{\"type\": ";
    bad.input_schema_len = strlen(bad.input_schema);
    CHECK_ERROR(ferrule_agent_builder_add_tool(builder, &bad), FERRULE_ERROR_INVALID_JSON, "input schema");
    bad.input_schema = "{\"$schema\": \"http://json-schema.org/draft-07/schema#\"}";
    bad.input_schema_len = strlen(bad.input_schema);
    CHECK_ERROR(ferrule_agent_builder_add_tool(builder, &bad), FERRULE_ERROR_INVALID_SCHEMA, "draft-07");
    bad.input_schema = "{\"properties\": {\"a\": {\"$ref\": \"https://example.com/a.json\"}}}";
    bad.input_schema_len = strlen(bad.input_schema);
    CHECK_ERROR(ferrule_agent_builder_add_tool(builder, &bad), FERRULE_ERROR_INVALID_SCHEMA, "/properties/a");
    bad = spec;
    bad.options = "{\"execution\": \"sequential\", \"retries\": 3}";
    bad.options_len = strlen(bad.options);
    CHECK_ERROR(ferrule_agent_builder_add_tool(builder, &bad), FERRULE_ERROR_INVALID_ARG, "retries");
    bad.options = "{\"execution\": \"sideways\"}";
    bad.options_len = strlen(bad.options);
    CHECK_ERROR(ferrule_agent_builder_add_tool(builder, &bad), FERRULE_ERROR_INVALID_ARG, "sideways");
    bad = spec;
    bad.execute = NULL;
    CHECK_ERROR(ferrule_agent_builder_add_tool(builder, &bad), FERRULE_ERROR_NULL_ARG, "execute");
    CHECK(atomic_load(&owned.frees) == 0);

    CHECK_OK(ferrule_agent_builder_add_tool(builder, &spec));
    counter second = {0};
    ferrule_tool_spec twin = harness_spec("lookup", "", complete_now, &second, counter_free);
    CHECK_ERROR(ferrule_agent_builder_add_tool(builder, &twin), FERRULE_ERROR_DUPLICATE_TOOL, "lookup");
    CHECK(atomic_load(&second.frees) == 0);

    ferrule_agent_builder_free(builder);
    CHECK(atomic_load(&owned.frees) == 1);
}

static void build_consumes_the_builder_even_on_error(void) {
    counter owned = {0};
    ferrule_agent_builder *builder = NULL;
    ferrule_agent *agent = NULL;
    CHECK_ERROR(ferrule_agent_build(NULL, &agent), FERRULE_ERROR_NULL_ARG, "builder");

    CHECK_OK(ferrule_agent_builder_new(STR(SCRIPTED), &builder));
    ferrule_tool_spec spec = harness_spec("lookup", "", complete_now, &owned, counter_free);
    CHECK_OK(ferrule_agent_builder_add_tool(builder, &spec));
    CHECK_ERROR(ferrule_agent_build(builder, NULL), FERRULE_ERROR_NULL_ARG, "out");
    CHECK(atomic_load(&owned.frees) == 1); /* consumed, tools and all */

    const char *named = "{\"model\": {\"provider\": \"scripted\"}, \"tool_choice\": {\"name\": \"missing\"}}";
    CHECK_OK(ferrule_agent_builder_new(STR(named), &builder));
    CHECK_ERROR(ferrule_agent_build(builder, &agent), FERRULE_ERROR_INVALID_ARG, "missing");
    CHECK(agent == NULL);
}

static void start_checks_its_arguments_and_keeps_user_data_on_error(void) {
    ferrule_agent *agent = harness_agent(SCRIPTED, NULL, 0);
    CHECK(agent != NULL);
    counter owned = {0};
    ferrule_run *run = NULL;
    const char *input = "{\"prompt\": \"hi\"}";
    CHECK_ERROR(ferrule_agent_start(NULL, STR(input), NULL, &owned, counter_free, &run), FERRULE_ERROR_NULL_ARG,
                "agent");
    CHECK_ERROR(ferrule_agent_start(agent, STR(input), NULL, &owned, counter_free, NULL), FERRULE_ERROR_NULL_ARG,
                "out");
    CHECK_ERROR(ferrule_agent_start(agent, NULL, 4, NULL, &owned, counter_free, &run), FERRULE_ERROR_NULL_ARG,
                "input_json");
    CHECK_ERROR(ferrule_agent_start(agent, STR(BAD_UTF8), NULL, &owned, counter_free, &run),
                FERRULE_ERROR_INVALID_UTF8, "input_json");
    CHECK_ERROR(ferrule_agent_start(agent, STR("{\"prompt\": "), NULL, &owned, counter_free, &run),
                FERRULE_ERROR_INVALID_JSON, NULL);
    CHECK_ERROR(ferrule_agent_start(agent, STR("{\"promt\": \"hi\"}"), NULL, &owned, counter_free, &run),
                FERRULE_ERROR_INVALID_ARG, "promt");
    CHECK_ERROR(ferrule_agent_start(agent, STR("{\"messages\": [{\"role\": \"user\", \"content\": \"a\", \"x\": 1}]}"),
                                    NULL, &owned, counter_free, &run),
                FERRULE_ERROR_INVALID_ARG, "x");
    CHECK(run == NULL);
    CHECK(atomic_load(&owned.frees) == 0);

    CHECK_OK(ferrule_agent_start(agent, STR(input), NULL, &owned, counter_free, &run));
    CHECK(atomic_load(&owned.frees) == 1); /* no on_event: nothing uses it, so it went at once */
    char *result = harness_wait(run);
    CHECK(result != NULL && strstr(result, "\"status\":\"completed\""));
    ferrule_string_free(result);
    ferrule_run_free(run);
    ferrule_agent_free(agent);
    CHECK(atomic_load(&owned.frees) == 1);
}

static void unused_recordings_checks_its_arguments(void) {
    ferrule_agent *agent = harness_agent(SCRIPTED, NULL, 0);
    CHECK(agent != NULL);
    char *json = NULL;
    size_t len = 0;
    CHECK_ERROR(ferrule_agent_unused_recordings(NULL, &json, &len), FERRULE_ERROR_NULL_ARG, "agent");
    CHECK_ERROR(ferrule_agent_unused_recordings(agent, NULL, &len), FERRULE_ERROR_NULL_ARG, "unused_json");
    CHECK_ERROR(ferrule_agent_unused_recordings(agent, &json, NULL), FERRULE_ERROR_NULL_ARG, "len");
    CHECK_ERROR(ferrule_agent_unused_recordings(agent, &json, &len), FERRULE_ERROR_INVALID_ARG, "replays no cassette");
    CHECK(json == NULL);
    ferrule_agent_free(agent);
}

/* Keeps each record (an event log) and counts those off the logger thread. */
static atomic_int records_elsewhere;

static void keep_record(void *user_data, const char *json, size_t len) {
    if (thread_kind() != 'l' || strlen(json) != len) atomic_fetch_add(&records_elsewhere, 1);
    event_log_on_event(user_data, json, len);
}

static void the_logger_gets_records_on_its_thread_and_nothing_goes_to_stderr(void) {
    counter refused = {0};
    CHECK_ERROR(ferrule_runtime_set_logger(keep_record, &refused, counter_free, 0), FERRULE_ERROR_INVALID_ARG, "level");
    CHECK_ERROR(ferrule_runtime_set_logger(keep_record, &refused, counter_free, FERRULE_LOG_LEVEL_TRACE + 1),
                FERRULE_ERROR_INVALID_ARG, "level");
    CHECK(atomic_load(&refused.frees) == 0);
    CHECK_OK(ferrule_runtime_set_logger(NULL, &refused, counter_free, 0)); /* removes none: ignores the rest */
    CHECK(atomic_load(&refused.frees) == 0);

    event_log records;
    event_log_init(&records);
    CHECK_OK(ferrule_runtime_set_logger(keep_record, &records, event_log_free, FERRULE_LOG_LEVEL_WARN));
    /* Nothing listens on port 1: the request fails, is tried once more, and fails. */
    const char *config = "{\"model\": {\"provider\": \"openai-compatible\", \"name\": \"m\", "
                         "\"base_url\": \"http://127.0.0.1:1/v1\", \"max_retries\": 1, \"retry_backoff_ms\": 1}}";
    ferrule_agent *agent = harness_agent(config, NULL, 0);
    CHECK(agent != NULL);
    int saved = capture_stderr_begin();
    char *result = harness_run(agent, NULL);
    char *written = capture_stderr_end(saved);
    CHECK(result != NULL && strstr(result, "PROVIDER_NETWORK"));
    CHECK(written != NULL && written[0] == '\0');
    free(written);
    ferrule_string_free(result);
    ferrule_agent_free(agent);
    for (int i = 0; i < 1000 && event_log_count(&records, "\"ferrule::provider\"") == 0; i++) harness_sleep_ms(10);
    CHECK(event_log_count(&records, "\"level\":\"warn\",\"target\":\"ferrule::provider\"") == 1);
    CHECK(event_log_count(&records, "\"attempt\":2") == 1);
    CHECK(event_log_count(&records, "\"code\":\"PROVIDER_NETWORK\"") == 1);
    CHECK(atomic_load(&records_elsewhere) == 0);

    /* Removed: its data is freed once its last call returned. */
    CHECK_OK(ferrule_runtime_set_logger(NULL, NULL, NULL, 0));
    CHECK(wait_for_count(&records.freed, 1, 10000));
    event_log_destroy(&records);
}

static void wait_checks_its_arguments(void) {
    ferrule_agent *agent = harness_agent(SCRIPTED, NULL, 0);
    CHECK(agent != NULL);
    ferrule_run *run = NULL;
    CHECK_OK(ferrule_agent_start(agent, STR("{\"prompt\": \"hi\"}"), NULL, NULL, NULL, &run));
    char *json = NULL;
    size_t len = 0;
    CHECK_ERROR(ferrule_run_wait(NULL, &json, &len), FERRULE_ERROR_NULL_ARG, "run");
    CHECK_ERROR(ferrule_run_wait(run, NULL, &len), FERRULE_ERROR_NULL_ARG, "result_json");
    CHECK_ERROR(ferrule_run_wait(run, &json, NULL), FERRULE_ERROR_NULL_ARG, "len");
    CHECK(json == NULL);
    ferrule_str id = ferrule_run_id(run);
    CHECK(id.len > 4 && strncmp(id.ptr, "run-", 4) == 0);
    /* Waiting twice, and through a clone, gives the same result. */
    ferrule_run *clone = ferrule_run_clone(run);
    char *first = harness_wait(run);
    char *second = harness_wait(clone);
    CHECK(first && second && strcmp(first, second) == 0);
    ferrule_string_free(first);
    ferrule_string_free(second);
    ferrule_run_free(clone);
    ferrule_run_free(run);
    ferrule_agent_free(agent);
}

/* An event callback that keeps nothing: only its free_user_data is counted. */
static void slow_run_end(void *user_data, const char *json, size_t len) {
    (void)user_data;
    (void)len;
    if (strstr(json, "\"run_end\"")) harness_sleep_ms(50); /* the free comes after: wait must wait for it */
}

static void wait_without_the_result_only_waits(void) {
    ferrule_agent *agent = harness_agent(SCRIPTED, NULL, 0);
    CHECK(agent != NULL);
    counter sink = {0};
    ferrule_run *run = NULL;
    CHECK_OK(ferrule_agent_start(agent, STR("{\"prompt\": \"hi\"}"), slow_run_end, &sink, counter_free, &run));
    CHECK_OK(ferrule_run_wait(run, NULL, NULL));
    CHECK(atomic_load(&sink.frees) == 1); /* every event delivered and the sink let go */
    char *result = harness_wait(run);  /* and the result is still there */
    CHECK(result != NULL && strstr(result, "\"status\":\"completed\""));
    ferrule_string_free(result);
    ferrule_run_free(run);
    ferrule_agent_free(agent);
}

static void tool_call_functions_check_null(void) {
    CHECK_ERROR(ferrule_tool_call_complete(NULL, STR("\"x\"")), FERRULE_ERROR_NULL_ARG, "call");
    CHECK_ERROR(ferrule_tool_call_fail(NULL, STR("x")), FERRULE_ERROR_NULL_ARG, "call");
    CHECK_ERROR(ferrule_tool_call_update(NULL, STR("\"x\"")), FERRULE_ERROR_NULL_ARG, "call");
}

static void a_panic_becomes_an_error_and_prints_nothing(void) {
    int captured = capture_stderr_begin();
    ferrule_error *err = ferrule_debug_panic(STR("test panic"));
    char *printed = capture_stderr_end(captured);
    CHECK(printed && printed[0] == '\0'); /* a library does not write to the host's stderr */
    free(printed);
    /* The message says what and where. */
    CHECK(strstr(ferrule_error_message(err).ptr, "src/ffi/debug.rs") != NULL);
    CHECK_ERROR(err, FERRULE_ERROR_PANIC, "test panic");
    /* The library keeps working afterwards. */
    ferrule_agent *agent = harness_agent(SCRIPTED, NULL, 0);
    CHECK(agent != NULL);
    ferrule_agent_free(agent);
}

/* What a child forked after the runtime started may still do: read and free
 * errors and strings, read versions. Everything else refuses or does nothing. */
static int forked_child_behaves(ferrule_agent *agent, ferrule_run *run, counter *tool_data) {
    int ok = 1;
    ferrule_agent_builder *builder = NULL;
    ferrule_error *err = ferrule_agent_builder_new(STR(SCRIPTED), &builder);
    ok &= ferrule_error_code(err) == FERRULE_ERROR_FORKED && builder == NULL;
    ok &= strstr(ferrule_error_message(err).ptr, "forked") != NULL;
    ferrule_error_free(err);
    ferrule_run *started = NULL;
    err = ferrule_agent_start(agent, STR("{\"prompt\": \"hi\"}"), NULL, NULL, NULL, &started);
    ok &= ferrule_error_code(err) == FERRULE_ERROR_FORKED && started == NULL;
    ferrule_error_free(err);
    char *json = NULL;
    size_t len = 0;
    err = ferrule_run_wait(run, &json, &len);
    ok &= ferrule_error_code(err) == FERRULE_ERROR_FORKED && json == NULL;
    ferrule_error_free(err);
    ok &= ferrule_agent_clone(agent) == NULL;
    ok &= ferrule_run_clone(run) == NULL;
    ok &= ferrule_run_id(run).len == 0;
    ok &= ferrule_tool_call_is_cancelled((ferrule_tool_call *)(uintptr_t)0x1);
    /* Strings written at once are empty, not left as they were. */
    ferrule_str id = {"stale", 5}, name = {"stale", 5}, stage = {"stale", 5};
    ferrule_tool_call_strings((ferrule_tool_call *)(uintptr_t)0x1, &id, &name, NULL);
    ferrule_hook_strings((ferrule_hook *)(uintptr_t)0x1, &stage, NULL);
    ok &= id.len == 0 && id.ptr[0] == '\0' && name.len == 0 && stage.len == 0 && stage.ptr[0] == '\0';
    ok &= ferrule_version().len > 0 && ferrule_abi_version() == FERRULE_ABI_VERSION;
    ferrule_run_cancel(run);
    ferrule_run_free(run);
    ferrule_agent_free(agent);
    ok &= atomic_load(&tool_data->frees) == 0; /* freeing did nothing */
    return ok;
}

static void a_forked_child_gets_forked(void) {
    /* Make sure the runtime has started. */
    counter tool_data = {0};
    ferrule_tool_spec spec = harness_spec("lookup", "", complete_now, &tool_data, counter_free);
    ferrule_agent *agent = harness_agent(SCRIPTED, &spec, 1);
    CHECK(agent != NULL);
    ferrule_run *run = NULL;
    CHECK_OK(ferrule_agent_start(agent, STR("{\"prompt\": \"hi\"}"), NULL, NULL, NULL, &run));
    char *result = harness_wait(run);
    ferrule_string_free(result);

    fflush(NULL);
    pid_t child = fork();
    CHECK(child >= 0);
    if (child == 0) _exit(forked_child_behaves(agent, run, &tool_data) ? 0 : 1);
    int status = 0;
    CHECK(waitpid(child, &status, 0) == child);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    ferrule_run_free(run);
    ferrule_agent_free(agent);
    CHECK(atomic_load(&tool_data.frees) == 1);
}

int main(int argc, char **argv) {
    static const harness_case cases[] = {
        {"runtime_configure_is_checked_and_only_once", runtime_configure_is_checked_and_only_once},
        {"versions_match_the_header", versions_match_the_header},
        {"errors_and_strings_accept_null", errors_and_strings_accept_null},
        {"builder_new_checks_its_arguments", builder_new_checks_its_arguments},
        {"add_tool_checks_its_arguments_and_keeps_user_data_on_error",
         add_tool_checks_its_arguments_and_keeps_user_data_on_error},
        {"build_consumes_the_builder_even_on_error", build_consumes_the_builder_even_on_error},
        {"start_checks_its_arguments_and_keeps_user_data_on_error",
         start_checks_its_arguments_and_keeps_user_data_on_error},
        {"unused_recordings_checks_its_arguments", unused_recordings_checks_its_arguments},
        {"the_logger_gets_records_on_its_thread_and_nothing_goes_to_stderr",
         the_logger_gets_records_on_its_thread_and_nothing_goes_to_stderr},
        {"wait_checks_its_arguments", wait_checks_its_arguments},
        {"wait_without_the_result_only_waits", wait_without_the_result_only_waits},
        {"tool_call_functions_check_null", tool_call_functions_check_null},
        {"a_panic_becomes_an_error_and_prints_nothing", a_panic_becomes_an_error_and_prints_nothing},
        {"a_forked_child_gets_forked", a_forked_child_gets_forked},
    };
    return harness_main(cases, sizeof cases / sizeof cases[0], argc, argv);
}
