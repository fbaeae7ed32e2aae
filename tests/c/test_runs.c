/*
 * Runs through the C ABI: full runs, completion from another thread, handles freed
 * early, cancellation and waiting from inside callbacks, tools that never
 * complete, user data freed exactly once, panics inside a run.
 */
#include <unistd.h>

#include "harness.h"

#define SCRIPT(turns) "{\"model\": {\"provider\": \"scripted\", \"script\": [" turns "]}}"
#define CALL(id, name) "{\"id\": \"" id "\", \"name\": \"" name "\", \"arguments\": {\"n\": 1}}"

/* ---- tools ------------------------------------------------------------------ */

static void complete_now(void *user_data, ferrule_tool_call *call) {
    (void)user_data;
    ferrule_str name = ferrule_tool_call_name(call);
    ferrule_str args = ferrule_tool_call_arguments(call);
    /* The three at once are the same borrowed strings; a NULL pointer skips one. */
    ferrule_str id_too, name_too, args_too;
    ferrule_tool_call_strings(call, &id_too, &name_too, &args_too);
    ferrule_tool_call_strings(call, NULL, NULL, NULL);
    bool same = id_too.ptr == ferrule_tool_call_id(call).ptr && id_too.len == ferrule_tool_call_id(call).len &&
                name_too.ptr == name.ptr && name_too.len == name.len && args_too.ptr == args.ptr && args_too.len == args.len;
    char result[256];
    snprintf(result, sizeof result, "\"%s saw %s\"", name.ptr,
             !same ? "other strings at once" : strcmp(args.ptr, "{\"n\":1}") == 0 ? "n=1" : "?");
    ferrule_error_free(ferrule_tool_call_complete(call, STR(result)));
}

static void *complete_later_worker(void *arg) {
    ferrule_tool_call *call = arg;
    harness_sleep_ms(10);
    ferrule_error_free(ferrule_tool_call_update(call, STR("{\"content\": \"working\"}")));
    harness_sleep_ms(10);
    ferrule_error_free(ferrule_tool_call_complete(call, STR("{\"content\": [{\"type\": \"text\", \"text\": \"late answer\"}]}")));
    return NULL;
}

static void complete_later(void *user_data, ferrule_tool_call *call) {
    (void)user_data;
    pthread_t thread;
    pthread_create(&thread, NULL, complete_later_worker, call);
    pthread_detach(thread);
}

/* Never completes on its own: a watcher completes it once it is cancelled (by a
 * timeout or the run), and that completion is discarded. */
static atomic_int watchers_started, watchers_done;

static void *watch_for_cancel(void *arg) {
    ferrule_tool_call *call = arg;
    while (!ferrule_tool_call_is_cancelled(call)) harness_sleep_ms(1);
    ferrule_error_free(ferrule_tool_call_complete(call, STR("\"finished after all\"")));
    atomic_fetch_add(&watchers_done, 1);
    return NULL;
}

static void never_completes(void *user_data, ferrule_tool_call *call) {
    (void)user_data;
    atomic_fetch_add(&watchers_started, 1);
    pthread_t thread;
    pthread_create(&thread, NULL, watch_for_cancel, call);
    pthread_detach(thread);
}

/* Waits until every watcher that started has finished; at most `most` started. */
static int wait_for_watchers(int most) {
    while (atomic_load(&watchers_done) < atomic_load(&watchers_started)) harness_sleep_ms(1);
    return atomic_load(&watchers_done) <= most;
}

/* ---- cases ------------------------------------------------------------------ */

