/*
 * Human approval across processes: a ferrule host in C whose send_email tool
 * needs approval. The run stops before any email goes out; the host writes the
 * run's state to a file and exits; later, another process resumes it with the
 * user's decisions.
 *
 *   approval start STATE_FILE
 *       Runs the prompt. When the run stops for approval, writes its state to
 *       STATE_FILE, lists the calls that wait, and exits with status 3.
 *   approval resume STATE_FILE DECISION...
 *       Resumes from STATE_FILE with one decision per waiting call:
 *       ID=yes, ID=no, ID=no:reason for the model; "always" and "never" instead of
 *       yes and no make the decision stand for that tool for the rest of the run.
 *
 * send_email appends each email it sends to outbox.txt in the current directory.
 * The scripted model drives it unless OPENAI_API_KEY is set. Exit status: 0 the
 * run completed, 3 it waits for decisions, 1 an error.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "ferrule.h"

#define STR(s) s, strlen(s)

static int check(ferrule_error *err, const char *what) {
    if (err == NULL) return 0;
    fprintf(stderr, "%s failed (code %u): %s\n", what, ferrule_error_code(err), ferrule_error_message(err).ptr);
    ferrule_error_free(err);
    return 1;
}

/* ---- tools -------------------------------------------------------------------- */

static void lookup_customer(void *user_data, ferrule_tool_call *call) {
    (void)user_data;
    const char *plan = strstr(ferrule_tool_call_arguments(call).ptr, "C-100") ? "Gold" : "Basic";
    char result[96];
    snprintf(result, sizeof result, "\"The customer is on the %s plan.\"", plan);
    check(ferrule_tool_call_complete(call, STR(result)), "complete");
}

/* Runs only once the user approved the call: the arguments passed the schema. */
static void send_email(void *user_data, ferrule_tool_call *call) {
    (void)user_data;
    cJSON *email = cJSON_Parse(ferrule_tool_call_arguments(call).ptr);
    const char *to = cJSON_GetStringValue(cJSON_GetObjectItem(email, "to"));
    const char *subject = cJSON_GetStringValue(cJSON_GetObjectItem(email, "subject"));
    FILE *outbox = fopen("outbox.txt", "a");
    if (outbox == NULL || to == NULL || subject == NULL) {
        if (outbox) fclose(outbox);
        cJSON_Delete(email);
        check(ferrule_tool_call_fail(call, STR("The outbox could not be opened.")), "fail");
        return;
    }
    fprintf(outbox, "to: %s; subject: %s\n", to, subject);
    fclose(outbox);
    /* The result is JSON built by cJSON: `to` is the model's text. */
    size_t size = strlen(to) + 16;
    char *text = malloc(size);
    snprintf(text, size, "Sent to %s.", to);
    cJSON *result = cJSON_CreateString(text);
    char *json = cJSON_PrintUnformatted(result);
    check(ferrule_tool_call_complete(call, STR(json)), "complete");
    free(json);
    cJSON_Delete(result);
    free(text);
    cJSON_Delete(email);
}

static const char CUSTOMER_SCHEMA[] =
    "{\"type\": \"object\", \"properties\": {\"customer_id\": {\"type\": \"string\"}},"
    " \"required\": [\"customer_id\"], \"additionalProperties\": false}";
static const char EMAIL_SCHEMA[] =
    "{\"type\": \"object\", \"properties\": {\"to\": {\"type\": \"string\"}, \"subject\": {\"type\": \"string\"},"
    " \"body\": {\"type\": \"string\"}}, \"required\": [\"to\", \"subject\", \"body\"], \"additionalProperties\": false}";

static int add_tool(ferrule_agent_builder *builder, const char *name, const char *description, const char *schema,
                    const char *options, ferrule_tool_fn execute) {
    ferrule_tool_spec spec = {0};
    spec.struct_size = sizeof spec;
    spec.name = name;
    spec.name_len = strlen(name);
    spec.description = description;
    spec.description_len = strlen(description);
    spec.input_schema = schema;
    spec.input_schema_len = strlen(schema);
    spec.options = options;
    spec.options_len = strlen(options);
    spec.execute = execute;
    return check(ferrule_agent_builder_add_tool(builder, &spec), "add_tool");
}

