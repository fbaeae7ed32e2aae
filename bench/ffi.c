/*
 * W1 and W2 (DESIGN section 7) with the tool in C: the same workloads as
 * bench/loop.rs, through the C ABI with a C callback that completes at once,
 * registered once as a blocking tool (the callback runs on a tool callback
 * thread) and once as a nonblocking one (it runs on the run's own thread).
 * Then W1 with the model in C too (a host model, "provider": "host", that
 * answers each request at once with W1's call, then "done"), blocking and
 * nonblocking, beside the scripted model's W1.
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

static ferrule_agent *build_with(const cJSON *config, const cJSON *schema, const char *options,
                                 const ferrule_model_spec *model);

static ferrule_agent *build(const cJSON *config, const cJSON *schema, const char *options) {
    return build_with(config, schema, options, NULL);
}

static ferrule_agent *build_with(const cJSON *config, const cJSON *schema, const char *options,
                                 const ferrule_model_spec *model) {
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
                                          "{\"nonblocking\": true}", &model);
        double t = median_run(agent, 0);
        printf("  c model, %-11s, c tool, nonblocking: run %8.2f ms  %7.2f us/round\n",
               nonblocking ? "nonblocking" : "blocking", t * 1e3, t * 1e6 / W1_ROUNDS);
        ferrule_agent_free(agent);
    }
    (void)w1;
    cJSON_Delete(host_config);
    cJSON_Delete(workloads);
    return 0;
}