static void a_full_run_with_a_tool_that_answers_at_once(void) {
    counter tool_data = {0};
    ferrule_tool_spec spec = harness_spec("lookup", "", complete_now, &tool_data, counter_free);
    ferrule_agent *agent = harness_agent(SCRIPT("{\"tool_calls\": [" CALL("c1", "lookup") "]}, {\"text\": \"done\"}"), &spec, 1);
    CHECK(agent != NULL);
    event_log log;
    event_log_init(&log);
    char *result = harness_run(agent, &log);
    CHECK(result != NULL);
    CHECK(strstr(result, "\"status\":\"completed\""));
    CHECK(strstr(result, "lookup saw n=1"));
    CHECK(atomic_load(&log.freed) == 1); /* freed right after run_end, before wait returned */
    CHECK(log.count > 0 && strstr(log.events[0], "\"type\":\"run_start\""));
    CHECK(strstr(log.events[log.count - 1], "\"type\":\"run_end\""));
    CHECK(event_log_count(&log, "\"type\":\"run_end\"") == 1);
    CHECK(event_log_count(&log, "\"type\":\"tool_execution_start\"") == 1);
    CHECK(event_log_count(&log, "\"type\":\"tool_execution_end\"") == 1);
    ferrule_string_free(result);
    CHECK(atomic_load(&tool_data.frees) == 0);
    ferrule_agent_free(agent);
    CHECK(atomic_load(&tool_data.frees) == 1);
    event_log_destroy(&log);
}

/* Starts a run of `agent` from `input` with the log as its event sink and
 * returns its result JSON (free it). */
static char *run_with_input(ferrule_agent *agent, const char *input, event_log *log) {
    ferrule_run *run = NULL;
    ferrule_error *err = ferrule_agent_start(agent, input, strlen(input), event_log_on_event, log, event_log_free, &run);
    if (!harness_expect_ok(err, __FILE__, __LINE__)) return NULL;
    char *result = harness_wait(run);
    ferrule_run_free(run);
    return result;
}

static void events_in_bursts_or_run_end_alone(void) {
    counter tool_data = {0};
    ferrule_tool_spec spec = harness_spec("lookup", "", complete_now, &tool_data, counter_free);
    ferrule_agent *agent = harness_agent(
        SCRIPT("{\"tool_calls\": [" CALL("c1", "lookup") ", " CALL("c2", "lookup") "]}, {\"text\": \"done\"}"), &spec, 1);
    CHECK(agent != NULL);

    /* One by one: the reference. */
    event_log single;
    event_log_init(&single);
    char *result = run_with_input(agent, "{\"prompt\": \"go\"}", &single);
    CHECK(result != NULL);
    ferrule_string_free(result);

    /* In bursts: every call is a JSON list; together, the same events in order. */
    event_log bursts;
    event_log_init(&bursts);
    result = run_with_input(agent, "{\"prompt\": \"go\", \"event_bursts\": true}", &bursts);
    CHECK(result != NULL && strstr(result, "\"status\":\"completed\""));
    ferrule_string_free(result);
    CHECK(atomic_load(&bursts.freed) == 1);
    size_t total = 0;
    for (size_t i = 0; i < bursts.count; i++) {
        CHECK(bursts.events[i][0] == '[');
        CHECK(bursts.events[i][strlen(bursts.events[i]) - 1] == ']');
    }
    const char *types[] = {"run_start", "turn_start", "tool_execution_start", "tool_execution_end", "turn_end",
                           "message_end", "run_end"};
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
        char needle[64];
        snprintf(needle, sizeof needle, "\"type\":\"%s\"", types[t]);
        size_t in_single = event_log_count(&single, needle);
        size_t in_bursts = 0;
        for (size_t i = 0; i < bursts.count; i++) {
            for (const char *at = strstr(bursts.events[i], needle); at; at = strstr(at + 1, needle)) in_bursts++;
        }
        CHECK(in_single > 0 && in_bursts == in_single);
        total += in_bursts;
    }
    CHECK(total > bursts.count || bursts.count == single.count); /* some burst carried several, or none needed to */
    CHECK(strstr(bursts.events[0], "[{\"type\":\"run_start\"") == bursts.events[0]);
    const char *last = bursts.events[bursts.count - 1];
    CHECK(strstr(last, "\"type\":\"run_end\"") != NULL);
    CHECK(strstr(strstr(last, "\"type\":\"run_end\""), "\"type\":") == strstr(last, "\"type\":\"run_end\"")); /* last */

    /* run_end alone. */
    event_log end_only;
    event_log_init(&end_only);
    result = run_with_input(agent, "{\"prompt\": \"go\", \"events\": \"run_end\"}", &end_only);
    CHECK(result != NULL && strstr(result, "lookup saw"));
    ferrule_string_free(result);
    CHECK(end_only.count == 1 && strstr(end_only.events[0], "{\"type\":\"run_end\"") == end_only.events[0]);
    CHECK(atomic_load(&end_only.freed) == 1);

    /* A wrong value is refused, naming what is allowed. */
    ferrule_run *run = NULL;
    CHECK_ERROR(ferrule_agent_start(agent, STR("{\"prompt\": \"go\", \"event_bursts\": 1}"), NULL, NULL, NULL, &run),
                FERRULE_ERROR_INVALID_ARG, "bool");
    event_log_destroy(&single);
    event_log_destroy(&bursts);
    event_log_destroy(&end_only);
    ferrule_agent_free(agent);
}