/* ---- the agent: built the same way in both processes -------------------------- */

static const char SCRIPTED_CONFIG[] =
    "{\"model\": {\"provider\": \"scripted\", \"script\": ["
    "  {\"tool_calls\": [{\"id\": \"call_1\", \"name\": \"lookup_customer\", \"arguments\": {\"customer_id\": \"C-100\"}}]},"
    "  {\"text\": \"I will email the customer, and the newsletter list too.\", \"tool_calls\": ["
    "     {\"id\": \"call_2\", \"name\": \"send_email\", \"arguments\":"
    "        {\"to\": \"ana@example.com\", \"subject\": \"Your plan\", \"body\": \"You are on the Gold plan.\"}},"
    "     {\"id\": \"call_3\", \"name\": \"send_email\", \"arguments\":"
    "        {\"to\": \"everyone@example.com\", \"subject\": \"Newsletter\", \"body\": \"Ana is on Gold!\"}}]},"
    "  {\"text\": \"I told Ana she is on the Gold plan.\"}]},"
    " \"system\": \"You are an account assistant. Ask before you send anything.\"}";

static const char REAL_CONFIG[] =
    "{\"model\": {\"provider\": \"openai\", \"name\": \"gpt-4.1-mini\"},"
    " \"system\": \"You are an account assistant. Use the tools.\"}";

static ferrule_agent *build_agent(void) {
    const char *key = getenv("OPENAI_API_KEY");
    const char *config = key && *key ? REAL_CONFIG : SCRIPTED_CONFIG;
    ferrule_agent_builder *builder = NULL;
    if (check(ferrule_agent_builder_new(STR(config), &builder), "builder_new")) return NULL;
    if (add_tool(builder, "lookup_customer", "Return the plan of one customer ID.", CUSTOMER_SCHEMA, "",
                 lookup_customer) ||
        add_tool(builder, "send_email", "Send an email.", EMAIL_SCHEMA, "{\"needs_approval\": true}", send_email)) {
        ferrule_agent_builder_free(builder);
        return NULL;
    }
    ferrule_agent *agent = NULL;
    if (check(ferrule_agent_build(builder, &agent), "build")) return NULL;
    return agent;
}

/* ---- running ------------------------------------------------------------------- */

static void on_event(void *user_data, const char *json, size_t len) {
    (void)user_data;
    (void)len;
    cJSON *event = cJSON_Parse(json);
    const char *type = cJSON_GetStringValue(cJSON_GetObjectItem(event, "type"));
    if (type && strcmp(type, "tool_execution_end") == 0) {
        cJSON *result = cJSON_GetObjectItem(cJSON_GetObjectItem(event, "result"), "content");
        const char *text = cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetArrayItem(result, 0), "text"));
        printf("  %s -> %s\n", cJSON_GetStringValue(cJSON_GetObjectItem(event, "name")), text ? text : "");
    }
    cJSON_Delete(event);
}

/* Runs `input` to the end. Interrupted: writes the state to `state_path` and
 * returns 3; completed: 0; otherwise 1. */
static int run(ferrule_agent *agent, const char *input, const char *state_path) {
    ferrule_run *handle = NULL;
    if (check(ferrule_agent_start(agent, STR(input), on_event, NULL, NULL, &handle), "start")) return 1;
    char *text = NULL;
    size_t len = 0;
    int failed = check(ferrule_run_wait(handle, &text, &len), "wait");
    ferrule_run_free(handle);
    if (failed) return 1;
    cJSON *result = cJSON_Parse(text);
    ferrule_string_free(text);
    const char *status = cJSON_GetStringValue(cJSON_GetObjectItem(result, "status"));
    int code = 1;
    if (status && strcmp(status, "interrupted") == 0) {
        char *state = cJSON_PrintUnformatted(cJSON_GetObjectItem(result, "state"));
        FILE *file = fopen(state_path, "w");
        if (file && fputs(state, file) >= 0 && fclose(file) == 0) {
            printf("waiting for approval (state in %s):\n", state_path);
            const cJSON *call;
            cJSON_ArrayForEach(call, cJSON_GetObjectItem(result, "interruptions")) {
                char *arguments = cJSON_PrintUnformatted(cJSON_GetObjectItem(call, "arguments"));
                printf("  %s %s %s\n", cJSON_GetStringValue(cJSON_GetObjectItem(call, "call_id")),
                       cJSON_GetStringValue(cJSON_GetObjectItem(call, "name")), arguments);
                free(arguments);
            }
            code = 3;
        } else {
            perror(state_path);
        }
        free(state);
    } else if (status && strcmp(status, "completed") == 0) {
        const cJSON *content = cJSON_GetObjectItem(cJSON_GetObjectItem(result, "final"), "content");
        printf("answer: %s\n", cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetArrayItem(content, 0), "text")));
        code = 0;
    } else {
        char *error = cJSON_PrintUnformatted(cJSON_GetObjectItem(result, "error"));
        fprintf(stderr, "the run ended %s: %s\n", status ? status : "?", error);
        free(error);
    }
    cJSON_Delete(result);
    return code;
}

