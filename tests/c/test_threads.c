/*
 * Which thread runs what, and what that rules out: tool callbacks that block
 * never hold up event delivery or other runs, updates are never lost, waits that
 * could never end are refused, user data is freed in the right order and place,
 * nonblocking tools run inline, and cancel handlers run once.
 *
 * No case has a time limit of its own: a case that deadlocks hangs until ctest's
 * timeout fails it.
 */
#include <unistd.h>

#include "harness.h"

#define SCRIPT(turns) "{\"model\": {\"provider\": \"scripted\", \"script\": [" turns "]}}"
#define CALL(id, name) "{\"id\": \"" id "\", \"name\": \"" name "\", \"arguments\": {}}"
#define HANG_GUARD_MS 120000

static ferrule_run *start(ferrule_agent *agent, event_log *log) {
    ferrule_run *run = NULL;
    ferrule_error *err = log ? ferrule_agent_start(agent, STR("{\"prompt\": \"go\"}"), event_log_on_event, log,
                                                   event_log_free, &run)
                             : ferrule_agent_start(agent, STR("{\"prompt\": \"go\"}"), NULL, NULL, NULL, &run);
    if (!harness_expect_ok(err, __FILE__, __LINE__)) return NULL;
    return run;
}

static int completed(char *result) {
    int ok = result && strstr(result, "\"status\":\"completed\"") != NULL;
    ferrule_string_free(result);
    return ok;
}

/* ---- where things run ---------------------------------------------------------- */

static atomic_int seen_blocking_kind, seen_nonblocking_kind, seen_event_kind, seen_event_free_kind;

static void note_blocking(void *user_data, ferrule_tool_call *call) {
    (void)user_data;
    atomic_store(&seen_blocking_kind, thread_kind());
    ferrule_error_free(ferrule_tool_call_complete(call, STR("\"ok\"")));
}

static void note_nonblocking(void *user_data, ferrule_tool_call *call) {
    (void)user_data;
    atomic_store(&seen_nonblocking_kind, thread_kind());
    ferrule_error_free(ferrule_tool_call_complete(call, STR("\"ok\"")));
}

static void note_event(void *user_data, const char *json, size_t len) {
    atomic_store(&seen_event_kind, thread_kind());
    event_log_on_event(user_data, json, len);
}

static void note_event_free(void *user_data) {
    atomic_store(&seen_event_free_kind, thread_kind());
    event_log_free(user_data);
}

static void each_kind_of_host_code_runs_on_its_own_threads(void) {
    ferrule_tool_spec specs[2] = {
        harness_spec("blocking", "", note_blocking, NULL, NULL),
        harness_spec("nonblocking", "{\"nonblocking\": true}", note_nonblocking, NULL, NULL),
    };
    ferrule_agent *agent = harness_agent(
        SCRIPT("{\"tool_calls\": [" CALL("c1", "blocking") ", " CALL("c2", "nonblocking") "]}, {\"text\": \"done\"}"),
        specs, 2);
    CHECK(agent != NULL);
    event_log log;
    event_log_init(&log);
    ferrule_run *run = NULL;
    CHECK_OK(ferrule_agent_start(agent, STR("{\"prompt\": \"go\"}"), note_event, &log, note_event_free, &run));
    CHECK(completed(harness_wait(run)));
    CHECK(atomic_load(&seen_blocking_kind) == 'c');
    CHECK(atomic_load(&seen_nonblocking_kind) == 'r');
    CHECK(atomic_load(&seen_event_kind) == 'e');
    CHECK(atomic_load(&seen_event_free_kind) == 'e');
    CHECK(atomic_load(&log.freed) == 1); /* before the wait returned */
    ferrule_run_free(run);
    ferrule_agent_free(agent);
    event_log_destroy(&log);
}

/* ---- a tool's user data goes after every run of its agent ------------------------ */

typedef struct {
    event_log log;
    atomic_int frees;
    atomic_int free_kind;
    atomic_int run_end_seen_at_free;
} order_state;

static void order_free(void *user_data) {
    order_state *state = user_data;
    atomic_store(&state->free_kind, thread_kind());
    atomic_store(&state->run_end_seen_at_free, (int)event_log_count(&state->log, "\"type\":\"run_end\""));
    atomic_fetch_add(&state->frees, 1);
}