static void a_tool_completes_later_from_another_thread(void) {
    ferrule_tool_spec spec = harness_spec("slow", "", complete_later, NULL, NULL);
    ferrule_agent *agent = harness_agent(
        SCRIPT("{\"tool_calls\": [" CALL("c1", "slow") ", " CALL("c2", "slow") "]}, {\"text\": \"done\"}"), &spec, 1);
    CHECK(agent != NULL);
    event_log log;
    event_log_init(&log);
    char *result = harness_run(agent, &log);
    CHECK(result && strstr(result, "\"status\":\"completed\""));
    CHECK(strstr(result, "late answer"));
    CHECK(!strstr(result, "working")); /* updates never enter the transcript */
    CHECK(event_log_count(&log, "\"type\":\"tool_execution_update\"") == 2);
    ferrule_string_free(result);
    ferrule_agent_free(agent);
    event_log_destroy(&log);
}

static void freeing_the_agent_while_its_run_is_live(void) {
    counter tool_data = {0};
    ferrule_tool_spec spec = harness_spec("lookup", "", complete_now, &tool_data, counter_free);
    ferrule_agent *agent = harness_agent(
        SCRIPT("{\"text\": \"thinking\", \"delay_ms\": 50, \"tool_calls\": [" CALL("c1", "lookup") "]}, {\"text\": \"done\"}"),
        &spec, 1);
    CHECK(agent != NULL);
    ferrule_run *run = NULL;
    CHECK_OK(ferrule_agent_start(agent, STR("{\"prompt\": \"go\"}"), NULL, NULL, NULL, &run));
    ferrule_agent_free(agent); /* the run keeps what it needs */
    char *result = harness_wait(run);
    CHECK(result && strstr(result, "\"status\":\"completed\"") && strstr(result, "lookup saw n=1"));
    ferrule_string_free(result);
    ferrule_run_free(run);
    CHECK(atomic_load(&tool_data.frees) == 1);
}

/* Answers, then goes on for a while before it returns. */
typedef struct {
    atomic_int returned;
    atomic_int frees;
} lingering;

static void complete_then_linger(void *user_data, ferrule_tool_call *call) {
    CHECK_OK(ferrule_tool_call_complete(call, STR("\"answered\"")));
    harness_sleep_ms(100);
    atomic_fetch_add(&((lingering *)user_data)->returned, 1);
}

static void lingering_free(void *user_data) {
    atomic_fetch_add(&((lingering *)user_data)->frees, 1);
}

/* An agent whose one call goes to `execute`, a lingering tool with `options`. */
static ferrule_agent *lingering_agent(const char *options, ferrule_tool_fn execute, lingering *tool_data) {
    ferrule_tool_spec spec = harness_spec("lookup", options, execute, tool_data, lingering_free);
    return harness_agent(SCRIPT("{\"tool_calls\": [" CALL("c1", "lookup") "]}, {\"text\": \"done\"}"), &spec, 1);
}

/* A wait returns only once the callbacks that answered the run's calls have
 * returned: freeing the agent then frees the tool's data at once, on this thread. */
static void a_tool_that_answers_and_goes_on_holds_the_runs_end(void) {
    lingering tool_data = {0};
    ferrule_agent *agent = lingering_agent("", complete_then_linger, &tool_data);
    CHECK(agent != NULL);
    char *result = harness_run(agent, NULL);
    CHECK(result && strstr(result, "\"status\":\"completed\"") && strstr(result, "answered"));
    CHECK(atomic_load(&tool_data.returned) == 1);
    ferrule_string_free(result);
    CHECK(atomic_load(&tool_data.frees) == 0);
    ferrule_agent_free(agent);
    CHECK(atomic_load(&tool_data.frees) == 1);
}

