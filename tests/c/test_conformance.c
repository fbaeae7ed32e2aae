/*
 * Runs every scenario in tests/conformance/ with tools implemented in C from their
 * declarative behaviours, and checks the expectations and event invariants.
 */
#include <dirent.h>

#include <cjson/cJSON.h>

#include "harness.h"

typedef struct {
    cJSON *behaviour; /* borrowed from the scenario document */
    ferrule_tool_call *call;
} tool_work;

static char *print_json(const cJSON *value) {
    return cJSON_PrintUnformatted(value);
}

static void complete_with(ferrule_tool_call *call, const cJSON *result) {
    char *text = print_json(result);
    ferrule_error_free(ferrule_tool_call_complete(call, STR(text)));
    free(text);
}

/* Cancel handlers that ran in the current scenario. */
static atomic_int cancel_handlers;

static void complete_when_cancelled(void *user_data) {
    ferrule_tool_call *call = user_data;
    atomic_fetch_add(&cancel_handlers, 1);
    ferrule_error_free(ferrule_tool_call_complete(call, STR("\"stopped after cancellation\"")));
}

/* The run being checked, once ferrule_agent_start returned it (tools that inject
 * wait for it). */
static _Atomic(ferrule_run *) current_run;

static void inject(const cJSON *message) {
    ferrule_run *run;
    while ((run = atomic_load(&current_run)) == NULL) harness_sleep_ms(1);
    char *text = print_json(message);
    ferrule_error *err = ferrule_run_inject(run, STR(text));
    if (err) fprintf(stderr, "  inject failed: %s\n", ferrule_error_message(err).ptr);
    ferrule_error_free(err);
    free(text);
}

static void do_work(cJSON *behaviour, ferrule_tool_call *call) {
    const cJSON *message = cJSON_GetObjectItem(behaviour, "inject");
    if (message) inject(message);
    if (cJSON_IsTrue(cJSON_GetObjectItem(behaviour, "never_complete"))) {
        while (!ferrule_tool_call_is_cancelled(call)) harness_sleep_ms(1);
        ferrule_error_free(ferrule_tool_call_complete(call, STR("\"completed after cancellation\"")));
        return;
    }
    cJSON *sleep_ms = cJSON_GetObjectItem(behaviour, "sleep_ms");
    if (cJSON_IsNumber(sleep_ms)) harness_sleep_ms((long)sleep_ms->valuedouble);
    cJSON *update;
    cJSON_ArrayForEach(update, cJSON_GetObjectItem(behaviour, "updates")) {
        char *text = print_json(update);
        ferrule_error_free(ferrule_tool_call_update(call, STR(text)));
        free(text);
    }
    cJSON *fail = cJSON_GetObjectItem(behaviour, "fail");
    if (cJSON_IsString(fail)) {
        ferrule_error_free(ferrule_tool_call_fail(call, STR(fail->valuestring)));
    } else if (cJSON_IsString(cJSON_GetObjectItem(behaviour, "result_json"))) {
        const char *raw = cJSON_GetObjectItem(behaviour, "result_json")->valuestring;
        ferrule_error_free(ferrule_tool_call_complete(call, STR(raw)));
    } else if (cJSON_IsTrue(cJSON_GetObjectItem(behaviour, "echo"))) {
        ferrule_str args = ferrule_tool_call_arguments(call);
        cJSON *text = cJSON_CreateString(args.ptr);
        complete_with(call, text);
        cJSON_Delete(text);
    } else {
        complete_with(call, cJSON_GetObjectItem(behaviour, "result"));
    }
}

static void *work_thread(void *arg) {
    tool_work *work = arg;
    do_work(work->behaviour, work->call);
    free(work);
    return NULL;
}

static void execute(void *user_data, ferrule_tool_call *call) {
    cJSON *behaviour = user_data;
    if (cJSON_IsTrue(cJSON_GetObjectItem(behaviour, "complete_on_cancel"))) {
        ferrule_error_free(ferrule_tool_call_on_cancel(call, complete_when_cancelled, call, NULL));
        return;
    }
    int off_thread = cJSON_IsTrue(cJSON_GetObjectItem(behaviour, "async")) ||
                     cJSON_GetObjectItem(behaviour, "sleep_ms") != NULL ||
                     cJSON_IsTrue(cJSON_GetObjectItem(behaviour, "never_complete"));
    if (!off_thread) {
        do_work(behaviour, call);
        return;
    }
    tool_work *work = malloc(sizeof *work);
    work->behaviour = behaviour;
    work->call = call;
    pthread_t thread;
    pthread_create(&thread, NULL, work_thread, work);
    pthread_detach(thread);
}