static void order_tool(void *user_data, ferrule_tool_call *call) {
    (void)user_data;
    ferrule_error_free(ferrule_tool_call_complete(call, STR("\"ok\"")));
}

static void a_tools_user_data_goes_after_the_last_runs_end_and_off_the_runtime(void) {
    order_state state = {0};
    event_log_init(&state.log);
    ferrule_tool_spec spec = harness_spec("lookup", "", order_tool, &state, order_free);
    ferrule_agent *agent = harness_agent(
        SCRIPT("{\"text\": \"thinking\", \"delay_ms\": 30, \"tool_calls\": [" CALL("c1", "lookup") "]}, {\"text\": \"done\"}"),
        &spec, 1);
    CHECK(agent != NULL);
    ferrule_run *run = start(agent, &state.log);
    CHECK(run != NULL);
    ferrule_agent_free(agent); /* the run holds the agent now */
    CHECK(atomic_load(&state.frees) == 0);
    CHECK(completed(harness_wait(run)));
    /* The run let go of the agent before the wait returned. */
    CHECK(atomic_load(&state.frees) == 1);
    CHECK(atomic_load(&state.run_end_seen_at_free) == 1);
    CHECK(atomic_load(&state.free_kind) == 'c');
    ferrule_run_free(run);
    CHECK(atomic_load(&state.frees) == 1);
    event_log_destroy(&state.log);
}

/* ---- blocked tools do not hold up anything else ---------------------------------- */

enum { MANY = 600 };

typedef struct {
    latch release;
    atomic_int started;
} blocker;

static void block_until_released(void *user_data, ferrule_tool_call *call) {
    blocker *state = user_data;
    atomic_fetch_add(&state->started, 1);
    latch_wait(&state->release);
    ferrule_error_free(ferrule_tool_call_complete(call, STR("\"released\"")));
}

static void blocked_callbacks_hold_up_neither_their_neighbours_nor_other_runs(void) {
    blocker state = {0};
    latch_init(&state.release);
    ferrule_tool_spec spec = harness_spec("sleepy", "", block_until_released, &state, NULL);
    ferrule_agent *blocked_agent = harness_batch_agent(&spec, MANY, 1, "");
    CHECK(blocked_agent != NULL);
    ferrule_agent *quiet_agent = harness_agent(SCRIPT("{\"text\": \"hi\"}"), NULL, 0);
    CHECK(quiet_agent != NULL);

    ferrule_run *blocked = start(blocked_agent, NULL);
    CHECK(blocked != NULL);
    /* Every call has a thread of its own at once, although none returns. */
    CHECK(wait_for_count(&state.started, MANY, HANG_GUARD_MS));

    /* A run elsewhere gets its events and ends while all of them block. */
    event_log log;
    event_log_init(&log);
    ferrule_run *quiet = start(quiet_agent, &log);
    CHECK(quiet != NULL);
    CHECK(completed(harness_wait(quiet)));
    CHECK(event_log_count(&log, "\"type\":\"run_end\"") == 1);
    ferrule_run_free(quiet);

    latch_open(&state.release);
    char *result = harness_wait(blocked);
    CHECK(result && strstr(result, "\"status\":\"completed\""));
    CHECK(result && strstr(result, "released"));
    ferrule_string_free(result);
    ferrule_run_free(blocked);
    ferrule_agent_free(blocked_agent);
    ferrule_agent_free(quiet_agent);
    event_log_destroy(&log);
    latch_destroy(&state.release);
}

/* ---- callbacks that join threads sending updates --------------------------------- */

enum { UPDATES_PER_CALL = 40 };

static void *send_updates(void *arg) {
    ferrule_tool_call *call = arg;
    for (int i = 0; i < UPDATES_PER_CALL; i++) ferrule_error_free(ferrule_tool_call_update(call, STR("\"step\"")));
    return NULL;
}

static void join_an_updating_thread(void *user_data, ferrule_tool_call *call) {
    (void)user_data;
    pthread_t thread;
    pthread_create(&thread, NULL, send_updates, call);
    pthread_join(thread, NULL);
    ferrule_error_free(ferrule_tool_call_complete(call, STR("\"joined\"")));
}