static char *read_file(const char *path) {
    FILE *file = fopen(path, "rb");
    if (file == NULL) return NULL;
    fseek(file, 0, SEEK_END);
    long size = ftell(file);
    fseek(file, 0, SEEK_SET);
    char *text = size >= 0 ? malloc((size_t)size + 1) : NULL;
    size_t got = text ? fread(text, 1, (size_t)size, file) : 0;
    fclose(file);
    if (text) text[got] = '\0';
    return text;
}

/* {"resume": <state>, "decisions": {...}} from the state file and the decision
 * arguments; NULL (reported) when one is malformed. */
static char *resume_input(const char *state_path, int count, char **decisions) {
    char *state_text = read_file(state_path);
    cJSON *state = state_text ? cJSON_Parse(state_text) : NULL;
    free(state_text);
    if (state == NULL) {
        fprintf(stderr, "%s holds no state\n", state_path);
        return NULL;
    }
    cJSON *input = cJSON_CreateObject();
    cJSON_AddItemToObject(input, "resume", state);
    cJSON *by_call = cJSON_AddObjectToObject(input, "decisions");
    for (int i = 0; i < count; i++) {
        char *id = decisions[i], *verdict = strchr(id, '=');
        if (verdict == NULL) {
            fprintf(stderr, "a decision is ID=yes|no|always|never[:reason], not %s\n", id);
            cJSON_Delete(input);
            return NULL;
        }
        *verdict++ = '\0';
        char *reason = strchr(verdict, ':');
        if (reason) *reason++ = '\0';
        cJSON *decision = cJSON_AddObjectToObject(by_call, id);
        int approve = strcmp(verdict, "yes") == 0 || strcmp(verdict, "always") == 0;
        cJSON_AddBoolToObject(decision, "approve", approve);
        if (strcmp(verdict, "always") == 0 || strcmp(verdict, "never") == 0) cJSON_AddTrueToObject(decision, "always");
        if (reason) cJSON_AddStringToObject(decision, "message", reason);
    }
    char *text = cJSON_PrintUnformatted(input);
    cJSON_Delete(input);
    return text;
}

int main(int argc, char **argv) {
    int start = argc == 3 && strcmp(argv[1], "start") == 0;
    int resume = argc >= 3 && strcmp(argv[1], "resume") == 0;
    if (!start && !resume) {
        fprintf(stderr, "usage: %s start STATE_FILE | resume STATE_FILE ID=yes|no|always|never[:reason]...\n", argv[0]);
        return 1;
    }
    if (ferrule_abi_version() != FERRULE_ABI_VERSION) {
        fprintf(stderr, "ferrule ABI mismatch: library %u, header %u\n", ferrule_abi_version(), FERRULE_ABI_VERSION);
        return 1;
    }
    ferrule_agent *agent = build_agent();
    if (agent == NULL) return 1;
    int code = 1;
    if (start) {
        code = run(agent, "{\"prompt\": \"Tell customer C-100 (ana@example.com) which plan they are on.\"}", argv[2]);
    } else {
        char *input = resume_input(argv[2], argc - 3, argv + 3);
        if (input) code = run(agent, input, argv[2]);
        free(input);
    }
    ferrule_agent_free(agent);
    return code;
}