/* Answers only after its call timed out, then goes on for a while. */
static void complete_late_then_linger(void *user_data, ferrule_tool_call *call) {
    harness_sleep_ms(150);
    ferrule_error_free(ferrule_tool_call_complete(call, STR("\"too late\"")));
    harness_sleep_ms(1000);
    atomic_fetch_add(&((lingering *)user_data)->returned, 1);
}

/* A callback that answers after the run stopped waiting for it does not hold
 * up the run's end. */
static void a_late_answer_does_not_hold_the_runs_end(void) {
    static lingering tool_data;
    ferrule_agent *agent = lingering_agent("{\"timeout_ms\": 50}", complete_late_then_linger, &tool_data);
    CHECK(agent != NULL);
    char *result = harness_run(agent, NULL);
    CHECK(result && strstr(result, "\"status\":\"completed\"") && strstr(result, "timed out"));
    CHECK(atomic_load(&tool_data.returned) == 0);
    ferrule_string_free(result);
    ferrule_agent_free(agent);
    CHECK(atomic_load(&tool_data.frees) == 0); /* the callback still runs: it holds the data */
    CHECK(wait_for_count(&tool_data.frees, 1, 10000) && atomic_load(&tool_data.returned) == 1);
}

typedef struct {
    event_log log;
    _Atomic(ferrule_run *) run;
    atomic_int wait_code;
} reentrant;

static ferrule_run *reentrant_run(reentrant *state) {
    ferrule_run *run;
    while ((run = atomic_load(&state->run)) == NULL) harness_sleep_ms(1);
    return run;
}

static void cancel_on_tool_start(void *user_data, const char *json, size_t len) {
    reentrant *state = user_data;
    event_log_on_event(&state->log, json, len);
    if (strstr(json, "\"type\":\"tool_execution_start\"")) ferrule_run_cancel(reentrant_run(state));
}

static void cancelling_from_inside_an_event_callback(void) {
    atomic_store(&watchers_done, 0);
    atomic_store(&watchers_started, 0);
    ferrule_tool_spec spec = harness_spec("stuck", "", never_completes, NULL, NULL);
    ferrule_agent *agent = harness_agent(SCRIPT("{\"tool_calls\": [" CALL("c1", "stuck") "]}, {\"text\": \"never\"}"), &spec, 1);
    CHECK(agent != NULL);
    reentrant state = {0};
    event_log_init(&state.log);
    ferrule_run *run = NULL;
    CHECK_OK(ferrule_agent_start(agent, STR("{\"prompt\": \"go\"}"), cancel_on_tool_start, &state, event_log_free, &run));
    atomic_store(&state.run, run);
    char *result = harness_wait(run);
    CHECK(result && strstr(result, "\"status\":\"cancelled\""));
    CHECK(event_log_count(&state.log, "\"type\":\"run_end\"") == 1);
    CHECK(event_log_count(&state.log, "\"type\":\"tool_execution_end\"") == 1);
    CHECK(wait_for_watchers(1));
    ferrule_string_free(result);
    ferrule_run_free(run);
    ferrule_agent_free(agent);
    event_log_destroy(&state.log);
}

static void wait_on_run_start(void *user_data, const char *json, size_t len) {
    reentrant *state = user_data;
    event_log_on_event(&state->log, json, len);
    if (strstr(json, "\"type\":\"run_start\"")) {
        char *out = NULL;
        size_t out_len = 0;
        ferrule_error *err = ferrule_run_wait(reentrant_run(state), &out, &out_len);
        atomic_store(&state->wait_code, err ? (int)ferrule_error_code(err) : 0);
        ferrule_error_free(err);
        ferrule_string_free(out);
    }
}