static void callbacks_joining_threads_that_send_updates_never_deadlock(void) {
    ferrule_tool_spec spec = harness_spec("joiner", "", join_an_updating_thread, NULL, NULL);

    /* 600 calls in one run. */
    ferrule_agent *agent = harness_batch_agent(&spec, MANY, 1, "");
    CHECK(agent != NULL);
    event_log log;
    event_log_init(&log);
    ferrule_run *run = start(agent, &log);
    CHECK(completed(harness_wait(run)));
    CHECK(event_log_count(&log, "\"type\":\"tool_execution_update\"") == (size_t)MANY * UPDATES_PER_CALL);
    ferrule_run_free(run);
    ferrule_agent_free(agent);
    event_log_destroy(&log);

    /* 48 runs of 16 calls. */
    enum { RUNS = 48, CALLS = 16 };
    agent = harness_batch_agent(&spec, CALLS, 1, "");
    CHECK(agent != NULL);
    event_log logs[RUNS];
    ferrule_run *runs[RUNS];
    for (int i = 0; i < RUNS; i++) {
        event_log_init(&logs[i]);
        runs[i] = start(agent, &logs[i]);
        CHECK(runs[i] != NULL);
    }
    int done = 0;
    for (int i = 0; i < RUNS; i++) {
        done += completed(harness_wait(runs[i]));
        done -= event_log_count(&logs[i], "\"type\":\"tool_execution_update\"") != (size_t)CALLS * UPDATES_PER_CALL;
        ferrule_run_free(runs[i]);
        event_log_destroy(&logs[i]);
    }
    CHECK(done == RUNS);
    ferrule_agent_free(agent);
}

/* Static: callbacks of a cancelled run outlive the case that started them. */
static struct {
    latch release;
    atomic_int entered;
    atomic_int finished;
} joiners;

static void *send_updates_until_released(void *arg) {
    ferrule_tool_call *call = arg;
    for (int i = 0; i < UPDATES_PER_CALL; i++) ferrule_error_free(ferrule_tool_call_update(call, STR("\"step\"")));
    latch_wait(&joiners.release);
    return NULL;
}

static void join_until_released(void *user_data, ferrule_tool_call *call) {
    (void)user_data;
    atomic_fetch_add(&joiners.entered, 1);
    pthread_t thread;
    pthread_create(&thread, NULL, send_updates_until_released, call);
    pthread_join(thread, NULL);
    ferrule_error_free(ferrule_tool_call_complete(call, STR("\"late\"")));
    atomic_fetch_add(&joiners.finished, 1);
}

static void cancel_ends_a_run_whose_callbacks_are_blocked(void) {
    latch_init(&joiners.release);
    ferrule_tool_spec spec = harness_spec("joiner", "", join_until_released, NULL, NULL);
    ferrule_agent *agent = harness_batch_agent(&spec, MANY, 1, "");
    CHECK(agent != NULL);
    event_log log;
    event_log_init(&log);
    ferrule_run *run = start(agent, &log);
    CHECK(wait_for_count(&joiners.entered, 1, HANG_GUARD_MS));
    ferrule_run_cancel(run);
    char *result = harness_wait(run);
    CHECK(result && strstr(result, "\"status\":\"cancelled\""));
    CHECK(result && !strstr(result, "\"late\""));
    ferrule_string_free(result);
    CHECK(event_log_count(&log, "\"type\":\"run_end\"") == 1);
    CHECK(event_log_count(&log, "\"type\":\"tool_execution_start\"") ==
          event_log_count(&log, "\"type\":\"tool_execution_end\""));
    ferrule_run_free(run);
    ferrule_agent_free(agent);
    latch_open(&joiners.release);
    /* Calls still waiting for a thread when the run was cancelled never reach
     * the host; the ones that did finish once released. */
    CHECK(wait_for_count(&joiners.finished, atomic_load(&joiners.entered), HANG_GUARD_MS));
    event_log_destroy(&log);
}

/* ---- no update is lost ------------------------------------------------------------ */

enum { BURST = 1000 };

static atomic_int burst_failures;

static void update_a_thousand_times(void *user_data, ferrule_tool_call *call) {
    (void)user_data;
    for (int i = 0; i < BURST; i++) {
        ferrule_error *err = ferrule_tool_call_update(call, STR("{\"content\": \"tick\"}"));
        if (err) atomic_fetch_add(&burst_failures, 1);
        ferrule_error_free(err);
    }
    ferrule_error_free(ferrule_tool_call_complete(call, STR("\"done\"")));
}

