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

/* Lets this process start no more threads than it has now: as an unprivileged
 * user (root is exempt from the limit, so a root child becomes nobody first). */
static int refuse_new_threads(void) {
    if (geteuid() == 0 && (setgroups(0, NULL) != 0 || setgid(65534) != 0 || setuid(65534) != 0)) return 0;
    long threads = 0;
    FILE *status = fopen("/proc/self/status", "r");
    char line[256];
    while (status && fgets(line, sizeof line, status)) {
        if (strncmp(line, "Threads:", 8) == 0) threads = strtol(line + 8, NULL, 10);
    }
    if (status) fclose(status);
    struct rlimit limit = {(rlim_t)threads, (rlim_t)threads};
    return threads > 0 && setrlimit(RLIMIT_NPROC, &limit) == 0;
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

static int start_without_threads(void) {
    if (!refuse_new_threads()) return 0;
    ferrule_agent *agent = harness_agent(SCRIPT("{\"text\": \"hi\"}"), NULL, 0);
    if (!agent) return 0;
    int ok = 1;
    for (int attempt = 0; attempt < 2; attempt++) {
        counter data = {0};
        ferrule_run *run = NULL;
        ferrule_error *err = ferrule_agent_start(agent, STR("{\"prompt\": \"go\"}"), ignore_event, &data, counter_free, &run);
        ok &= ferrule_error_code(err) == FERRULE_ERROR_RESOURCE_EXHAUSTED;
        ok &= strstr(ferrule_error_message(err).ptr, "could not start") != NULL;
        ok &= run == NULL && atomic_load(&data.frees) == 0; /* the host still owns its data */
        ferrule_error_free(err);
    }
    ferrule_agent_free(agent);
    return ok;
}

static void a_start_the_system_refuses_threads_fails_and_keeps_the_user_data(void) {
    CHECK(in_child(start_without_threads));
}

static int tool_without_a_thread(void) {
    ferrule_tool_spec spec = harness_spec("lookup", "", complete_now, NULL, NULL);
    ferrule_agent *agent = harness_agent(SCRIPT("{\"tool_calls\": [" CALL("c1", "lookup") "]}, {\"text\": \"done\"}"), &spec, 1);
    ferrule_agent *plain = harness_agent(SCRIPT("{\"text\": \"hi\"}"), NULL, 0);
    if (!agent || !plain) return 0;
    /* Start the runtime and an event thread while threads are still allowed. */
    event_log warm_log, log;
    event_log_init(&warm_log);
    event_log_init(&log);
    char *warm = harness_run(plain, &warm_log);
    ferrule_string_free(warm);
    if (!refuse_new_threads()) return 0;
    char *result = harness_run(agent, &log);
    int ok = result && strstr(result, "\"status\":\"completed\"") && strstr(result, "The tool could not run") &&
             event_log_count(&log, "\"type\":\"run_end\"") == 1;
    ferrule_string_free(result);
    ferrule_agent_free(agent);
    ferrule_agent_free(plain);
    return ok;
}

static void a_tool_the_system_refuses_a_thread_gets_an_error_result(void) {
    CHECK(in_child(tool_without_a_thread));
}

static void small_pools_can_be_configured(void) {
    char config[128];
    snprintf(config, sizeof config, "{\"max_callback_threads\": 2, \"max_event_threads\": 1, \"callback_stack_size\": %d}",
             STACK_SIZE);
    CHECK_ERROR(ferrule_runtime_configure(STR("{\"callback_stack_size\": 4096}")), FERRULE_ERROR_INVALID_ARG,
                "callback_stack_size");
    CHECK_ERROR(ferrule_runtime_configure(STR("{\"max_callback_threads\": 0}")), FERRULE_ERROR_INVALID_ARG, "at least 1");
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
        {"a_tool_the_system_refuses_a_thread_gets_an_error_result", a_tool_the_system_refuses_a_thread_gets_an_error_result},
        {"small_pools_can_be_configured", small_pools_can_be_configured},
        {"at_the_bound_calls_wait_and_cancel_still_ends_the_run", at_the_bound_calls_wait_and_cancel_still_ends_the_run},
        {"callback_threads_have_the_configured_stack_size", callback_threads_have_the_configured_stack_size},
    };
    return harness_main(cases, sizeof cases / sizeof cases[0], argc, argv);
}