static void waiting_inside_the_runs_own_callback_would_deadlock(void) {
    ferrule_agent *agent = harness_agent(SCRIPT("{\"text\": \"hi\"}"), NULL, 0);
    CHECK(agent != NULL);
    reentrant state = {0};
    event_log_init(&state.log);
    ferrule_run *run = NULL;
    CHECK_OK(ferrule_agent_start(agent, STR("{\"prompt\": \"go\"}"), wait_on_run_start, &state, event_log_free, &run));
    atomic_store(&state.run, run);
    char *result = harness_wait(run);
    CHECK(result && strstr(result, "\"status\":\"completed\""));
    CHECK(atomic_load(&state.wait_code) == FERRULE_ERROR_WOULD_DEADLOCK);
    ferrule_string_free(result);
    ferrule_run_free(run);
    ferrule_agent_free(agent);
    event_log_destroy(&state.log);
}

static _Atomic(ferrule_run *) tool_wait_run;
static atomic_int tool_wait_code;

static void wait_inside_tool(void *user_data, ferrule_tool_call *call) {
    (void)user_data;
    ferrule_run *run;
    while ((run = atomic_load(&tool_wait_run)) == NULL) harness_sleep_ms(1);
    char *out = NULL;
    size_t len = 0;
    ferrule_error *err = ferrule_run_wait(run, &out, &len);
    atomic_store(&tool_wait_code, err ? (int)ferrule_error_code(err) : 0);
    ferrule_error_free(err);
    ferrule_error_free(ferrule_tool_call_complete(call, STR("\"ok\"")));
}

static void waiting_inside_the_runs_own_tool_would_deadlock(void) {
    ferrule_tool_spec spec = harness_spec("waiter", "", wait_inside_tool, NULL, NULL);
    ferrule_agent *agent = harness_agent(SCRIPT("{\"tool_calls\": [" CALL("c1", "waiter") "]}, {\"text\": \"done\"}"), &spec, 1);
    CHECK(agent != NULL);
    ferrule_run *run = NULL;
    CHECK_OK(ferrule_agent_start(agent, STR("{\"prompt\": \"go\"}"), NULL, NULL, NULL, &run));
    atomic_store(&tool_wait_run, run);
    char *result = harness_wait(run);
    CHECK(result && strstr(result, "\"status\":\"completed\""));
    CHECK(atomic_load(&tool_wait_code) == FERRULE_ERROR_WOULD_DEADLOCK);
    ferrule_string_free(result);
    ferrule_run_free(run);
    ferrule_agent_free(agent);
}

static void a_tool_that_never_completes_times_out(void) {
    atomic_store(&watchers_done, 0);
    atomic_store(&watchers_started, 0);
    ferrule_tool_spec spec = harness_spec("stuck", "{\"timeout_ms\": 50}", never_completes, NULL, NULL);
    ferrule_agent *agent = harness_agent(SCRIPT("{\"tool_calls\": [" CALL("c1", "stuck") "]}, {\"text\": \"moved on\"}"), &spec, 1);
    CHECK(agent != NULL);
    char *result = harness_run(agent, NULL);
    CHECK(result && strstr(result, "\"status\":\"completed\""));
    CHECK(strstr(result, "timed out after 50 ms"));
    CHECK(!strstr(result, "finished after all")); /* the late completion is discarded */
    CHECK(wait_for_watchers(1));
    ferrule_string_free(result);
    ferrule_agent_free(agent);
}

static void freeing_the_last_run_handle_cancels_the_run(void) {
    ferrule_agent *agent = harness_agent(SCRIPT("{\"text\": \"slow\", \"delay_ms\": 60000}"), NULL, 0);
    CHECK(agent != NULL);
    event_log log;
    event_log_init(&log);
    ferrule_run *run = NULL;
    CHECK_OK(ferrule_agent_start(agent, STR("{\"prompt\": \"go\"}"), event_log_on_event, &log, event_log_free, &run));
    ferrule_run_free(run);
    CHECK(event_log_wait_freed(&log, 5000));
    CHECK(event_log_count(&log, "\"status\":\"cancelled\"") == 1);
    ferrule_agent_free(agent);
    event_log_destroy(&log);
}

static atomic_int double_complete_code, double_complete_done;