/* ---- hooks ------------------------------------------------------------------- */

/* One scenario hook: its description and the next of its decisions. Freed by
 * ferrule (free_user_data) with the agent. */
typedef struct {
    const cJSON *spec; /* borrowed from the scenario document */
    atomic_int next;
} hook_state;

/* Every consultation of the current run, in order: {"stage", "payload"}. */
static pthread_mutex_t hook_log_lock = PTHREAD_MUTEX_INITIALIZER;
static cJSON *hook_log;

static void respond_when_cancelled(void *user_data) {
    atomic_fetch_add(&cancel_handlers, 1);
    ferrule_error_free(ferrule_hook_respond(user_data, STR("{}")));
}

typedef struct {
    ferrule_hook *hook;
    char *decision;
} hook_work;

static void *respond_later(void *arg) {
    hook_work *work = arg;
    harness_sleep_ms(1);
    ferrule_error_free(ferrule_hook_respond(work->hook, STR(work->decision)));
    free(work->decision);
    free(work);
    return NULL;
}

static void decide(void *user_data, ferrule_hook *hook) {
    hook_state *state = user_data;
    cJSON *entry = cJSON_CreateObject();
    cJSON_AddStringToObject(entry, "stage", ferrule_hook_stage(hook).ptr);
    cJSON_AddItemToObject(entry, "payload", cJSON_Parse(ferrule_hook_payload(hook).ptr));
    pthread_mutex_lock(&hook_log_lock);
    cJSON_AddItemToArray(hook_log, entry);
    pthread_mutex_unlock(&hook_log_lock);
    if (cJSON_IsTrue(cJSON_GetObjectItem(state->spec, "never_respond"))) {
        ferrule_error_free(ferrule_hook_on_cancel(hook, respond_when_cancelled, hook, NULL));
        return;
    }
    const cJSON *decision = cJSON_GetArrayItem(cJSON_GetObjectItem(state->spec, "decisions"), atomic_fetch_add(&state->next, 1));
    char *text = decision ? print_json(decision) : strdup("{}");
    if (!cJSON_IsTrue(cJSON_GetObjectItem(state->spec, "async"))) {
        ferrule_error_free(ferrule_hook_respond(hook, STR(text)));
        free(text);
        return;
    }
    hook_work *work = malloc(sizeof *work);
    work->hook = hook;
    work->decision = text;
    pthread_t thread;
    pthread_create(&thread, NULL, respond_later, work);
    pthread_detach(thread);
}

/* Whether `got` has everything `want` has: objects by key (more keys allowed),
 * arrays element by element, other values equal. */
static int json_contains(const cJSON *want, const cJSON *got) {
    if (cJSON_IsObject(want)) {
        if (!cJSON_IsObject(got)) return 0;
        const cJSON *field;
        cJSON_ArrayForEach(field, want) {
            if (!json_contains(field, cJSON_GetObjectItem(got, field->string))) return 0;
        }
        return 1;
    }
    if (cJSON_IsArray(want)) {
        if (!cJSON_IsArray(got) || cJSON_GetArraySize(want) != cJSON_GetArraySize(got)) return 0;
        for (int i = 0; i < cJSON_GetArraySize(want); i++) {
            if (!json_contains(cJSON_GetArrayItem(want, i), cJSON_GetArrayItem(got, i))) return 0;
        }
        return 1;
    }
    return got && cJSON_Compare(want, got, 1);
}

/* ---- checking ---------------------------------------------------------------- */

static int failures;

#define EXPECT(cond, ...)                                   \
    do {                                                    \
        if (!(cond)) {                                      \
            fprintf(stderr, "  %s: ", scenario);            \
            fprintf(stderr, __VA_ARGS__);                   \
            fprintf(stderr, "\n");                          \
            failures++;                                     \
        }                                                   \
    } while (0)

