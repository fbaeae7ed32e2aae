/*
 * An agent on the host's own model ("provider": "host"): a stand-in for an
 * on-device or local engine, written in C, that streams its answer from a
 * thread of its own. Its first answer calls the host tool lookup_customer; its
 * second says what the tool found. Everything after the model (the call's
 * validation, the tool, the events) is ferrule's, as with any provider.
 *
 * Build and run: the C tests build and run it (tests/c/CMakeLists.txt).
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ferrule.h"

#define STR(s) s, strlen(s)

static int check(ferrule_error *err, const char *what) {
    if (err == NULL) return 0;
    fprintf(stderr, "%s failed (code %u): %s\n", what, ferrule_error_code(err), ferrule_error_message(err).ptr);
    ferrule_error_free(err);
    return 1;
}

static void lookup_customer(void *user_data, ferrule_tool_call *call) {
    (void)user_data;
    const char *plan = strstr(ferrule_tool_call_arguments(call).ptr, "C-100") ? "Gold" : "Basic";
    char result[96];
    snprintf(result, sizeof result, "\"C-100 is on the %s plan.\"", plan);
    check(ferrule_tool_call_complete(call, STR(result)), "complete the call");
}

/* ---- the model ---------------------------------------------------------------- */

/* What the "engine" answers: read from the request's new messages (an engine
 * that keeps its own cache reads only those), streamed from its own thread. */
static void *answer(void *arg) {
    ferrule_model_request *request = arg;
    ferrule_str fresh = ferrule_model_request_new_messages_json(request);
    const char *tool_result = strstr(fresh.ptr, "\"role\":\"tool\"");
    if (tool_result == NULL) {
        check(ferrule_model_request_text_delta(request, STR("Let me look that up. ")), "text");
        /* A call in pieces, without an id: ferrule makes one up. */
        check(ferrule_model_request_tool_call_delta(request, 0, NULL, 0, STR("lookup_customer"),
                                                    STR("{\"customer_id\":")),
              "call");
        check(ferrule_model_request_tool_call_delta(request, 0, NULL, 0, NULL, 0, STR("\"C-100\"}")), "call");
    } else {
        const char *gold = strstr(tool_result, "Gold");
        check(ferrule_model_request_text_delta(request, STR("C-100 is on the ")), "text");
        check(ferrule_model_request_text_delta(request, gold ? "Gold" : "Basic", gold ? 4 : 5), "text");
        check(ferrule_model_request_text_delta(request, STR(" plan.")), "text");
    }
    check(ferrule_model_request_usage(request, 12, 8, 0), "usage");
    check(ferrule_model_request_complete(request, NULL, 0), "complete");
    return NULL;
}

/* The model's callback is nonblocking: it hands the request to a thread and
 * returns at once. */
static void generate(void *user_data, ferrule_model_request *request) {
    (void)user_data;
    pthread_t thread;
    if (pthread_create(&thread, NULL, answer, request) != 0) {
        check(ferrule_model_request_fail(request, FERRULE_ERROR_RESOURCE_EXHAUSTED, STR("no thread"), true), "fail");
        return;
    }
    pthread_detach(thread);
}

static void print_event(void *user_data, const char *json, size_t len) {
    (void)user_data;
    if (strstr(json, "\"type\":\"message_delta\"") || strstr(json, "\"type\":\"tool_execution_end\"")) {
        printf("event: %.*s\n", (int)len, json);
    }
}

int main(void) {
    const char *config = "{\"model\": {\"provider\": \"host\", \"name\": \"pocket-engine\"},"
                         " \"system\": \"Answer questions about customers.\"}";
    ferrule_agent_builder *builder = NULL;
    if (check(ferrule_agent_builder_new(STR(config), &builder), "builder")) return 1;
    ferrule_tool_spec lookup = {
        .struct_size = sizeof lookup,
        .name = "lookup_customer",
        .name_len = 15,
        .description = "Looks a customer's plan up.",
        .description_len = 27,
        .input_schema = "{\"type\": \"object\", \"properties\": {\"customer_id\": {\"type\": \"string\"}},"
                        " \"required\": [\"customer_id\"]}",
        .execute = lookup_customer,
    };
    lookup.input_schema_len = strlen(lookup.input_schema);
    ferrule_model_spec model = {
        .struct_size = sizeof model,
        .name = "pocket-engine",
        .name_len = 13,
        .generate = generate,
        .nonblocking = true,
    };
    ferrule_agent *agent = NULL;
    if (check(ferrule_agent_builder_add_tool(builder, &lookup), "add tool") ||
        check(ferrule_agent_builder_set_model(builder, &model), "set model") ||
        check(ferrule_agent_build(builder, &agent), "build")) {
        return 1;
    }
    ferrule_run *run = NULL;
    if (check(ferrule_agent_start(agent, STR("{\"prompt\": \"Which plan is C-100 on?\"}"), print_event, NULL, NULL,
                                  &run),
              "start")) {
        return 1;
    }
    char *result = NULL;
    size_t len = 0;
    int failed = check(ferrule_run_wait(run, &result, &len), "wait");
    if (!failed) {
        const char *final = strstr(result, "\"final\":");
        printf("%s\n", final && strstr(final, "C-100 is on the Gold plan.") ? "answer: C-100 is on the Gold plan."
                                                                              : result);
        failed = !(final && strstr(final, "Gold plan."));
        ferrule_string_free(result);
    }
    ferrule_run_free(run);
    ferrule_agent_free(agent);
    return failed;
}