static void complete_twice(void *user_data, ferrule_tool_call *call) {
    (void)user_data;
    ferrule_error_free(ferrule_tool_call_complete(call, STR("\"first\"")));
    ferrule_error *err = ferrule_tool_call_complete(call, STR("\"second\""));
    atomic_store(&double_complete_code, err ? (int)ferrule_error_code(err) : 0);
    ferrule_error_free(err);
    err = ferrule_tool_call_update(call, STR("\"after\""));
    if (err == NULL || ferrule_error_code(err) != FERRULE_ERROR_ALREADY_COMPLETED) atomic_store(&double_complete_code, -1);
    ferrule_error_free(err);
    atomic_store(&double_complete_done, 1);
}

static void completing_twice_inside_the_callback_is_refused(void) {
    ferrule_tool_spec spec = harness_spec("twice", "", complete_twice, NULL, NULL);
    ferrule_agent *agent = harness_agent(SCRIPT("{\"tool_calls\": [" CALL("c1", "twice") "]}, {\"text\": \"done\"}"), &spec, 1);
    CHECK(agent != NULL);
    char *result = harness_run(agent, NULL);
    CHECK(result && strstr(result, "first") && !strstr(result, "second"));
    /* The run goes on once the call is completed, maybe before the callback returns. */
    while (!atomic_load(&double_complete_done)) harness_sleep_ms(1);
    CHECK(atomic_load(&double_complete_code) == FERRULE_ERROR_ALREADY_COMPLETED);
    ferrule_string_free(result);
    ferrule_agent_free(agent);
}

static atomic_int invalid_result_code;

static atomic_int bad_utf8_code, bad_update_code, bad_failure_code;

static int code_of(ferrule_error *err) {
    int code = err ? (int)ferrule_error_code(err) : 0;
    ferrule_error_free(err);
    return code;
}

/* Callbacks that have stored their code: the run goes on once a call is
 * completed, maybe before its callback has returned. */
static atomic_int codes_noted;

static void note(atomic_int *slot, int code) {
    atomic_store(slot, code);
    atomic_fetch_add(&codes_noted, 1);
}

static void complete_with_bad_json(void *user_data, ferrule_tool_call *call) {
    (void)user_data;
    note(&invalid_result_code, code_of(ferrule_tool_call_complete(call, STR("{\"content\": "))));
}

static void complete_with_bad_utf8(void *user_data, ferrule_tool_call *call) {
    (void)user_data;
    note(&bad_utf8_code, code_of(ferrule_tool_call_complete(call, STR("\"\xc3\x28\""))));
}

static void update_with_bad_json(void *user_data, ferrule_tool_call *call) {
    (void)user_data;
    note(&bad_update_code, code_of(ferrule_tool_call_update(call, STR("{\"content\": 1,"))));
    /* The invalid update consumed the handle: the call is over. */
}

static atomic_int unknown_field_code, null_json_code;

static void complete_with_unknown_field(void *user_data, ferrule_tool_call *call) {
    (void)user_data;
    ferrule_error *err = ferrule_tool_call_complete(call, STR("{\"content\": \"x\", \"colour\": \"red\"}"));
    int named = err && strstr(ferrule_error_message(err).ptr, "colour") != NULL;
    note(&unknown_field_code, named ? code_of(err) : -1);
    if (!named) ferrule_error_free(err);
}

static void complete_with_null_json(void *user_data, ferrule_tool_call *call) {
    (void)user_data;
    note(&null_json_code, code_of(ferrule_tool_call_complete(call, NULL, 5)));
}

static void fail_with_bad_utf8(void *user_data, ferrule_tool_call *call) {
    (void)user_data;
    note(&bad_failure_code, code_of(ferrule_tool_call_fail(call, STR("\xff broken"))));
}

static void fail_with_message(void *user_data, ferrule_tool_call *call) {
    (void)user_data;
    ferrule_error_free(ferrule_tool_call_fail(call, STR("the incident store is unreachable")));
}