static const char *event_type(const char *json, char *buf, size_t size) {
    cJSON *event = cJSON_Parse(json);
    const char *type = cJSON_GetStringValue(cJSON_GetObjectItem(event, "type"));
    snprintf(buf, size, "%s", type ? type : "?");
    cJSON_Delete(event);
    return buf;
}

static size_t count_type(event_log *log, const char *type) {
    char needle[96];
    snprintf(needle, sizeof needle, "\"type\":\"%s\"", type);
    return event_log_count(log, needle);
}

static void check_invariants(const char *scenario, event_log *log) {
    char type[64];
    EXPECT(log->count > 0 && strcmp(event_type(log->events[0], type, sizeof type), "run_start") == 0,
           "the first event is not run_start");
    EXPECT(log->count > 0 && strcmp(event_type(log->events[log->count - 1], type, sizeof type), "run_end") == 0,
           "the last event is not run_end");
    EXPECT(count_type(log, "run_end") == 1, "%zu run_end events", count_type(log, "run_end"));
    EXPECT(count_type(log, "tool_execution_start") == count_type(log, "tool_execution_end"),
           "%zu tool_execution_start but %zu tool_execution_end", count_type(log, "tool_execution_start"),
           count_type(log, "tool_execution_end"));
    EXPECT(count_type(log, "turn_start") == count_type(log, "turn_end"), "unbalanced turns");
}

static char *tool_text(const cJSON *message) {
    size_t size = 1;
    char *text = calloc(1, size);
    cJSON *part;
    cJSON_ArrayForEach(part, cJSON_GetObjectItem(message, "content")) {
        const char *piece = cJSON_GetStringValue(cJSON_GetObjectItem(part, "text"));
        if (!piece) continue;
        size += strlen(piece);
        text = realloc(text, size);
        strcat(text, piece);
    }
    return text;
}

