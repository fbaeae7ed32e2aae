/*
 * A small ferrule host in C: two host tools plus the built-in file and shell
 * tools working in a scratch directory, events printed as they arrive.
 *
 *   lookup_customer  answers at once, inside its callback.
 *   build_report     a "nonblocking" tool: its callback hands the call to a thread
 *                    of its own and returns at once; the thread sends progress
 *                    updates and completes later, and stops early when the cancel
 *                    handler tells it the call was cancelled.
 *   read, bash, edit, write   ferrule's built-ins, confined to the scratch directory.
 *
 * The scripted model drives it unless OPENAI_API_KEY or ANTHROPIC_API_KEY is set.
 * Build and run: make demo
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ferrule.h"

#define STR(s) s, strlen(s)

static int check(ferrule_error *err, const char *what) {
    if (err == NULL) return 0;
    ferrule_str msg = ferrule_error_message(err);
    fprintf(stderr, "%s failed (code %u): %s\n", what, ferrule_error_code(err), msg.ptr);
    ferrule_error_free(err);
    return 1;
}

/* ---- tool 1: answers at once ------------------------------------------------ */

static void lookup_customer(void *user_data, ferrule_tool_call *call) {
    (void)user_data;
    ferrule_str args = ferrule_tool_call_arguments(call);
    const char *plan = strstr(args.ptr, "C-100") ? "Gold" : "Basic";
    char result[128];
    snprintf(result, sizeof result, "\"The customer is on the %s plan.\"", plan);
    check(ferrule_tool_call_complete(call, STR(result)), "complete");
}

/* ---- tool 2: progress updates, completes later from another thread ---------- */

/* One report job. ferrule frees it (free_user_data of the cancel handler) once
 * the call has ended, so the worker must not touch it after completing. */
typedef struct {
    ferrule_tool_call *call;
    atomic_int stop;
} report_job;

static void stop_report(void *user_data) {
    atomic_store(&((report_job *)user_data)->stop, 1);
}

static void *build_report_worker(void *arg) {
    report_job *job = arg;
    ferrule_tool_call *call = job->call;
    int stopped = 0;
    for (int step = 1; step <= 3 && !stopped; step++) {
        nanosleep(&(struct timespec){.tv_nsec = 20 * 1000 * 1000}, NULL);
        char update[96];
        snprintf(update, sizeof update, "{\"content\": \"step %d of 3\", \"display\": \"terminal\"}", step);
        check(ferrule_tool_call_update(call, STR(update)), "update");
        stopped = atomic_load(&job->stop);
    }
    const char *result = stopped ? "\"Stopped: the call was cancelled.\""
                                 : "{\"content\": \"Report: 3 sections, 12 pages.\", \"title\": \"Build report\","
                                   " \"summary\": \"report built\", \"details\": {\"pages\": 12}}";
    check(ferrule_tool_call_complete(call, STR(result)), "complete"); /* `job` may be gone from here on */
    return NULL;
}

static void build_report(void *user_data, ferrule_tool_call *call) {
    (void)user_data;
    report_job *job = calloc(1, sizeof *job);
    job->call = call;
    if (check(ferrule_tool_call_on_cancel(call, stop_report, job, free), "on_cancel")) {
        free(job);
        check(ferrule_tool_call_fail(call, STR("could not start the report")), "fail");
        return;
    }
    pthread_t worker;
    if (pthread_create(&worker, NULL, build_report_worker, job) != 0) {
        check(ferrule_tool_call_fail(call, STR("could not start the report worker")), "fail");
        return;
    }
    pthread_detach(worker);
}

/* ---- events ------------------------------------------------------------------ */

static void on_event(void *user_data, const char *json, size_t len) {
    (void)user_data;
    int shown = len > 150 ? 150 : (int)len;
    printf("event: %.*s%s\n", shown, json, len > 150 ? " ..." : "");
    fflush(stdout);
}

/* %s: the scratch directory. */
static const char SCRIPTED_CONFIG[] =
    "{\"model\": {\"provider\": \"scripted\", \"script\": ["
    "  {\"text\": \"Let me check the customer and build the report.\","
    "   \"tool_calls\": ["
    "     {\"id\": \"call_1\", \"name\": \"lookup_customer\", \"arguments\": {\"customer_id\": \"C-100\"}},"
    "     {\"id\": \"call_2\", \"name\": \"build_report\", \"arguments\": {\"customer_id\": \"C-100\"}}]},"
    "  {\"tool_calls\": [{\"id\": \"call_3\", \"name\": \"write\", \"arguments\":"
    "     {\"path\": \"notes/C-100.md\", \"content\": \"# C-100\\nplan: Gold\\nreport: pending\\n\"}}]},"
    "  {\"tool_calls\": [{\"id\": \"call_4\", \"name\": \"edit\", \"arguments\":"
    "     {\"path\": \"notes/C-100.md\", \"edits\": [{\"oldText\": \"report: pending\", \"newText\": \"report: 12 pages\"}]}}]},"
    "  {\"tool_calls\": ["
    "     {\"id\": \"call_5\", \"name\": \"read\", \"arguments\": {\"path\": \"notes/C-100.md\"}},"
    "     {\"id\": \"call_6\", \"name\": \"bash\", \"arguments\": {\"command\": \"ls -R && wc -l notes/C-100.md\", \"timeout\": 10}}]},"
    "  {\"text\": \"C-100 is on the Gold plan; the 12-page report is noted in notes/C-100.md.\"}]},"
    " \"system\": \"You are a helpful account assistant.\","
    " \"builtin_tools\": {\"working_directory\": \"%s\", \"confine\": true}}";

