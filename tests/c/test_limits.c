/*
 * ferrule at its limits: a system that refuses threads, a callback pool that is
 * full, a configured stack size. The first cases run in children forked before
 * this process starts ferrule's threads; then the parent configures small pools.
 * Run the cases in order.
 */
#include "harness.h"

#include <grp.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#define SCRIPT(turns) "{\"model\": {\"provider\": \"scripted\", \"script\": [" turns "]}}"
#define CALL(id, name) "{\"id\": \"" id "\", \"name\": \"" name "\", \"arguments\": {}}"
#define STACK_SIZE 262144

/* Becomes an unprivileged user (root is exempt from thread limits) whose hard
 * limit leaves room to grow, then lets this process start `more` threads. */
static long threads_now(void) {
    long threads = 0;
    FILE *status = fopen("/proc/self/status", "r");
    char line[256];
    while (status && fgets(line, sizeof line, status)) {
        if (strncmp(line, "Threads:", 8) == 0) threads = strtol(line + 8, NULL, 10);
    }
    if (status) fclose(status);
    return threads;
}

static int allow_more_threads(long more) {
    if (geteuid() == 0 && (setgroups(0, NULL) != 0 || setgid(65534) != 0 || setuid(65534) != 0)) return 0;
    struct rlimit limit;
    if (getrlimit(RLIMIT_NPROC, &limit) != 0) return 0;
    long now = threads_now();
    limit.rlim_cur = (rlim_t)(now + more);
    if (limit.rlim_max == RLIM_INFINITY || limit.rlim_max > (rlim_t)(now + 256)) limit.rlim_max = (rlim_t)(now + 256);
    return now > 0 && setrlimit(RLIMIT_NPROC, &limit) == 0;
}

/* Lifts the soft limit to the hard one set above. */
static int allow_threads_again(void) {
    struct rlimit limit;
    if (getrlimit(RLIMIT_NPROC, &limit) != 0) return 0;
    limit.rlim_cur = limit.rlim_max;
    return setrlimit(RLIMIT_NPROC, &limit) == 0;
}

/* Runs `body` in a child and reports whether it exited 0. The child leaves with
 * _exit, so no leak check runs there: the refused threads include LeakSanitizer's. */