static void check_expectations(const char *scenario, const cJSON *expect, const cJSON *result, event_log *log) {
    const char *status = cJSON_GetStringValue(cJSON_GetObjectItem(result, "status"));
    const char *wanted = cJSON_GetStringValue(cJSON_GetObjectItem(expect, "status"));
    EXPECT(status && wanted && strcmp(status, wanted) == 0, "status %s, expected %s", status, wanted);

    const char *code = cJSON_GetStringValue(cJSON_GetObjectItem(expect, "error_code"));
    if (code) {
        const char *got = cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(result, "error"), "code"));
        EXPECT(got && strcmp(got, code) == 0, "error code %s, expected %s", got, code);
    }

    const cJSON *events = cJSON_GetObjectItem(expect, "events");
    if (events) {
        int i = 0;
        const cJSON *type;
        char got[64];
        EXPECT((size_t)cJSON_GetArraySize(events) == log->count, "%zu events, expected %d", log->count,
               cJSON_GetArraySize(events));
        cJSON_ArrayForEach(type, events) {
            if ((size_t)i >= log->count) break;
            event_type(log->events[i], got, sizeof got);
            EXPECT(strcmp(got, type->valuestring) == 0, "event %d is %s, expected %s", i, got, type->valuestring);
            i++;
        }
    }

    const cJSON *count;
    cJSON_ArrayForEach(count, cJSON_GetObjectItem(expect, "event_counts")) {
        size_t got = count_type(log, count->string);
        EXPECT(got == (size_t)count->valuedouble, "%zu %s events, expected %d", got, count->string, count->valueint);
    }

    const cJSON *messages = cJSON_GetObjectItem(result, "messages");
    const cJSON *transcript = cJSON_GetObjectItem(expect, "transcript");
    if (transcript) {
        char *got = print_json(messages);
        EXPECT(cJSON_Compare(transcript, messages, 1), "transcript differs; got %s", got);
        free(got);
    }

    const cJSON *results = cJSON_GetObjectItem(expect, "results");
    if (results) {
        const cJSON *message, *want = results->child;
        int index = 0;
        cJSON_ArrayForEach(message, messages) {
            const char *role = cJSON_GetStringValue(cJSON_GetObjectItem(message, "role"));
            if (!role || strcmp(role, "tool") != 0) continue;
            if (!want) {
                EXPECT(0, "more tool results than expected");
                break;
            }
            const char *id = cJSON_GetStringValue(cJSON_GetObjectItem(message, "tool_call_id"));
            const char *want_id = cJSON_GetStringValue(cJSON_GetObjectItem(want, "tool_call_id"));
            char *text = tool_text(message);
            const char *needle = cJSON_GetStringValue(cJSON_GetObjectItem(want, "text_contains"));
            EXPECT(id && want_id && strcmp(id, want_id) == 0, "result %d has id %s, expected %s", index, id, want_id);
            EXPECT(cJSON_IsTrue(cJSON_GetObjectItem(message, "is_error")) ==
                       cJSON_IsTrue(cJSON_GetObjectItem(want, "is_error")),
                   "result %d error flag differs (text: %s)", index, text);
            EXPECT(!needle || strstr(text, needle), "result %d text \"%s\" lacks \"%s\"", index, text, needle);
            free(text);
            want = want->next;
            index++;
        }
        EXPECT(want == NULL, "fewer tool results than expected");
    }

    static const char *const exact[] = {"interruptions", "usage", "rounds"};
    for (size_t i = 0; i < sizeof exact / sizeof exact[0]; i++) {
        const cJSON *want = cJSON_GetObjectItem(expect, exact[i]);
        if (!want) continue;
        const cJSON *got = cJSON_GetObjectItem(result, exact[i]);
        char *text = got ? print_json(got) : NULL;
        EXPECT(got && cJSON_Compare(want, got, 1), "%s differs; got %s", exact[i], text ? text : "(none)");
        free(text);
    }

    const cJSON *output = cJSON_GetObjectItem(expect, "output");
    if (output) {
        const cJSON *got = cJSON_GetObjectItem(result, "output");
        char *text = got ? print_json(got) : NULL;
        EXPECT(got && cJSON_Compare(output, got, 1), "output differs; got %s", text ? text : "(none)");
        free(text);
    }
    const cJSON *hook_calls = cJSON_GetObjectItem(expect, "hook_calls");
    if (hook_calls) {
        pthread_mutex_lock(&hook_log_lock);
        char *got = print_json(hook_log);
        EXPECT(json_contains(hook_calls, hook_log), "hook calls differ; got %s", got);
        free(got);
        pthread_mutex_unlock(&hook_log_lock);
    }

    const cJSON *handlers = cJSON_GetObjectItem(expect, "cancel_handlers");
    if (cJSON_IsNumber(handlers)) {
        wait_for_count(&cancel_handlers, handlers->valueint, 10000);
        EXPECT(atomic_load(&cancel_handlers) == handlers->valueint, "%d cancel handlers ran, expected %d",
               atomic_load(&cancel_handlers), handlers->valueint);
    }
}

/* ---- running one scenario ----------------------------------------------------- */

static char *read_file(const char *path) {
    FILE *file = fopen(path, "rb");
    if (!file) return NULL;
    fseek(file, 0, SEEK_END);
    long size = ftell(file);
    fseek(file, 0, SEEK_SET);
    char *text = malloc((size_t)size + 1);
    size_t got = fread(text, 1, (size_t)size, file);
    text[got] = '\0';
    fclose(file);
    return text;
}

/* Builds the scenario's agent from its config and `tools` (the scenario's own
 * unless a resume step gives others); NULL on failure (reported). */
