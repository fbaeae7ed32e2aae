/*
 * Races on one tool call, repeated thousands of times under AddressSanitizer:
 * updates against completion, late and stale handles, cancel handlers against
 * completion, timeout and run cancellation. A use of freed memory fails the
 * run; every outcome must also be one the header allows.
 */
#include <unistd.h>

#include "harness.h"

#define ROUNDS 400

static int run_to_end(ferrule_agent *agent, const char *status) {
    ferrule_run *run = NULL;
    if (!harness_expect_ok(ferrule_agent_start(agent, STR("{\"prompt\": \"go\"}"), NULL, NULL, NULL, &run), __FILE__,
                           __LINE__))
        return 0;
    char *result = harness_wait(run);
    char needle[64];
    snprintf(needle, sizeof needle, "\"status\":\"%s\"", status);
    int ok = result && strstr(result, needle) != NULL;
    ferrule_string_free(result);
    ferrule_run_free(run);
    return ok;
}

/* ---- update against complete ------------------------------------------------------- */

static atomic_int unexpected_update_codes, completes_done;

static void *update_until_refused(void *arg) {
    ferrule_tool_call *call = arg;
    for (;;) {
        ferrule_error *err = ferrule_tool_call_update(call, STR("\"tick\""));
        uint32_t code = ferrule_error_code(err);
        ferrule_error_free(err);
        if (code == FERRULE_ERROR_ALREADY_COMPLETED) return NULL;
        if (code != 0) {
            atomic_fetch_add(&unexpected_update_codes, 1);
            return NULL;
        }
    }
}

static void *complete_soon(void *arg) {
    ferrule_tool_call *call = arg;
    usleep((useconds_t)(rand() % 50));
    ferrule_error_free(ferrule_tool_call_complete(call, STR("\"done\"")));
    atomic_fetch_add(&completes_done, 1);
    return NULL;
}

static void race_update_and_complete(void *user_data, ferrule_tool_call *call) {
    (void)user_data;
    pthread_t updater, completer;
    pthread_create(&updater, NULL, update_until_refused, call);
    pthread_create(&completer, NULL, complete_soon, call);
    pthread_detach(updater);
    pthread_detach(completer);
}

/* The number after `key` (`"call_id":"c` for call c3) in `json`, or -1. */
static int call_number(const char *json, const char *key) {
    const char *at = strstr(json, key);
    return at ? atoi(at + strlen(key)) : -1;
}

/* Whether every update in `log` falls between its call's start and end (the
 * batch's call ids come back each round), and run_end is the last event. */
static int updates_fall_inside_their_calls(event_log *log, int calls) {
    int open[64] = {0};
    if (calls > 64 || log->count == 0 || !strstr(log->events[log->count - 1], "\"type\":\"run_end\"")) return 0;
    for (size_t i = 0; i < log->count; i++) {
        const char *event = log->events[i];
        int call;
        if (strstr(event, "\"type\":\"tool_execution_start\"")) {
            call = call_number(event, "\"id\":\"c");
            if (call < 0 || call >= calls || open[call]) return 0;
            open[call] = 1;
        } else if (strstr(event, "\"type\":\"tool_execution_update\"")) {
            call = call_number(event, "\"call_id\":\"c");
            if (call < 0 || call >= calls || !open[call]) return 0;
        } else if (strstr(event, "\"type\":\"tool_execution_end\"")) {
            call = call_number(event, "\"call_id\":\"c");
            if (call < 0 || call >= calls || !open[call]) return 0;
            open[call] = 0;
        }
    }
    return 1;
}

static void an_update_racing_the_completion_never_touches_freed_memory(void) {
    ferrule_tool_spec spec = harness_spec("racy", "{\"nonblocking\": true}", race_update_and_complete, NULL, NULL);
    ferrule_agent *agent = harness_batch_agent(&spec, 4, ROUNDS, "");
    CHECK(agent != NULL);
    event_log log;
    event_log_init(&log);
    ferrule_run *run = NULL;
    CHECK_OK(ferrule_agent_start(agent, STR("{\"prompt\": \"go\"}"), event_log_on_event, &log, event_log_free, &run));
    char *result = harness_wait(run);
    CHECK(result && strstr(result, "\"status\":\"completed\""));
    /* Delivery racing the run's end: the sink was released before the wait returned. */
    CHECK(atomic_load(&log.freed) == 1);
    ferrule_string_free(result);
    ferrule_run_free(run);
    CHECK(wait_for_count(&completes_done, 4 * ROUNDS, 60000));
    CHECK(atomic_load(&unexpected_update_codes) == 0);
    CHECK(event_log_count(&log, "\"type\":\"tool_execution_update\"") > 0);
    CHECK(updates_fall_inside_their_calls(&log, 4));
    ferrule_agent_free(agent);
    event_log_destroy(&log);
}