static int in_child(int (*body)(void)) {
    fflush(NULL);
    pid_t child = fork();
    if (child == 0) _exit(body() ? 0 : 1);
    int status = 0;
    return child > 0 && waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

static void complete_now(void *user_data, ferrule_tool_call *call) {
    (void)user_data;
    ferrule_error_free(ferrule_tool_call_complete(call, STR("\"done\"")));
}

static void ignore_event(void *user_data, const char *json, size_t len) {
    (void)user_data;
    (void)json;
    (void)len;
}

static int start_is_refused(ferrule_agent *agent) {
    counter data = {0};
    ferrule_run *run = NULL;
    ferrule_error *err = ferrule_agent_start(agent, STR("{\"prompt\": \"go\"}"), ignore_event, &data, counter_free, &run);
    int ok = ferrule_error_code(err) == FERRULE_ERROR_RESOURCE_EXHAUSTED;
    ok &= strstr(ferrule_error_message(err).ptr, "could not start") != NULL;
    ok &= run == NULL && atomic_load(&data.frees) == 0; /* the host still owns its data */
    ferrule_error_free(err);
    return ok;
}

/* Lifts the limit, runs `agent` to completion and frees it. */
static int runs_once_threads_are_allowed_again(ferrule_agent *agent) {
    int ok = allow_threads_again();
    char *result = harness_run(agent, NULL);
    ok &= result && strstr(result, "\"status\":\"completed\"") != NULL;
    ferrule_string_free(result);
    ferrule_agent_free(agent);
    return ok;
}

static int start_without_threads(void) {
    if (!allow_more_threads(0)) return 0;
    ferrule_agent *agent = harness_agent(SCRIPT("{\"text\": \"hi\"}"), NULL, 0);
    if (!agent) return 0;
    int ok = start_is_refused(agent) && start_is_refused(agent);
    /* Nothing started, so the host may still size the threads, and try again. */
    ferrule_error *err = ferrule_runtime_configure(STR("{\"worker_threads\": 1}"));
    ok &= err == NULL;
    ferrule_error_free(err);
    return ok && runs_once_threads_are_allowed_again(agent);
}

static void a_start_the_system_refuses_threads_fails_and_keeps_the_user_data(void) {
    CHECK(in_child(start_without_threads));
}

static int start_with_room_for_one_worker(void) {
    ferrule_error *err = ferrule_runtime_configure(STR("{\"worker_threads\": 2}"));
    int ok = err == NULL;
    ferrule_error_free(err);
    /* Room for both pools' first threads, the thread that builds the runtime and
     * one of its two workers: the second worker is refused. */
    if (!allow_more_threads(4)) return 0;
    ferrule_agent *agent = harness_agent(SCRIPT("{\"text\": \"hi\"}"), NULL, 0);
    if (!agent) return 0;
    ok &= start_is_refused(agent);
    return ok && runs_once_threads_are_allowed_again(agent);
}

static void a_runtime_that_starts_only_some_workers_fails_instead_of_hanging(void) {
    CHECK(in_child(start_with_room_for_one_worker));
}

/* ---- threads refused once ferrule runs ------------------------------------------------ */

static latch refused_release;
static atomic_int refused_entered;

static void block_until_refused_release(void *user_data, ferrule_tool_call *call) {
    (void)user_data;
    atomic_fetch_add(&refused_entered, 1);
    latch_wait(&refused_release);
    ferrule_error_free(ferrule_tool_call_complete(call, STR("\"released\"")));
}

static int run_on_the_threads_there_are(void) {
    latch_init(&refused_release);
    ferrule_tool_spec quick = harness_spec("quick", "", complete_now, NULL, NULL);
    ferrule_tool_spec stuck = harness_spec("stuck", "", block_until_refused_release, NULL, NULL);
    ferrule_agent *plain = harness_agent(SCRIPT("{\"text\": \"hi\"}"), NULL, 0);
    ferrule_agent *fan = harness_batch_agent(&quick, 3, 2, "");
    ferrule_agent *blocked = harness_agent(SCRIPT("{\"tool_calls\": [" CALL("c1", "stuck") "]}, {\"text\": \"done\"}"), &stuck, 1);
    ferrule_agent *waiting = harness_agent(SCRIPT("{\"tool_calls\": [" CALL("c1", "quick") "]}, {\"text\": \"done\"}"), &quick, 1);
    if (!plain || !fan || !blocked || !waiting) return 0;
    event_log warm_log, log;
    event_log_init(&warm_log);
    event_log_init(&log);
    char *warm = harness_run(plain, &warm_log); /* every thread ferrule keeps is up */
    ferrule_string_free(warm);
    if (!allow_more_threads(0)) return 0;

    /* Calls and events share the threads that stay. */
    char *result = harness_run(fan, &log);
    int ok = result && strstr(result, "\"status\":\"completed\"") && event_log_count(&log, "\"type\":\"run_end\"") == 1 &&
             event_log_count(&log, "\"type\":\"tool_execution_end\"") == 6;
    ferrule_string_free(result);

    /* A blocked callback holds the only tool thread; another run's call waits for
     * a thread, and gets one as soon as the system allows it. */
    ferrule_run *blocked_run = NULL, *waiting_run = NULL;
    ferrule_error *err = ferrule_agent_start(blocked, STR("{\"prompt\": \"go\"}"), NULL, NULL, NULL, &blocked_run);
    ok &= err == NULL;
    ferrule_error_free(err);
    while (atomic_load(&refused_entered) == 0) harness_sleep_ms(1);
    err = ferrule_agent_start(waiting, STR("{\"prompt\": \"go\"}"), NULL, NULL, NULL, &waiting_run);
    ok &= err == NULL;
    ferrule_error_free(err);
    ok &= allow_threads_again();
    result = harness_wait(waiting_run); /* while the other callback still blocks */
    ok &= result && strstr(result, "\"status\":\"completed\"") != NULL;
    ferrule_string_free(result);
    latch_open(&refused_release);
    result = harness_wait(blocked_run);
    ok &= result && strstr(result, "released") != NULL;
    ferrule_string_free(result);
    return ok;
}

static void runs_go_on_when_the_system_refuses_more_threads(void) {
    CHECK(in_child(run_on_the_threads_there_are));
}

static void small_pools_can_be_configured(void) {
    char config[128];
    snprintf(config, sizeof config, "{\"max_callback_threads\": 2, \"max_event_threads\": 1, \"callback_stack_size\": %d}",
             STACK_SIZE);
    CHECK_ERROR(ferrule_runtime_configure(STR("{\"callback_stack_size\": 4096}")), FERRULE_ERROR_INVALID_ARG,
                "callback_stack_size");
    CHECK_ERROR(ferrule_runtime_configure(STR("{\"max_callback_threads\": 0}")), FERRULE_ERROR_INVALID_ARG, "at least 1");
    CHECK_ERROR(ferrule_runtime_configure(STR("{\"worker_threads\": 40000}")), FERRULE_ERROR_INVALID_ARG, "at most 1024");
    CHECK_ERROR(ferrule_runtime_configure(STR("{\"callback_stack_size\": 1099511627776}")), FERRULE_ERROR_INVALID_ARG,
                "at most");
    CHECK_OK(ferrule_runtime_configure(STR(config)));
}

/* ---- a full pool ------------------------------------------------------------------ */

static latch release;
static atomic_int entered, left;

static void block_until_released(void *user_data, ferrule_tool_call *call) {
    (void)user_data;
    atomic_fetch_add(&entered, 1);
    latch_wait(&release);
    ferrule_error_free(ferrule_tool_call_complete(call, STR("\"released\"")));
    atomic_fetch_add(&left, 1);
}

static void at_the_bound_calls_wait_and_cancel_still_ends_the_run(void) {
    latch_init(&release);
    ferrule_tool_spec spec = harness_spec("sleepy", "", block_until_released, NULL, NULL);
    ferrule_agent *agent = harness_agent(SCRIPT("{\"tool_calls\": [" CALL("c1", "sleepy") ", " CALL("c2", "sleepy") ", "
                                                CALL("c3", "sleepy") ", " CALL("c4", "sleepy") ", " CALL("c5", "sleepy") ", "
                                                CALL("c6", "sleepy") "]}"),
        &spec, 1);
    CHECK(agent != NULL);
    event_log log;
    event_log_init(&log);
    ferrule_run *run = NULL;
    CHECK_OK(ferrule_agent_start(agent, STR("{\"prompt\": \"go\"}"), event_log_on_event, &log, event_log_free, &run));
    CHECK(wait_for_count(&entered, 2, 60000));
    ferrule_run_cancel(run);
    char *result = harness_wait(run);
    CHECK(result && strstr(result, "\"status\":\"cancelled\""));
    ferrule_string_free(result);
    CHECK(event_log_count(&log, "\"type\":\"tool_execution_end\"") == 6);
    latch_open(&release);
    CHECK(wait_for_count(&left, 2, 60000));
    /* The four calls that waited for a thread never reached the host. */
    harness_sleep_ms(50);
    CHECK(atomic_load(&entered) == 2);
    ferrule_run_free(run);
    ferrule_agent_free(agent);
    event_log_destroy(&log);
}

/* ---- callbacks that wait for their own cancellation hold every thread ------------- */

typedef struct {
    latch cancelled;
    atomic_int waiting;
    atomic_int tool_frees;
} waiting_state;

static waiting_state waits;

static void open_on_cancel(void *user_data) {
    latch_open(user_data);
}

static void wait_for_own_cancellation(void *user_data, ferrule_tool_call *call) {
    (void)user_data;
    ferrule_error_free(ferrule_tool_call_on_cancel(call, open_on_cancel, &waits.cancelled, NULL));
    atomic_fetch_add(&waits.waiting, 1);
    latch_wait(&waits.cancelled);
    ferrule_error_free(ferrule_tool_call_complete(call, STR("\"stopped\"")));
}

static void count_tool_free(void *user_data) {
    (void)user_data;
    atomic_fetch_add(&waits.tool_frees, 1);
}

static void cancel_handlers_and_releases_never_wait_behind_blocked_callbacks(void) {
    latch_init(&waits.cancelled);
    /* Both threads of the pool (bounded at 2) block until their call's cancel
     * handler runs: the handler cannot wait for a pool thread. */
    ferrule_tool_spec spec = harness_spec("waiter", "", wait_for_own_cancellation, NULL, count_tool_free);
    ferrule_agent *agent = harness_agent(
        SCRIPT("{\"tool_calls\": [" CALL("c1", "waiter") ", " CALL("c2", "waiter") "]}, {\"text\": \"done\"}"), &spec, 1);
    CHECK(agent != NULL);
    ferrule_run *run = NULL;
    CHECK_OK(ferrule_agent_start(agent, STR("{\"prompt\": \"go\"}"), NULL, NULL, NULL, &run));
    ferrule_agent_free(agent); /* the run will release the tool, with every thread busy */
    CHECK(wait_for_count(&waits.waiting, 2, 60000));
    ferrule_run_cancel(run);
    char *result = harness_wait(run);
    CHECK(result && strstr(result, "\"status\":\"cancelled\""));
    ferrule_string_free(result);
    /* The tool's user data goes once the callbacks, woken by their handlers, return. */
    CHECK(wait_for_count(&waits.tool_frees, 1, 60000));
    ferrule_run_free(run);
}

/* ---- the stack size --------------------------------------------------------------- */

static atomic_long seen_stack_size;

static void note_stack_size(void *user_data, ferrule_tool_call *call) {
    (void)user_data;
    pthread_attr_t attr;
    size_t size = 0;
    if (pthread_getattr_np(pthread_self(), &attr) == 0) {
        pthread_attr_getstacksize(&attr, &size);
        pthread_attr_destroy(&attr);
    }
    atomic_store(&seen_stack_size, (long)size);
    ferrule_error_free(ferrule_tool_call_complete(call, STR("\"measured\"")));
}

static void callback_threads_have_the_configured_stack_size(void) {
    ferrule_tool_spec spec = harness_spec("measure", "", note_stack_size, NULL, NULL);
    ferrule_agent *agent = harness_agent(SCRIPT("{\"tool_calls\": [" CALL("c1", "measure") "]}, {\"text\": \"done\"}"), &spec, 1);
    CHECK(agent != NULL);
    char *result = harness_run(agent, NULL);
    CHECK(result && strstr(result, "measured"));
    ferrule_string_free(result);
    long size = atomic_load(&seen_stack_size);
    CHECK(size >= STACK_SIZE && size < 2 * STACK_SIZE);
    ferrule_agent_free(agent);
}

int main(int argc, char **argv) {
    static const harness_case cases[] = {
        {"a_start_the_system_refuses_threads_fails_and_keeps_the_user_data",
         a_start_the_system_refuses_threads_fails_and_keeps_the_user_data},
        {"a_runtime_that_starts_only_some_workers_fails_instead_of_hanging",
         a_runtime_that_starts_only_some_workers_fails_instead_of_hanging},
        {"runs_go_on_when_the_system_refuses_more_threads", runs_go_on_when_the_system_refuses_more_threads},
        {"small_pools_can_be_configured", small_pools_can_be_configured},
        {"at_the_bound_calls_wait_and_cancel_still_ends_the_run", at_the_bound_calls_wait_and_cancel_still_ends_the_run},
        {"cancel_handlers_and_releases_never_wait_behind_blocked_callbacks",
         cancel_handlers_and_releases_never_wait_behind_blocked_callbacks},
        {"callback_threads_have_the_configured_stack_size", callback_threads_have_the_configured_stack_size},
    };
    return harness_main(cases, sizeof cases / sizeof cases[0], argc, argv);
}