static void invalid_results_and_failures_reach_the_model_as_errors(void) {
    ferrule_tool_spec specs[7] = {
        harness_spec("bad", "", complete_with_bad_json, NULL, NULL),
        harness_spec("failing", "", fail_with_message, NULL, NULL),
        harness_spec("bad_utf8", "", complete_with_bad_utf8, NULL, NULL),
        harness_spec("bad_update", "", update_with_bad_json, NULL, NULL),
        harness_spec("bad_failure", "", fail_with_bad_utf8, NULL, NULL),
        harness_spec("unknown_field", "", complete_with_unknown_field, NULL, NULL),
        harness_spec("null_json", "", complete_with_null_json, NULL, NULL),
    };
    ferrule_agent *agent = harness_agent(
        SCRIPT("{\"tool_calls\": [" CALL("c1", "bad") ", " CALL("c2", "failing") ", " CALL("c3", "bad_utf8") ", "
               CALL("c4", "bad_update") ", " CALL("c5", "bad_failure") ", " CALL("c6", "unknown_field") ", "
               CALL("c7", "null_json") "]}, {\"text\": \"done\"}"), specs, 7);
    CHECK(agent != NULL);
    char *result = harness_run(agent, NULL);
    CHECK(result && strstr(result, "\"status\":\"completed\""));
    while (atomic_load(&codes_noted) < 6) harness_sleep_ms(1);
    CHECK(atomic_load(&invalid_result_code) == FERRULE_ERROR_INVALID_JSON);
    CHECK(atomic_load(&bad_utf8_code) == FERRULE_ERROR_INVALID_UTF8);
    CHECK(atomic_load(&bad_update_code) == FERRULE_ERROR_INVALID_JSON);
    CHECK(atomic_load(&bad_failure_code) == FERRULE_ERROR_INVALID_UTF8);
    CHECK(atomic_load(&unknown_field_code) == FERRULE_ERROR_INVALID_ARG);
    CHECK(atomic_load(&null_json_code) == FERRULE_ERROR_NULL_ARG);
    CHECK(strstr(result, "returned an invalid result"));
    CHECK(strstr(result, "invalid update"));
    CHECK(strstr(result, "not valid UTF-8"));
    CHECK(strstr(result, "the incident store is unreachable\"}],\"is_error\":true"));
    ferrule_string_free(result);
    ferrule_agent_free(agent);
}

static void a_panic_inside_a_run_ends_it_failed(void) {
    ferrule_agent *agent = harness_agent(SCRIPT("{\"panic\": \"model blew up\"}"), NULL, 0);
    CHECK(agent != NULL);
    event_log log;
    event_log_init(&log);
    int captured = capture_stderr_begin();
    char *result = harness_run(agent, &log);
    char *printed = capture_stderr_end(captured);
    CHECK(printed && printed[0] == '\0');
    free(printed);
    CHECK(result && strstr(result, "\"status\":\"failed\"") && strstr(result, "\"code\":\"PANIC\""));
    CHECK(strstr(result, "model blew up") && strstr(result, "(at src/"));
    CHECK(event_log_count(&log, "\"type\":\"run_end\"") == 1);
    ferrule_string_free(result);
    ferrule_agent_free(agent);
    event_log_destroy(&log);
}

static void many_runs_of_one_agent_at_once(void) {
    enum { RUNS = 64 };
    counter tool_data = {0};
    ferrule_tool_spec spec = harness_spec("slow", "", complete_later, &tool_data, counter_free);
    ferrule_agent *agent = harness_agent(SCRIPT("{\"tool_calls\": [" CALL("c1", "slow") "]}, {\"text\": \"done\"}"), &spec, 1);
    CHECK(agent != NULL);
    ferrule_run *runs[RUNS];
    for (int i = 0; i < RUNS; i++) CHECK_OK(ferrule_agent_start(agent, STR("{\"prompt\": \"go\"}"), NULL, NULL, NULL, &runs[i]));
    ferrule_agent_free(agent);
    int completed = 0;
    for (int i = 0; i < RUNS; i++) {
        char *result = harness_wait(runs[i]);
        completed += result && strstr(result, "\"status\":\"completed\"") && strstr(result, "late answer");
        ferrule_string_free(result);
        ferrule_run_free(runs[i]);
    }
    CHECK(completed == RUNS);
    CHECK(atomic_load(&tool_data.frees) == 1);
}