/* Slow for its first few events, so the run's event queue fills up. */
static atomic_int slow_events;

static void slow_event(void *user_data, const char *json, size_t len) {
    if (atomic_fetch_add(&slow_events, 1) < 4) harness_sleep_ms(20);
    event_log_on_event(user_data, json, len);
}

/* Runs one call of a tool `execute` with `options`, then a text answer, with
 * events to `on_event` and `log`; whether the run completed. */
static int one_call_completes(const char *options, ferrule_tool_fn execute, ferrule_event_fn on_event, event_log *log) {
    ferrule_tool_spec spec = harness_spec("chatty", options, execute, NULL, NULL);
    ferrule_agent *agent = harness_agent(SCRIPT("{\"tool_calls\": [" CALL("c1", "chatty") "]}, {\"text\": \"done\"}"), &spec, 1);
    ferrule_run *run = NULL;
    int ok = agent && harness_expect_ok(ferrule_agent_start(agent, STR("{\"prompt\": \"go\"}"), on_event, log,
                                                             event_log_free, &run), __FILE__, __LINE__);
    ok = ok && completed(harness_wait(run));
    ferrule_run_free(run);
    ferrule_agent_free(agent);
    return ok;
}

static void every_update_sent_inside_a_callback_is_delivered(void) {
    atomic_store(&burst_failures, 0);
    atomic_store(&slow_events, 0);
    event_log log;
    event_log_init(&log);
    CHECK(one_call_completes("", update_a_thousand_times, slow_event, &log));
    CHECK(atomic_load(&burst_failures) == 0);
    CHECK(event_log_count(&log, "\"type\":\"tool_execution_update\"") == BURST);
    event_log_destroy(&log);
}

/* ---- waits that could never end are refused -------------------------------------- */

static _Atomic(ferrule_run *) waited_run;
static atomic_int wait_code_in_event_free, wait_code_in_tool_free;
static latch agent_freed;

static int wait_code(ferrule_run *run) {
    char *out = NULL;
    size_t len = 0;
    ferrule_error *err = ferrule_run_wait(run, &out, &len);
    int code = err ? (int)ferrule_error_code(err) : 0;
    ferrule_error_free(err);
    ferrule_string_free(out);
    return code;
}

static void wait_in_event_free(void *user_data) {
    (void)user_data;
    ferrule_run *run;
    while ((run = atomic_load(&waited_run)) == NULL) harness_sleep_ms(1);
    atomic_store(&wait_code_in_event_free, wait_code(run));
}

static void wait_in_tool_free(void *user_data) {
    (void)user_data;
    atomic_store(&wait_code_in_tool_free, wait_code(atomic_load(&waited_run)));
}

static void complete_once_the_agent_is_freed(void *user_data, ferrule_tool_call *call) {
    (void)user_data;
    latch_wait(&agent_freed);
    ferrule_error_free(ferrule_tool_call_complete(call, STR("\"ok\"")));
}

static void ignore_event(void *user_data, const char *json, size_t len) {
    (void)user_data;
    (void)json;
    (void)len;
}

static void waiting_inside_free_user_data_would_deadlock(void) {
    latch_init(&agent_freed);
    ferrule_tool_spec spec = harness_spec("lookup", "", complete_once_the_agent_is_freed, NULL, wait_in_tool_free);
    ferrule_agent *agent = harness_agent(SCRIPT("{\"tool_calls\": [" CALL("c1", "lookup") "]}, {\"text\": \"done\"}"), &spec, 1);
    CHECK(agent != NULL);
    ferrule_run *run = NULL;
    CHECK_OK(ferrule_agent_start(agent, STR("{\"prompt\": \"go\"}"), ignore_event, NULL, wait_in_event_free, &run));
    atomic_store(&waited_run, run);
    ferrule_agent_free(agent); /* the run releases the tools' user data */
    latch_open(&agent_freed);
    CHECK(completed(harness_wait(run))); /* other waiters are not wedged */
    CHECK(atomic_load(&wait_code_in_event_free) == FERRULE_ERROR_WOULD_DEADLOCK);
    CHECK(atomic_load(&wait_code_in_tool_free) == FERRULE_ERROR_WOULD_DEADLOCK);
    atomic_store(&waited_run, NULL);
    ferrule_run_free(run);
    latch_destroy(&agent_freed);
}

