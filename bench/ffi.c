/*
 * W1 and W2 (DESIGN section 7) with the tool in C: the same workloads as
 * bench/loop.rs, through the C ABI with a C callback that completes at once,
 * registered once as a blocking tool (the callback runs on a tool callback
 * thread) and once as a nonblocking one (it runs on the run's own thread).
 * Then W1 with the model in C too (a host model, "provider": "host", that
 * answers each request at once with W1's call, then "done"), blocking and
 * nonblocking, beside the scripted model's W1. Last, W1 with a no-op C hook on
 * every stage (nonblocking, answering `{}` in its callback), with the whole
 * history and with `"history": "none"`, and the median round near round 10 and
 * near round 2,000 (timed at each `turn_start`).
 * Prints microseconds per round and per call (median of 7 runs). Run with
 * `make bench`; nothing here is asserted.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "ferrule.h"

#define REPEATS 7

static int fail(ferrule_error *err, const char *what);

static void noop(void *user_data, ferrule_tool_call *call) {
    (void)user_data;
    ferrule_error_free(ferrule_tool_call_complete(call, "\"ok\"", 4));
}

/* W1's model: the call of `noop` until the last round, then the answer. The
 * request JSON ends with its round: `..."turn":N}`. */
#define W1_ROUNDS 2000

static void w1_model(void *user_data, ferrule_model_request *request) {
    (void)user_data;
    ferrule_str json = ferrule_model_request_json(request);
    const char *turn = json.ptr + json.len;
    while (turn > json.ptr && turn[-1] != ':') turn--;
    if (atoi(turn) < W1_ROUNDS) {
        fail(ferrule_model_request_tool_call_delta(request, 0, "c1", 2, "noop", 4, "{}", 2), "tool_call_delta");
    } else {
        fail(ferrule_model_request_text_delta(request, "done", 4), "text_delta");
    }
    fail(ferrule_model_request_complete(request, NULL, 0), "complete");
}

static void count_event(void *user_data, const char *json, size_t len) {
    (void)json;
    (void)len;
    (*(size_t *)user_data)++;
}