/* With OPENAI_API_KEY or ANTHROPIC_API_KEY set, a real model answers (its name
 * from FERRULE_MODEL, or a default); otherwise the scripted one does. */
static const char *choose_config(char *buffer, size_t size, const char *scratch) {
    const char *provider = NULL, *model = NULL;
    if (getenv("OPENAI_API_KEY") && *getenv("OPENAI_API_KEY")) {
        provider = "openai";
        model = "gpt-4.1-mini";
    } else if (getenv("ANTHROPIC_API_KEY") && *getenv("ANTHROPIC_API_KEY")) {
        provider = "anthropic";
        model = "claude-sonnet-4-5";
    }
    if (provider == NULL) {
        printf("model: scripted (set OPENAI_API_KEY or ANTHROPIC_API_KEY for a real one)\n");
        snprintf(buffer, size, SCRIPTED_CONFIG, scratch);
        return buffer;
    }
    if (getenv("FERRULE_MODEL") && *getenv("FERRULE_MODEL")) model = getenv("FERRULE_MODEL");
    snprintf(buffer, size,
             "{\"model\": {\"provider\": \"%s\", \"name\": \"%s\"},"
             " \"system\": \"You are a helpful account assistant. Use the tools to answer, and keep"
             " notes on each customer in notes/<id>.md.\","
             " \"builtin_tools\": {\"working_directory\": \"%s\", \"confine\": true}}",
             provider, model, scratch);
    printf("model: %s %s\n", provider, model);
    return buffer;
}

static const char CUSTOMER_SCHEMA[] =
    "{\"type\": \"object\", \"properties\": {\"customer_id\": {\"type\": \"string\", \"minLength\": 1}},"
    " \"required\": [\"customer_id\"], \"additionalProperties\": false}";

static int add_tool(ferrule_agent_builder *builder, const char *name, const char *description, const char *options,
                    ferrule_tool_fn execute) {
    ferrule_tool_spec spec = {0};
    spec.struct_size = sizeof spec;
    spec.name = name;
    spec.name_len = strlen(name);
    spec.description = description;
    spec.description_len = strlen(description);
    spec.input_schema = CUSTOMER_SCHEMA;
    spec.input_schema_len = strlen(CUSTOMER_SCHEMA);
    spec.options = options;
    spec.options_len = strlen(options);
    spec.execute = execute;
    return check(ferrule_agent_builder_add_tool(builder, &spec), "add_tool");
}

/* Prints what the agent left in the scratch directory. */
static void show_notes(const char *scratch) {
    char path[256];
    snprintf(path, sizeof path, "%s/notes/C-100.md", scratch);
    FILE *file = fopen(path, "r");
    if (file == NULL) return;
    printf("\n%s now holds:\n", path);
    char line[256];
    while (fgets(line, sizeof line, file)) printf("  %s", line);
    fclose(file);
}

int main(void) {
    if (ferrule_abi_version() != FERRULE_ABI_VERSION) {
        fprintf(stderr, "ferrule ABI mismatch: library %u, header %u\n", ferrule_abi_version(), FERRULE_ABI_VERSION);
        return 1;
    }
    printf("ferrule %s\n", ferrule_version().ptr);

    char scratch[] = "/tmp/ferrule-demo-XXXXXX";
    if (mkdtemp(scratch) == NULL) {
        perror("mkdtemp");
        return 1;
    }
    printf("scratch directory: %s\n", scratch);
    char config_buffer[4096];
    const char *config = choose_config(config_buffer, sizeof config_buffer, scratch);
    ferrule_agent_builder *builder = NULL;
    if (check(ferrule_agent_builder_new(STR(config), &builder), "builder_new")) return 1;
    if (add_tool(builder, "lookup_customer", "Return the current plan for one customer ID.", "", lookup_customer) ||
        add_tool(builder, "build_report", "Build the account report for one customer.", "{\"nonblocking\": true}",
                 build_report)) {
        ferrule_agent_builder_free(builder);
        return 1;
    }
    ferrule_agent *agent = NULL;
    if (check(ferrule_agent_build(builder, &agent), "build")) return 1;

    ferrule_run *run = NULL;
    const char *input = "{\"prompt\": \"Which plan is C-100 on, and can you build their report?\"}";
    if (check(ferrule_agent_start(agent, STR(input), on_event, NULL, NULL, &run), "start")) {
        ferrule_agent_free(agent);
        return 1;
    }
    char *result = NULL;
    size_t result_len = 0;
    int failed = check(ferrule_run_wait(run, &result, &result_len), "wait");
    if (!failed) {
        printf("\nrun result (%zu bytes):\n%s\n", result_len, result);
        failed = strstr(result, "\"status\":\"completed\"") == NULL;
    }
    ferrule_string_free(result);
    ferrule_run_free(run);
    ferrule_agent_free(agent);
    show_notes(scratch);
    return failed;
}