static ferrule_agent *build_agent(const char *scenario, const cJSON *doc, const cJSON *tools) {
    char *config = print_json(cJSON_GetObjectItem(doc, "config"));
    ferrule_agent_builder *builder = NULL;
    ferrule_error *err = ferrule_agent_builder_new(STR(config), &builder);
    free(config);
    EXPECT(err == NULL, "config rejected: %s", ferrule_error_message(err).ptr);
    if (err) {
        ferrule_error_free(err);
        return NULL;
    }
    const cJSON *tool;
    cJSON_ArrayForEach(tool, tools) {
        const char *name = cJSON_GetStringValue(cJSON_GetObjectItem(tool, "name"));
        const char *description = cJSON_GetStringValue(cJSON_GetObjectItem(tool, "description"));
        cJSON *schema = cJSON_GetObjectItem(tool, "input_schema");
        cJSON *options = cJSON_GetObjectItem(tool, "options");
        char *schema_text = schema ? print_json(schema) : NULL;
        char *options_text = options ? print_json(options) : NULL;
        ferrule_tool_spec spec = harness_spec(name, options_text ? options_text : "", execute,
                                              cJSON_GetObjectItem(tool, "behaviour"), NULL);
        spec.description = description ? description : "";
        spec.description_len = strlen(spec.description);
        if (schema_text) {
            spec.input_schema = schema_text;
            spec.input_schema_len = strlen(schema_text);
        }
        err = ferrule_agent_builder_add_tool(builder, &spec);
        EXPECT(err == NULL, "tool %s rejected: %s", name, ferrule_error_message(err).ptr);
        ferrule_error_free(err);
        free(schema_text);
        free(options_text);
    }
    const cJSON *hook;
    cJSON_ArrayForEach(hook, cJSON_GetObjectItem(doc, "hooks")) {
        char *stages = print_json(cJSON_GetObjectItem(hook, "stages"));
        hook_state *state = calloc(1, sizeof *state);
        state->spec = hook;
        err = ferrule_agent_builder_add_hook(builder, STR(stages), decide, state, free);
        EXPECT(err == NULL, "hook %s rejected: %s", stages, ferrule_error_message(err).ptr);
        if (err) free(state);
        ferrule_error_free(err);
        free(stages);
    }
    ferrule_agent *agent = NULL;
    err = ferrule_agent_build(builder, &agent);
    EXPECT(err == NULL, "build failed: %s", ferrule_error_message(err).ptr);
    ferrule_error_free(err);
    return agent;
}

/* The codes a start can fail with, by the names scenarios use. */
static const char *start_code_name(uint32_t code) {
    switch (code) {
    case FERRULE_ERROR_NULL_ARG: return "NULL_ARG";
    case FERRULE_ERROR_INVALID_UTF8: return "INVALID_UTF8";
    case FERRULE_ERROR_INVALID_JSON: return "INVALID_JSON";
    case FERRULE_ERROR_INVALID_ARG: return "INVALID_ARG";
    case FERRULE_ERROR_RESOURCE_EXHAUSTED: return "RESOURCE_EXHAUSTED";
    default: return "another code";
    }
}

/* Starts `input` on `agent` and checks the run against `expect`, or, with
 * `start_error`, that the start is refused with that code and text. Returns the
 * run result (the caller deletes it), or NULL. */
static cJSON *run_step(const char *scenario, ferrule_agent *agent, const cJSON *input, const cJSON *expect,
                       const cJSON *start_error) {
    event_log log;
    event_log_init(&log);
    atomic_store(&cancel_handlers, 0);
    pthread_mutex_lock(&hook_log_lock);
    cJSON_Delete(hook_log);
    hook_log = cJSON_CreateArray();
    pthread_mutex_unlock(&hook_log_lock);
    char *input_text = print_json(input);
    ferrule_run *run = NULL;
    ferrule_error *err = ferrule_agent_start(agent, STR(input_text), event_log_on_event, &log, event_log_free, &run);
    free(input_text);
    cJSON *result = NULL;
    if (start_error) {
        const char *code = cJSON_GetStringValue(cJSON_GetObjectItem(start_error, "code"));
        const char *needle = cJSON_GetStringValue(cJSON_GetObjectItem(start_error, "contains"));
        const char *message = err ? ferrule_error_message(err).ptr : "";
        const char *got = err ? start_code_name(ferrule_error_code(err)) : "success";
        EXPECT(code && strcmp(got, code) == 0, "start gave %s (%s), expected %s", got, message, code);
        EXPECT(!needle || strstr(message, needle), "start error \"%s\" lacks \"%s\"", message, needle);
        if (err) {
            /* A refused start leaves the user data with the host. */
            EXPECT(atomic_load(&log.freed) == 0, "a refused start freed the event user data");
        } else {
            ferrule_string_free(harness_wait(run));
            ferrule_run_free(run);
        }
    } else {
        EXPECT(err == NULL, "start failed: %s", ferrule_error_message(err).ptr);
        if (!err) {
            atomic_store(&current_run, run);
            char *result_text = harness_wait(run);
            atomic_store(&current_run, NULL);
            result = cJSON_Parse(result_text);
            EXPECT(result != NULL, "the run result is not JSON");
            if (result) {
                check_invariants(scenario, &log);
                check_expectations(scenario, expect, result, &log);
            }
            ferrule_string_free(result_text);
            ferrule_run_free(run);
        }
    }
    ferrule_error_free(err);
    /* Tools that completed after a timeout may still run; wait for their threads
     * to finish with the behaviour before the document goes. */
    harness_sleep_ms(20);
    event_log_destroy(&log);
    return result;
}