/* ---- stale handles ----------------------------------------------------------------- */

enum { KEPT = 64 };
static ferrule_tool_call *kept[KEPT];
static atomic_int kept_count;

static void keep_handle_and_complete(void *user_data, ferrule_tool_call *call) {
    (void)user_data;
    int slot = atomic_fetch_add(&kept_count, 1);
    if (slot < KEPT) kept[slot] = call;
    ferrule_error_free(ferrule_tool_call_complete(call, STR("\"done\"")));
}

static int stale_everywhere(ferrule_tool_call *call) {
    int ok = 1;
    ferrule_error *err = ferrule_tool_call_update(call, STR("\"late\""));
    ok &= ferrule_error_code(err) == FERRULE_ERROR_ALREADY_COMPLETED;
    ferrule_error_free(err);
    err = ferrule_tool_call_complete(call, STR("\"late\""));
    ok &= ferrule_error_code(err) == FERRULE_ERROR_ALREADY_COMPLETED;
    ferrule_error_free(err);
    err = ferrule_tool_call_fail(call, STR("late"));
    ok &= ferrule_error_code(err) == FERRULE_ERROR_ALREADY_COMPLETED;
    ferrule_error_free(err);
    counter unused = {0};
    err = ferrule_tool_call_on_cancel(call, counter_free, &unused, counter_free);
    ok &= ferrule_error_code(err) == FERRULE_ERROR_ALREADY_COMPLETED && atomic_load(&unused.frees) == 0;
    ferrule_error_free(err);
    ok &= ferrule_tool_call_is_cancelled(call);
    ok &= ferrule_tool_call_id(call).len == 0 && ferrule_tool_call_id(call).ptr[0] == '\0';
    ok &= ferrule_tool_call_name(call).len == 0;
    ok &= ferrule_tool_call_arguments(call).len == 0;
    ferrule_str id = {"x", 1}, name = {"x", 1}, arguments = {"x", 1};
    ferrule_tool_call_strings(call, &id, &name, &arguments);
    ok &= id.len == 0 && name.len == 0 && arguments.len == 0 && arguments.ptr[0] == '\0';
    return ok;
}

static void a_completed_calls_handle_is_stale_everywhere_however_late(void) {
    atomic_store(&kept_count, 0);
    ferrule_tool_spec spec = harness_spec("keeper", "", keep_handle_and_complete, NULL, NULL);
    ferrule_agent *agent = harness_batch_agent(&spec, 8, 8, "");
    CHECK(agent != NULL);
    CHECK(run_to_end(agent, "completed"));
    CHECK(atomic_load(&kept_count) == KEPT);
    for (int i = 0; i < KEPT; i++) CHECK(stale_everywhere(kept[i]));

    /* Thousands of calls later their slots have been reused: still stale. */
    ferrule_tool_spec churn_spec = harness_spec("churn", "{\"nonblocking\": true}", keep_handle_and_complete, NULL, NULL);
    ferrule_agent *churn = harness_batch_agent(&churn_spec, 16, 300, "");
    CHECK(churn != NULL);
    CHECK(run_to_end(churn, "completed"));
    for (int i = 0; i < KEPT; i++) CHECK(stale_everywhere(kept[i]));

    /* Handles that were never issued are refused the same way. */
    CHECK(stale_everywhere((ferrule_tool_call *)(uintptr_t)0x1));
    CHECK(stale_everywhere((ferrule_tool_call *)(uintptr_t)0xdeadbeef));
    ferrule_agent_free(agent);
    ferrule_agent_free(churn);
}

/* ---- cancel handlers against completion, timeout and cancellation ----------------- */

typedef struct {
    ferrule_tool_call *call;
    atomic_int handled;
    atomic_int freed;
} handler_count;

enum { CANCEL_CALLS = 8, CANCEL_ROUNDS = 150 };
static handler_count counts[CANCEL_CALLS * CANCEL_ROUNDS];
static atomic_int next_count, finished_calls;

static void count_handler(void *user_data) {
    handler_count *count = user_data;
    atomic_fetch_add(&count->handled, 1);
}

static void count_free(void *user_data) {
    atomic_fetch_add(&((handler_count *)user_data)->freed, 1);
}

/* Waits for the first `calls` handlers' frees, then checks the counts. */
static int handlers_ran_at_most_once_and_were_freed_once(int calls) {
    int ok = 1;
    for (int i = 0; i < calls; i++) {
        wait_for_count(&counts[i].freed, 1, 5000);
        ok &= atomic_load(&counts[i].freed) == 1 && atomic_load(&counts[i].handled) <= 1;
    }
    return ok;
}