static double now_seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int compare_doubles(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int fail(ferrule_error *err, const char *what) {
    if (!err) return 0;
    fprintf(stderr, "%s: %s\n", what, ferrule_error_message(err).ptr);
    ferrule_error_free(err);
    exit(1);
}

/* When each turn_start hook of a run was consulted. */
struct turn_times {
    double at[W1_ROUNDS + 1];
    size_t count;
};

/* A hook that goes on at once; at turn_start it notes the time. */
static void go_on(void *user_data, ferrule_hook *hook) {
    struct turn_times *times = user_data;
    ferrule_str stage = ferrule_hook_stage(hook);
    if (stage.len == 10 && memcmp(stage.ptr, "turn_start", 10) == 0 && times->count <= W1_ROUNDS) {
        times->at[times->count++] = now_seconds();
    }
    fail(ferrule_hook_respond(hook, "{}", 2), "hook_respond");
}

static ferrule_agent *build_with(const cJSON *config, const cJSON *schema, const char *options,
                                 const ferrule_model_spec *model, const char *hook_options, struct turn_times *times);

static ferrule_agent *build(const cJSON *config, const cJSON *schema, const char *options) {
    return build_with(config, schema, options, NULL, NULL, NULL);
}

/* Builds W1's or W2's agent with the noop tool; with hook_options (a
 * registration's JSON without its stages), a go_on hook on each stage. */
static ferrule_agent *build_with(const cJSON *config, const cJSON *schema, const char *options,
                                 const ferrule_model_spec *model, const char *hook_options, struct turn_times *times) {
    char *config_text = cJSON_PrintUnformatted(config);
    char *schema_text = cJSON_PrintUnformatted(schema);
    ferrule_agent_builder *builder = NULL;
    fail(ferrule_agent_builder_new(config_text, strlen(config_text), &builder), "builder");
    ferrule_tool_spec spec;
    memset(&spec, 0, sizeof spec);
    spec.struct_size = sizeof spec;
    spec.name = "noop";
    spec.name_len = 4;
    spec.description = "Does nothing.";
    spec.description_len = strlen(spec.description);
    spec.input_schema = schema_text;
    spec.input_schema_len = strlen(schema_text);
    spec.options = options;
    spec.options_len = strlen(options);
    spec.execute = noop;
    fail(ferrule_agent_builder_add_tool(builder, &spec), "add_tool");
    if (model) fail(ferrule_agent_builder_set_model(builder, model), "set_model");
    static const char *stages[] = {"run_start", "turn_start", "tool_call", "tool_result", "final_answer"};
    for (size_t i = 0; hook_options && i < sizeof stages / sizeof stages[0]; i++) {
        char registration[256];
        snprintf(registration, sizeof registration, "{\"stages\": [\"%s\"], %s}", stages[i], hook_options);
        fail(ferrule_agent_builder_add_hook(builder, registration, strlen(registration), go_on, times, NULL), "add_hook");
    }
    ferrule_agent *agent = NULL;
    fail(ferrule_agent_build(builder, &agent), "build");
    free(config_text);
    free(schema_text);
    return agent;
}

static double run_once(ferrule_agent *agent, int with_events) {
    size_t events = 0;
    ferrule_run *run = NULL;
    double started = now_seconds();
    fail(ferrule_agent_start(agent, "{\"prompt\": \"go\"}", 16, with_events ? count_event : NULL, &events, NULL, &run),
         "start");
    char *result = NULL;
    size_t len = 0;
    fail(ferrule_run_wait(run, &result, &len), "wait");
    double elapsed = now_seconds() - started;
    if (!strstr(result, "\"status\":\"completed\"")) {
        fprintf(stderr, "run did not complete: %.300s\n", result);
        exit(1);
    }
    ferrule_string_free(result);
    ferrule_run_free(run);
    return elapsed;
}

static double median_run(ferrule_agent *agent, int with_events) {
    double times[REPEATS];
    run_once(agent, with_events);
    for (int i = 0; i < REPEATS; i++) times[i] = run_once(agent, with_events);
    qsort(times, REPEATS, sizeof times[0], compare_doubles);
    return times[REPEATS / 2];
}

int main(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : "bench/workloads.json";
    FILE *file = fopen(path, "rb");
    if (!file) {
        fprintf(stderr, "cannot open %s\n", path);
        return 1;
    }
    static char text[1 << 16];
    size_t got = fread(text, 1, sizeof text - 1, file);
    fclose(file);
    text[got] = '\0';
    cJSON *workloads = cJSON_Parse(text);

    const char *keys[2] = {"w1", "w2"};
    const char *schemas[2] = {"open_schema", "schema"};
    const char *kinds[2][2] = {{"blocking", ""}, {"nonblocking", "{\"nonblocking\": true}"}};
    for (int w = 0; w < 2; w++) {
        cJSON *workload = cJSON_GetObjectItem(workloads, keys[w]);
        double rounds = cJSON_GetObjectItem(workload, "rounds")->valuedouble;
        double calls = cJSON_GetObjectItem(workload, "calls")->valuedouble;
        printf("%s\n", cJSON_GetObjectItem(workload, "description")->valuestring);
        for (int kind = 0; kind < 2; kind++) {
            ferrule_agent *agent =
                build(cJSON_GetObjectItem(workload, "config"), cJSON_GetObjectItem(workloads, schemas[w]), kinds[kind][1]);
            for (int with_events = 0; with_events < 2; with_events++) {
                double t = median_run(agent, with_events);
                printf("  c tool, %-11s, %-13s: run %8.2f ms  %7.2f us/round  %6.2f us/call\n", kinds[kind][0],
                       with_events ? "event sink" : "no event sink", t * 1e3, t * 1e6 / rounds, t * 1e6 / calls);
            }
            ferrule_agent_free(agent);
        }
    }
    cJSON *w1 = cJSON_GetObjectItem(workloads, "w1");
    cJSON *host_config = cJSON_Parse("{\"model\": {\"provider\": \"host\", \"name\": \"w1\"}, \"max_rounds\": 2000}");
    printf("W1 with a host model in C (each request answered at once)\n");
    for (int nonblocking = 0; nonblocking < 2; nonblocking++) {
        ferrule_model_spec model;
        memset(&model, 0, sizeof model);
        model.struct_size = sizeof model;
        model.name = "w1";
        model.name_len = 2;
        model.generate = w1_model;
        model.nonblocking = nonblocking;
        ferrule_agent *agent = build_with(host_config, cJSON_GetObjectItem(workloads, "open_schema"),
                                          "{\"nonblocking\": true}", &model, NULL, NULL);
        double t = median_run(agent, 0);
        printf("  c model, %-11s, c tool, nonblocking: run %8.2f ms  %7.2f us/round\n",
               nonblocking ? "nonblocking" : "blocking", t * 1e3, t * 1e6 / W1_ROUNDS);
        ferrule_agent_free(agent);
    }
    printf("W1 with a no-op C hook on every stage, c tool nonblocking (the plain figure: above)\n");
    const char *histories[2][2] = {{"whole history", "\"nonblocking\": true"},
                                   {"history none", "\"nonblocking\": true, \"history\": \"none\""}};
    for (int h = 0; h < 2; h++) {
        static struct turn_times times;
        ferrule_agent *agent = build_with(cJSON_GetObjectItem(w1, "config"), cJSON_GetObjectItem(workloads, "open_schema"),
                                          "{\"nonblocking\": true}", NULL, histories[h][1], &times);
        double early[REPEATS * 10], late[REPEATS * 10], runs[REPEATS];
        size_t n_early = 0, n_late = 0;
        run_once(agent, 0);
        for (int i = 0; i < REPEATS; i++) {
            times.count = 0;
            runs[i] = run_once(agent, 0);
            for (size_t t = 5; t < 15 && t < times.count; t++) early[n_early++] = times.at[t] - times.at[t - 1];
            for (size_t t = times.count > 10 ? times.count - 10 : 1; t < times.count; t++) late[n_late++] = times.at[t] - times.at[t - 1];
        }
        qsort(runs, REPEATS, sizeof runs[0], compare_doubles);
        qsort(early, n_early, sizeof early[0], compare_doubles);
        qsort(late, n_late, sizeof late[0], compare_doubles);
        if (n_early == 0 || n_late == 0) {
            fprintf(stderr, "the run had too few turns to time\n");
            exit(1);
        }
        printf("  c hooks, nonblocking, %-13s: run %8.2f ms  %7.2f us/round  %6.2f us/round@10  %6.2f us/round@2000\n",
               histories[h][0], runs[REPEATS / 2] * 1e3, runs[REPEATS / 2] * 1e6 / W1_ROUNDS, early[n_early / 2] * 1e6,
               late[n_late / 2] * 1e6);
        ferrule_agent_free(agent);
    }
    cJSON_Delete(host_config);
    cJSON_Delete(workloads);
    return 0;
}