/* ---- nonblocking tools ------------------------------------------------------------ */

static _Atomic(ferrule_run *) nonblocking_run;
static atomic_int nonblocking_wait_code;

static void *complete_from_host(void *arg) {
    ferrule_tool_call *call = arg;
    ferrule_error_free(ferrule_tool_call_update(call, STR("\"from the host\"")));
    ferrule_error_free(ferrule_tool_call_complete(call, STR("\"host thread\"")));
    return NULL;
}

static void hand_to_a_host_thread(void *user_data, ferrule_tool_call *call) {
    (void)user_data;
    ferrule_run *run;
    while ((run = atomic_load(&nonblocking_run)) == NULL) harness_sleep_ms(1);
    atomic_store(&nonblocking_wait_code, wait_code(run));
    pthread_t thread;
    pthread_create(&thread, NULL, complete_from_host, call);
    pthread_detach(thread);
}

static void nonblocking_tools_complete_inline_or_from_any_thread(void) {
    ferrule_tool_spec specs[2] = {
        harness_spec("inline", "{\"nonblocking\": true}", note_nonblocking, NULL, NULL),
        harness_spec("handed", "{\"nonblocking\": true}", hand_to_a_host_thread, NULL, NULL),
    };
    ferrule_agent *agent = harness_agent(
        SCRIPT("{\"tool_calls\": [" CALL("c1", "inline") ", " CALL("c2", "handed") "]}, {\"text\": \"done\"}"), specs, 2);
    CHECK(agent != NULL);
    event_log log;
    event_log_init(&log);
    ferrule_run *run = start(agent, &log);
    atomic_store(&nonblocking_run, run);
    char *result = harness_wait(run);
    CHECK(result && strstr(result, "\"status\":\"completed\""));
    CHECK(result && strstr(result, "\"text\":\"ok\"") && strstr(result, "host thread"));
    ferrule_string_free(result);
    CHECK(event_log_count(&log, "\"type\":\"tool_execution_update\"") == 1);
    /* Blocking on the runtime, where the callback runs, is refused. */
    CHECK(atomic_load(&nonblocking_wait_code) == FERRULE_ERROR_WOULD_DEADLOCK);
    atomic_store(&nonblocking_run, NULL);
    ferrule_run_free(run);
    ferrule_agent_free(agent);
    event_log_destroy(&log);
}

static atomic_int inline_sent, inline_refused, inline_other;

/* Sends BURST updates of `call`, counting those accepted, those refused with
 * WOULD_DEADLOCK and any other outcome. */
static void send_burst(ferrule_tool_call *call, atomic_int *sent, atomic_int *refused, atomic_int *other) {
    for (int i = 0; i < BURST; i++) {
        ferrule_error *err = ferrule_tool_call_update(call, STR("\"tick\""));
        int code = err ? (int)ferrule_error_code(err) : 0;
        ferrule_error_free(err);
        if (code == 0) atomic_fetch_add(sent, 1);
        else if (code == FERRULE_ERROR_WOULD_DEADLOCK) atomic_fetch_add(refused, 1);
        else atomic_fetch_add(other, 1);
    }
}

static void update_inline_until_refused(void *user_data, ferrule_tool_call *call) {
    (void)user_data;
    send_burst(call, &inline_sent, &inline_refused, &inline_other);
    ferrule_error_free(ferrule_tool_call_complete(call, STR("\"done\"")));
}

static void a_nonblocking_callback_is_told_when_the_queue_is_full(void) {
    atomic_store(&slow_events, 0);
    event_log log;
    event_log_init(&log);
    CHECK(one_call_completes("{\"nonblocking\": true}", update_inline_until_refused, slow_event, &log));
    /* The queue holds 256 events and the host is slow: some updates were
     * refused, none failed otherwise, and every accepted one arrived. */
    CHECK(atomic_load(&inline_refused) > 0);
    CHECK(atomic_load(&inline_other) == 0);
    CHECK(atomic_load(&inline_sent) + atomic_load(&inline_refused) == BURST);
    CHECK(event_log_count(&log, "\"type\":\"tool_execution_update\"") == (size_t)atomic_load(&inline_sent));
    event_log_destroy(&log);
}