static void *complete_racing_the_timeout(void *arg) {
    handler_count *count = arg;
    usleep((useconds_t)(rand() % 2000));
    ferrule_error_free(ferrule_tool_call_complete(count->call, STR("\"raced\"")));
    atomic_fetch_add(&finished_calls, 1);
    return NULL;
}

static void reset_counts(void) {
    memset(counts, 0, sizeof counts);
    atomic_store(&next_count, 0);
    atomic_store(&finished_calls, 0);
}

/* Registers a counting cancel handler on `call`. */
static handler_count *count_cancellation(ferrule_tool_call *call) {
    handler_count *count = &counts[atomic_fetch_add(&next_count, 1)];
    count->call = call;
    ferrule_error_free(ferrule_tool_call_on_cancel(call, count_handler, count, count_free));
    return count;
}

/* Completes the counted call from a thread of its own, at a random moment. */
static void complete_soon_elsewhere(handler_count *count) {
    pthread_t thread;
    pthread_create(&thread, NULL, complete_racing_the_timeout, count);
    pthread_detach(thread);
}

static void register_then_race(void *user_data, ferrule_tool_call *call) {
    (void)user_data;
    complete_soon_elsewhere(count_cancellation(call));
}

static void cancel_handlers_run_at_most_once_and_free_exactly_once(void) {
    reset_counts();
    /* Completions land around the 1 ms timeout: some calls complete, some time
     * out first; each handler may run (once) or not, and is freed once. */
    ferrule_tool_spec spec = harness_spec("racy", "{\"nonblocking\": true}", register_then_race, NULL, NULL);
    ferrule_agent *agent = harness_batch_agent(&spec, CANCEL_CALLS, CANCEL_ROUNDS, ", \"tool_timeout_ms\": 1");
    CHECK(agent != NULL);
    CHECK(run_to_end(agent, "completed"));
    CHECK(wait_for_count(&finished_calls, CANCEL_CALLS * CANCEL_ROUNDS, 60000));
    CHECK(handlers_ran_at_most_once_and_were_freed_once(CANCEL_CALLS * CANCEL_ROUNDS));
    ferrule_agent_free(agent);
}

static _Atomic(ferrule_run *) cancelled_run;

static void register_and_cancel_the_run(void *user_data, ferrule_tool_call *call) {
    (void)user_data;
    handler_count *count = count_cancellation(call);
    ferrule_run *run;
    while ((run = atomic_load(&cancelled_run)) == NULL) usleep(100);
    if (rand() % 2) ferrule_run_cancel(run);
    complete_soon_elsewhere(count);
}

static void cancelling_runs_while_handlers_register_and_calls_complete(void) {
    reset_counts();
    ferrule_tool_spec spec = harness_spec("racy", "", register_and_cancel_the_run, NULL, NULL);
    ferrule_agent *agent = harness_batch_agent(&spec, CANCEL_CALLS, 1, "");
    CHECK(agent != NULL);
    int started = 0;
    for (int i = 0; i < CANCEL_ROUNDS; i++) {
        ferrule_run *run = NULL;
        atomic_store(&cancelled_run, NULL);
        int before = atomic_load(&next_count);
        CHECK_OK(ferrule_agent_start(agent, STR("{\"prompt\": \"go\"}"), NULL, NULL, NULL, &run));
        atomic_store(&cancelled_run, run);
        char *result = harness_wait(run);
        CHECK(result && (strstr(result, "\"status\":\"cancelled\"") || strstr(result, "\"status\":\"completed\"")));
        ferrule_string_free(result);
        /* Calls of a cancelled run that had no thread yet never reach the host. */
        while (atomic_load(&finished_calls) < atomic_load(&next_count)) usleep(100);
        started += atomic_load(&next_count) - before;
        ferrule_run_free(run);
    }
    CHECK(handlers_ran_at_most_once_and_were_freed_once(started));
    ferrule_agent_free(agent);
}

int main(int argc, char **argv) {
    srand(7);
    static const harness_case cases[] = {
        {"an_update_racing_the_completion_never_touches_freed_memory",
         an_update_racing_the_completion_never_touches_freed_memory},
        {"a_completed_calls_handle_is_stale_everywhere_however_late", a_completed_calls_handle_is_stale_everywhere_however_late},
        {"cancel_handlers_run_at_most_once_and_free_exactly_once", cancel_handlers_run_at_most_once_and_free_exactly_once},
        {"cancelling_runs_while_handlers_register_and_calls_complete",
         cancelling_runs_while_handlers_register_and_calls_complete},
    };
    return harness_main(cases, sizeof cases / sizeof cases[0], argc, argv);
}