/* The input that resumes from `state` with the step's decisions; the step's
 * `state_patch` fields replace the state's. */
static cJSON *resume_input(const cJSON *state, const cJSON *step) {
    cJSON *copy = cJSON_Duplicate(state, 1);
    const cJSON *field;
    cJSON_ArrayForEach(field, cJSON_GetObjectItem(step, "state_patch")) {
        cJSON_DeleteItemFromObject(copy, field->string);
        cJSON_AddItemToObject(copy, field->string, cJSON_Duplicate(field, 1));
    }
    cJSON *input = cJSON_CreateObject();
    cJSON_AddItemToObject(input, "resume", copy);
    const cJSON *decisions = cJSON_GetObjectItem(step, "decisions");
    cJSON_AddItemToObject(input, "decisions", decisions ? cJSON_Duplicate(decisions, 1) : cJSON_CreateObject());
    return input;
}

static void run_scenario(const char *scenario, const char *path) {
    char *text = read_file(path);
    cJSON *doc = cJSON_Parse(text);
    free(text);
    EXPECT(doc != NULL, "not valid JSON");
    if (!doc) return;
    const cJSON *tools = cJSON_GetObjectItem(doc, "tools");
    ferrule_agent *agent = build_agent(scenario, doc, tools);
    if (!agent) {
        cJSON_Delete(doc);
        return;
    }
    cJSON *result = run_step(scenario, agent, cJSON_GetObjectItem(doc, "input"), cJSON_GetObjectItem(doc, "expect"), NULL);
    /* Each resume step goes on from the last state a run gave. */
    const cJSON *step;
    cJSON_ArrayForEach(step, cJSON_GetObjectItem(doc, "resumes")) {
        const cJSON *state = cJSON_GetObjectItem(result, "state");
        EXPECT(cJSON_IsObject(state), "no state to resume from");
        if (!cJSON_IsObject(state)) break;
        cJSON *input = resume_input(state, step);
        ferrule_agent *on = agent;
        if (cJSON_IsTrue(cJSON_GetObjectItem(step, "new_agent"))) {
            const cJSON *step_tools = cJSON_GetObjectItem(step, "tools");
            on = build_agent(scenario, doc, step_tools ? step_tools : tools);
        }
        cJSON *next = on ? run_step(scenario, on, input, cJSON_GetObjectItem(step, "expect"),
                                    cJSON_GetObjectItem(step, "start_error"))
                         : NULL;
        if (on && on != agent) ferrule_agent_free(on);
        cJSON_Delete(input);
        if (next) {
            cJSON_Delete(result);
            result = next;
        }
    }
    cJSON_Delete(result);
    ferrule_agent_free(agent);
    cJSON_Delete(doc);
}

static int by_name(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv) {
    const char *dir_path = argc > 1 ? argv[1] : FERRULE_CONFORMANCE_DIR;
    DIR *dir = opendir(dir_path);
    if (!dir) {
        fprintf(stderr, "cannot open %s\n", dir_path);
        return 1;
    }
    char *names[256];
    size_t count = 0;
    struct dirent *entry;
    while ((entry = readdir(dir)) != NULL && count < 256) {
        size_t len = strlen(entry->d_name);
        if (len > 5 && strcmp(entry->d_name + len - 5, ".json") == 0) names[count++] = strdup(entry->d_name);
    }
    closedir(dir);
    qsort(names, count, sizeof names[0], by_name);

    size_t passed = 0, failed = 0;
    for (size_t i = 0; i < count; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir_path, names[i]);
        int before = failures;
        run_scenario(names[i], path);
        int ok = failures == before;
        printf("%s %s\n", ok ? "ok  " : "FAIL", names[i]);
        fflush(stdout);
        if (ok) passed++; else failed++;
        free(names[i]);
    }
    printf("%zu passed, %zu failed\n", passed, failed);
    cJSON_Delete(hook_log);
    return failed == 0 && passed > 0 ? 0 : 1;
}