/* ---- updates from the run's own event callback -------------------------------------- */

static _Atomic(ferrule_tool_call *) held_call;
static atomic_int from_event_sent, from_event_refused, from_event_other, from_event_done;

static void hold_call(void *user_data, ferrule_tool_call *call) {
    (void)user_data;
    atomic_store(&held_call, call);
}

static void *complete_after_the_event_callback(void *arg) {
    ferrule_tool_call *call = arg;
    while (!atomic_load(&from_event_done)) harness_sleep_ms(1);
    ferrule_error_free(ferrule_tool_call_complete(call, STR("\"done\"")));
    return NULL;
}

/* On the call's start event, sends BURST updates from inside the callback: the
 * events it is delivering count against the queue's room, and a full queue is
 * WOULD_DEADLOCK here (this thread is the one that would empty it). */
static void update_from_the_event_callback(void *user_data, const char *json, size_t len) {
    event_log_on_event(user_data, json, len);
    if (!strstr(json, "\"type\":\"tool_execution_start\"")) return;
    ferrule_tool_call *call = NULL;
    for (int waited = 0; waited < 5000 && !(call = atomic_load(&held_call)); waited++) harness_sleep_ms(1);
    if (call) send_burst(call, &from_event_sent, &from_event_refused, &from_event_other);
    pthread_t completer;
    if (call && pthread_create(&completer, NULL, complete_after_the_event_callback, call) == 0) pthread_detach(completer);
    atomic_store(&from_event_done, 1);
}

static void the_event_callback_is_told_when_its_own_updates_fill_the_queue(void) {
    event_log log;
    event_log_init(&log);
    CHECK(one_call_completes("{\"nonblocking\": true}", hold_call, update_from_the_event_callback, &log));
    /* Room for fewer than 256 of them (the start event was being delivered),
     * the rest refused, and every accepted one delivered after the callback. */
    CHECK(atomic_load(&from_event_other) == 0);
    CHECK(atomic_load(&from_event_refused) > 0);
    CHECK(atomic_load(&from_event_sent) > 0 && atomic_load(&from_event_sent) < 256);
    CHECK(atomic_load(&from_event_sent) + atomic_load(&from_event_refused) == BURST);
    CHECK(event_log_count(&log, "\"type\":\"tool_execution_update\"") == (size_t)atomic_load(&from_event_sent));
    event_log_destroy(&log);
}

/* ---- cancel handlers --------------------------------------------------------------- */

typedef struct {
    ferrule_tool_call *call;
    atomic_int handled;
    atomic_int handler_kind;
    atomic_int freed;
    atomic_int cancelled_at_handler;
} cancel_watch;

static cancel_watch watches[4];
static atomic_int next_watch;

static void on_cancelled(void *user_data) {
    cancel_watch *watch = user_data;
    atomic_store(&watch->handler_kind, thread_kind());
    atomic_store(&watch->cancelled_at_handler, ferrule_tool_call_is_cancelled(watch->call));
    atomic_fetch_add(&watch->handled, 1);
    /* A binding cancels its task here; the task then completes the call. */
    ferrule_error_free(ferrule_tool_call_complete(watch->call, STR("\"stopped\"")));
}

static void free_watch(void *user_data) {
    atomic_fetch_add(&((cancel_watch *)user_data)->freed, 1);
}

static void register_cancel_handler(void *user_data, ferrule_tool_call *call) {
    (void)user_data;
    cancel_watch *watch = &watches[atomic_fetch_add(&next_watch, 1)];
    watch->call = call;
    ferrule_error_free(ferrule_tool_call_on_cancel(call, on_cancelled, watch, free_watch));
    /* The work never finishes on its own: only the cancel handler ends it. */
}

static void reset_watches(void) {
    memset(watches, 0, sizeof watches);
    atomic_store(&next_watch, 0);
}