static void builtin_tools_in_a_full_run(void) {
    char dir[] = "/tmp/ferrule-c-builtins-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char config[2048];
    snprintf(config, sizeof config,
             "{\"model\": {\"provider\": \"scripted\", \"script\": ["
             "{\"tool_calls\": [{\"id\": \"w\", \"name\": \"write\", \"arguments\": {\"path\": \"notes/a.txt\", \"content\": \"alpha\\nbeta\\n\"}}]},"
             "{\"tool_calls\": [{\"id\": \"e\", \"name\": \"edit\", \"arguments\": {\"path\": \"notes/a.txt\", \"edits\": [{\"oldText\": \"beta\", \"newText\": \"gamma\"}]}}]},"
             "{\"tool_calls\": [{\"id\": \"r\", \"name\": \"read\", \"arguments\": {\"path\": \"notes/a.txt\"}},"
             "                  {\"id\": \"b\", \"name\": \"bash\", \"arguments\": {\"command\": \"wc -l < notes/a.txt\"}}]},"
             "{\"text\": \"done\"}]},"
             " \"builtin_tools\": {\"working_directory\": \"%s\"}}",
             dir);
    ferrule_agent *agent = harness_agent(config, NULL, 0);
    CHECK(agent != NULL);
    char *result = harness_run(agent, NULL);
    CHECK(result && strstr(result, "\"status\":\"completed\""));
    CHECK(strstr(result, "\"text\":\"alpha\\ngamma\""));  /* read saw the edit */
    CHECK(strstr(result, "2\\n[exit code 0]"));           /* bash counted the lines */
    char path[256];
    snprintf(path, sizeof path, "%s/notes/a.txt", dir);
    FILE *file = fopen(path, "r");
    CHECK(file != NULL);
    char content[64] = {0};
    size_t got = fread(content, 1, sizeof content - 1, file);
    fclose(file);
    CHECK(got == 12 && strcmp(content, "alpha\ngamma\n") == 0);
    remove(path);
    snprintf(path, sizeof path, "%s/notes", dir);
    rmdir(path);
    rmdir(dir);
    ferrule_string_free(result);
    ferrule_agent_free(agent);
}

int main(int argc, char **argv) {
    static const harness_case cases[] = {
        {"a_full_run_with_a_tool_that_answers_at_once", a_full_run_with_a_tool_that_answers_at_once},
        {"a_tool_completes_later_from_another_thread", a_tool_completes_later_from_another_thread},
        {"events_in_bursts_or_run_end_alone", events_in_bursts_or_run_end_alone},
        {"freeing_the_agent_while_its_run_is_live", freeing_the_agent_while_its_run_is_live},
        {"a_tool_that_answers_and_goes_on_holds_the_runs_end", a_tool_that_answers_and_goes_on_holds_the_runs_end},
        {"a_late_answer_does_not_hold_the_runs_end", a_late_answer_does_not_hold_the_runs_end},
        {"cancelling_from_inside_an_event_callback", cancelling_from_inside_an_event_callback},
        {"waiting_inside_the_runs_own_callback_would_deadlock", waiting_inside_the_runs_own_callback_would_deadlock},
        {"waiting_inside_the_runs_own_tool_would_deadlock", waiting_inside_the_runs_own_tool_would_deadlock},
        {"a_tool_that_never_completes_times_out", a_tool_that_never_completes_times_out},
        {"freeing_the_last_run_handle_cancels_the_run", freeing_the_last_run_handle_cancels_the_run},
        {"completing_twice_inside_the_callback_is_refused", completing_twice_inside_the_callback_is_refused},
        {"invalid_results_and_failures_reach_the_model_as_errors", invalid_results_and_failures_reach_the_model_as_errors},
        {"a_panic_inside_a_run_ends_it_failed", a_panic_inside_a_run_ends_it_failed},
        {"many_runs_of_one_agent_at_once", many_runs_of_one_agent_at_once},
        {"builtin_tools_in_a_full_run", builtin_tools_in_a_full_run},
    };
    return harness_main(cases, sizeof cases / sizeof cases[0], argc, argv);
}