static void a_cancel_handler_runs_when_the_call_times_out(void) {
    reset_watches();
    ferrule_tool_spec spec = harness_spec("stuck", "{\"nonblocking\": true, \"timeout_ms\": 20}", register_cancel_handler, NULL, NULL);
    ferrule_agent *agent = harness_agent(SCRIPT("{\"tool_calls\": [" CALL("c1", "stuck") "]}, {\"text\": \"moved on\"}"), &spec, 1);
    CHECK(agent != NULL);
    char *result = harness_run(agent, NULL);
    CHECK(result && strstr(result, "\"status\":\"completed\"") && strstr(result, "timed out after 20 ms"));
    CHECK(result && !strstr(result, "stopped")); /* the completion from the handler is discarded */
    ferrule_string_free(result);
    CHECK(wait_for_count(&watches[0].freed, 1, HANG_GUARD_MS));
    CHECK(atomic_load(&watches[0].handled) == 1);
    CHECK(atomic_load(&watches[0].cancelled_at_handler) == 1);
    CHECK(atomic_load(&watches[0].handler_kind) == 'c');
    ferrule_agent_free(agent);
}

static void a_cancel_handler_runs_when_the_run_is_cancelled(void) {
    reset_watches();
    ferrule_tool_spec spec = harness_spec("stuck", "", register_cancel_handler, NULL, NULL);
    ferrule_agent *agent = harness_agent(SCRIPT("{\"tool_calls\": [" CALL("c1", "stuck") ", " CALL("c2", "stuck") "]}"), &spec, 1);
    CHECK(agent != NULL);
    ferrule_run *run = start(agent, NULL);
    CHECK(wait_for_count(&next_watch, 2, HANG_GUARD_MS));
    ferrule_run_cancel(run);
    char *result = harness_wait(run);
    CHECK(result && strstr(result, "\"status\":\"cancelled\""));
    ferrule_string_free(result);
    for (int i = 0; i < 2; i++) {
        CHECK(wait_for_count(&watches[i].freed, 1, HANG_GUARD_MS));
        CHECK(atomic_load(&watches[i].handled) == 1);
    }
    ferrule_run_free(run);
    ferrule_agent_free(agent);
}

static atomic_int late_register_code, late_second_code, late_after_complete_code;
static atomic_int late_counter_frees;
static cancel_watch late_spare;

static void note_cancel(void *user_data) {
    atomic_fetch_add(&((cancel_watch *)user_data)->handled, 1);
}

static void register_after_cancellation(void *user_data, ferrule_tool_call *call) {
    (void)user_data;
    while (!ferrule_tool_call_is_cancelled(call)) harness_sleep_ms(1);
    cancel_watch *watch = &watches[0];
    ferrule_error *err = ferrule_tool_call_on_cancel(call, note_cancel, watch, free_watch);
    atomic_store(&late_register_code, err ? (int)ferrule_error_code(err) : -1);
    ferrule_error_free(err);
    /* A second handler is refused and its user data stays the host's. */
    err = ferrule_tool_call_on_cancel(call, note_cancel, &late_spare, free_watch);
    atomic_store(&late_second_code, err ? (int)ferrule_error_code(err) : -1);
    ferrule_error_free(err);
    while (atomic_load(&watch->handled) == 0) harness_sleep_ms(1);
    /* The handler's user data lives until the call is completed. */
    int freed_before_completion = atomic_load(&watch->freed);
    ferrule_error_free(ferrule_tool_call_complete(call, STR("\"too late\"")));
    if (freed_before_completion) atomic_store(&late_register_code, -2);
    err = ferrule_tool_call_on_cancel(call, note_cancel, &late_spare, free_watch);
    atomic_store(&late_after_complete_code, err ? (int)ferrule_error_code(err) : -1);
    ferrule_error_free(err);
    atomic_store(&late_counter_frees, atomic_load(&late_spare.freed) + atomic_load(&late_spare.handled));
}

static void a_handler_registered_after_the_cancellation_runs_at_once(void) {
    reset_watches();
    ferrule_tool_spec spec = harness_spec("late", "{\"timeout_ms\": 10}", register_after_cancellation, NULL, NULL);
    ferrule_agent *agent = harness_agent(SCRIPT("{\"tool_calls\": [" CALL("c1", "late") "]}, {\"text\": \"done\"}"), &spec, 1);
    CHECK(agent != NULL);
    CHECK(completed(harness_run(agent, NULL)));
    CHECK(wait_for_count(&watches[0].freed, 1, HANG_GUARD_MS));
    CHECK(atomic_load(&watches[0].handled) == 1);
    ferrule_agent_free(agent); /* waits for nothing: the callback may still run */
    while (atomic_load(&late_after_complete_code) == 0) harness_sleep_ms(1);
    CHECK(atomic_load(&late_register_code) == -1); /* accepted */
    CHECK(atomic_load(&late_second_code) == FERRULE_ERROR_INVALID_ARG);
    CHECK(atomic_load(&late_after_complete_code) == FERRULE_ERROR_ALREADY_COMPLETED);
    CHECK(atomic_load(&late_counter_frees) == 0);
}

static atomic_int register_code, no_cancel_code;

static int code_of(ferrule_error *err) {
    int code = err ? (int)ferrule_error_code(err) : 0;
    ferrule_error_free(err);
    return code;
}

static void complete_with_a_handler(void *user_data, ferrule_tool_call *call) {
    cancel_watch *watch = user_data;
    watch->call = call;
    atomic_store(&register_code, code_of(ferrule_tool_call_on_cancel(call, on_cancelled, watch, free_watch)));
    atomic_store(&no_cancel_code, code_of(ferrule_tool_call_on_cancel(call, NULL, NULL, NULL)));
    ferrule_error_free(ferrule_tool_call_complete(call, STR("\"fine\"")));
}

static void a_completed_call_frees_its_handler_without_running_it(void) {
    reset_watches();
    atomic_store(&no_cancel_code, 0);
    ferrule_tool_spec spec = harness_spec("fine", "", complete_with_a_handler, &watches[0], NULL);
    ferrule_agent *agent = harness_agent(SCRIPT("{\"tool_calls\": [" CALL("c1", "fine") "]}, {\"text\": \"done\"}"), &spec, 1);
    CHECK(agent != NULL);
    char *result = harness_run(agent, NULL);
    CHECK(result && strstr(result, "\"fine\""));
    ferrule_string_free(result);
    CHECK(atomic_load(&register_code) == 0);
    CHECK(atomic_load(&watches[0].freed) == 1); /* freed inside the completion */
    CHECK(atomic_load(&watches[0].handled) == 0);
    CHECK(atomic_load(&no_cancel_code) == FERRULE_ERROR_NULL_ARG);
    ferrule_agent_free(agent);
}

int main(int argc, char **argv) {
    static const harness_case cases[] = {
        {"each_kind_of_host_code_runs_on_its_own_threads", each_kind_of_host_code_runs_on_its_own_threads},
        {"a_tools_user_data_goes_after_the_last_runs_end_and_off_the_runtime",
         a_tools_user_data_goes_after_the_last_runs_end_and_off_the_runtime},
        {"blocked_callbacks_hold_up_neither_their_neighbours_nor_other_runs",
         blocked_callbacks_hold_up_neither_their_neighbours_nor_other_runs},
        {"callbacks_joining_threads_that_send_updates_never_deadlock", callbacks_joining_threads_that_send_updates_never_deadlock},
        {"cancel_ends_a_run_whose_callbacks_are_blocked", cancel_ends_a_run_whose_callbacks_are_blocked},
        {"every_update_sent_inside_a_callback_is_delivered", every_update_sent_inside_a_callback_is_delivered},
        {"waiting_inside_free_user_data_would_deadlock", waiting_inside_free_user_data_would_deadlock},
        {"nonblocking_tools_complete_inline_or_from_any_thread", nonblocking_tools_complete_inline_or_from_any_thread},
        {"a_nonblocking_callback_is_told_when_the_queue_is_full", a_nonblocking_callback_is_told_when_the_queue_is_full},
        {"the_event_callback_is_told_when_its_own_updates_fill_the_queue",
         the_event_callback_is_told_when_its_own_updates_fill_the_queue},
        {"a_cancel_handler_runs_when_the_call_times_out", a_cancel_handler_runs_when_the_call_times_out},
        {"a_cancel_handler_runs_when_the_run_is_cancelled", a_cancel_handler_runs_when_the_run_is_cancelled},
        {"a_handler_registered_after_the_cancellation_runs_at_once", a_handler_registered_after_the_cancellation_runs_at_once},
        {"a_completed_call_frees_its_handler_without_running_it", a_completed_call_frees_its_handler_without_running_it},
    };
    return harness_main(cases, sizeof cases / sizeof cases[0], argc, argv);
}
