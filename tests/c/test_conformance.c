/*
 * The C runner of the conformance scenarios: runs every scenario in
 * tests/conformance/ with tools and hooks implemented in C from their declared
 * behaviours, and writes what it observed (events, result, hook consultations,
 * cancel handlers, refused starts) to OUT_DIR/<scenario>.json for the one judge,
 * ferrule-conformance (tests/conformance/README.md).
 *
 * With --host-model, every scripted model of the scenarios is replaced by a
 * host model in C ("provider": "host", ferrule_agent_builder_set_model) that
 * replays the same script, and the judge holds the runs to the same
 * expectations.
 *
 * Usage: test_conformance [--host-model] OUT_DIR [SCENARIOS_DIR]
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
    } else if (cJSON_IsTrue(cJSON_GetObjectItem(behaviour, "attempt"))) {
        char said[32];
        snprintf(said, sizeof said, "attempt %u", (unsigned)ferrule_tool_call_attempt(call));
        cJSON *text = cJSON_CreateString(said);
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

/* ---- traces ------------------------------------------------------------------- */

/* Every span the tracer received while a traced scenario runs, and the
 * traceparent each call of the current step was given. */
static pthread_mutex_t trace_lock = PTHREAD_MUTEX_INITIALIZER;
static cJSON *span_log;
static cJSON *traceparents;

static void keep_span(void *user_data, const char *json, size_t len) {
    (void)user_data;
    pthread_mutex_lock(&trace_lock);
    /* A span may come after the tracer was removed: it is not kept. */
    if (span_log) cJSON_AddItemToArray(span_log, cJSON_ParseWithLength(json, len));
    pthread_mutex_unlock(&trace_lock);
}

static void note_traceparent(ferrule_tool_call *call) {
    ferrule_str id = ferrule_tool_call_id(call), traceparent = ferrule_tool_call_traceparent(call);
    char key[256], text[256];
    snprintf(key, sizeof key, "%.*s", (int)id.len, id.ptr);
    snprintf(text, sizeof text, "%.*s", (int)traceparent.len, traceparent.ptr ? traceparent.ptr : "");
    pthread_mutex_lock(&trace_lock);
    cJSON_DeleteItemFromObject(traceparents, key);
    cJSON_AddStringToObject(traceparents, key, text);
    pthread_mutex_unlock(&trace_lock);
}

/* The spans of the trace of the run `run_id`, once its invoke_agent span came
 * (the last of a trace to end; up to 10 s), in the order they ended. */
static cJSON *trace_of(const char *run_id) {
    for (int waited = 0; waited < 10000; waited++) {
        pthread_mutex_lock(&trace_lock);
        const cJSON *span, *root = NULL;
        cJSON_ArrayForEach(span, span_log) {
            const cJSON *run = cJSON_GetObjectItem(cJSON_GetObjectItem(span, "attributes"), "ferrule.run.id");
            if (cJSON_IsString(run) && strcmp(run->valuestring, run_id) == 0) root = span;
        }
        cJSON *spans = NULL;
        const char *trace_id = root ? cJSON_GetStringValue(cJSON_GetObjectItem(root, "trace_id")) : NULL;
        if (trace_id) {
            spans = cJSON_CreateArray();
            cJSON_ArrayForEach(span, span_log) {
                const char *of = cJSON_GetStringValue(cJSON_GetObjectItem(span, "trace_id"));
                if (of && strcmp(of, trace_id) == 0) cJSON_AddItemToArray(spans, cJSON_Duplicate(span, 1));
            }
        }
        pthread_mutex_unlock(&trace_lock);
        if (spans) return spans;
        harness_sleep_ms(1);
    }
    return cJSON_CreateArray();
}

static void execute(void *user_data, ferrule_tool_call *call) {
    cJSON *behaviour = user_data;
    if (cJSON_IsTrue(cJSON_GetObjectItem(behaviour, "traceparent"))) note_traceparent(call);
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
    /* Read at once, the stage and payload are what each getter lends. */
    ferrule_str stage, payload;
    ferrule_hook_strings(hook, &stage, &payload);
    bool same = stage.ptr == ferrule_hook_stage(hook).ptr && payload.ptr == ferrule_hook_payload(hook).ptr &&
                stage.len == ferrule_hook_stage(hook).len && payload.len == ferrule_hook_payload(hook).len;
    cJSON_AddStringToObject(entry, "stage", same ? stage.ptr : "ferrule_hook_strings differs");
    cJSON_AddItemToObject(entry, "payload", cJSON_Parse(payload.ptr));
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

/* ---- the host model (--host-model) ------------------------------------------- */

static int host_model_mode;
#define HOST_MODEL "script"

/* The entry of `script` that answers the run's request `turn` (from 1), each
 * entry standing for `repeat` requests, as the scripted model counts; NULL
 * past the end. */
static const cJSON *script_entry(const cJSON *script, double turn) {
    const cJSON *entry;
    cJSON_ArrayForEach(entry, script) {
        const cJSON *repeat = cJSON_GetObjectItem(entry, "repeat");
        double times = cJSON_IsNumber(repeat) ? repeat->valuedouble : 1;
        if (turn <= times) return entry;
        turn -= times;
    }
    return NULL;
}

/* The provider error class a scripted HTTP status stands for (as the scripted
 * model classifies it). */
static uint32_t status_error(int status) {
    if (status == 401 || status == 403) return FERRULE_ERROR_PROVIDER_AUTH;
    if (status == 404) return FERRULE_ERROR_PROVIDER_NOT_FOUND;
    if (status == 429) return FERRULE_ERROR_PROVIDER_RATE_LIMITED;
    if (status == 503 || status == 529) return FERRULE_ERROR_PROVIDER_OVERLOADED;
    if (status >= 500 && status <= 599) return FERRULE_ERROR_PROVIDER_SERVER;
    return FERRULE_ERROR_PROVIDER_INVALID_REQUEST;
}

static uint64_t count_of(const cJSON *object, const char *key) {
    const cJSON *count = cJSON_GetObjectItem(object, key);
    return cJSON_IsNumber(count) ? (uint64_t)count->valuedouble : 0;
}

/* Streams the script entry's answer: thinking, text, then each call in one
 * piece, its usage, and its stop reason (or the error it stands for). */
static void play(const cJSON *entry, ferrule_model_request *request) {
    const cJSON *error = cJSON_GetObjectItem(entry, "error");
    if (error) {
        const cJSON *message = cJSON_GetObjectItem(error, "message");
        int status = (int)count_of(error, "status");
        char text[1024];
        snprintf(text, sizeof text, "scripted provider error (HTTP %d): %s", status,
                 cJSON_IsString(message) ? message->valuestring : "");
        ferrule_error_free(ferrule_model_request_fail(request, status_error(status), STR(text), false));
        return;
    }
    const cJSON *thinking = cJSON_GetObjectItem(entry, "thinking");
    if (cJSON_IsString(thinking)) ferrule_error_free(ferrule_model_request_thinking_delta(request, STR(thinking->valuestring)));
    const cJSON *text = cJSON_GetObjectItem(entry, "text");
    if (cJSON_IsString(text) && text->valuestring[0] != '\0')
        ferrule_error_free(ferrule_model_request_text_delta(request, STR(text->valuestring)));
    const cJSON *call;
    uint32_t index = 0;
    cJSON_ArrayForEach(call, cJSON_GetObjectItem(entry, "tool_calls")) {
        const char *id = cJSON_GetStringValue(cJSON_GetObjectItem(call, "id"));
        const char *name = cJSON_GetStringValue(cJSON_GetObjectItem(call, "name"));
        const cJSON *arguments = cJSON_GetObjectItem(call, "arguments");
        /* A string is the argument text as it is; another value, its JSON. */
        char *printed = arguments == NULL ? strdup("{}")
                        : cJSON_IsString(arguments) ? strdup(arguments->valuestring)
                                                     : print_json(arguments);
        ferrule_error_free(ferrule_model_request_tool_call_delta(request, index++, id, id ? strlen(id) : 0, name,
                                                                 name ? strlen(name) : 0, STR(printed)));
        free(printed);
    }
    const cJSON *usage = cJSON_GetObjectItem(entry, "usage");
    ferrule_error_free(ferrule_model_request_usage(request, count_of(usage, "input_tokens"),
                                                   count_of(usage, "output_tokens"), count_of(usage, "cached_tokens")));
    const char *stop = cJSON_GetStringValue(cJSON_GetObjectItem(entry, "stop_reason"));
    ferrule_error_free(ferrule_model_request_complete(request, stop, stop ? strlen(stop) : 0));
}

/* The host model: the request's turn picks the script's entry. It runs on a
 * ferrule callback thread (not nonblocking), where it may sleep `delay_ms`. */
static void replay(void *user_data, ferrule_model_request *request) {
    cJSON *options = cJSON_Parse(ferrule_model_request_options_json(request).ptr);
    const cJSON *turn = cJSON_GetObjectItem(options, "turn");
    const cJSON *entry = script_entry(user_data, cJSON_IsNumber(turn) ? turn->valuedouble : 0);
    cJSON_Delete(options);
    if (!entry) {
        ferrule_error_free(ferrule_model_request_fail(request, FERRULE_ERROR_PROVIDER_INVALID_REQUEST,
                                                      STR("the script has no answer for this turn"), false));
        return;
    }
    long delay = (long)count_of(entry, "delay_ms");
    if (delay > 0) harness_sleep_ms(delay);
    play(entry, request);
}

/* Whether the replay can play every field of every entry of `script`. */
static int playable(const cJSON *script) {
    static const char *const fields[] = {"text",  "thinking", "tool_calls", "stop_reason",
                                         "usage", "delay_ms", "repeat",     "error"};
    const cJSON *entry, *field;
    cJSON_ArrayForEach(entry, script) {
        cJSON_ArrayForEach(field, entry) {
            size_t known = 0;
            while (known < sizeof fields / sizeof fields[0] && strcmp(fields[known], field->string) != 0) known++;
            if (known == sizeof fields / sizeof fields[0]) return 0;
        }
    }
    return 1;
}

static void free_script(void *script) {
    cJSON_Delete(script);
}

/* The directory the scenarios are read from. */
static const char *scenarios_dir = FERRULE_CONFORMANCE_DIR;

/* The config as text, a relative cassette path (`model.record.path`) made
 * the scenario directory's. In --host-model mode a scripted model becomes the
 * host model, and `*script` the script it replays (the caller's); else NULL. */
static char *model_config(const cJSON *config, cJSON **script) {
    cJSON *copy = cJSON_Duplicate(config, 1);
    cJSON *model = cJSON_GetObjectItem(copy, "model");
    cJSON *record = cJSON_GetObjectItem(model, "record");
    const char *cassette = cJSON_GetStringValue(cJSON_GetObjectItem(record, "path"));
    if (cassette && cassette[0] != '/') {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", scenarios_dir, cassette);
        cJSON_ReplaceItemInObject(record, "path", cJSON_CreateString(path));
    }
    const char *provider = cJSON_GetStringValue(cJSON_GetObjectItem(model, "provider"));
    *script = NULL;
    if (host_model_mode && provider && strcmp(provider, "scripted") == 0) {
        *script = cJSON_DetachItemFromObject(model, "script");
        if (!*script) *script = cJSON_CreateArray();
        cJSON_ReplaceItemInObject(model, "provider", cJSON_CreateString("host"));
        cJSON_DeleteItemFromObject(model, "name");
        cJSON_AddStringToObject(model, "name", HOST_MODEL);
    }
    char *text = print_json(copy);
    cJSON_Delete(copy);
    return text;
}

/* ---- observing ---------------------------------------------------------------- */

/* A problem of the runner itself (the scenario could not be set up), recorded
 * in the step so that the judge reports it. */
static cJSON *runner_error(const char *what, const ferrule_error *err) {
    char text[1024];
    snprintf(text, sizeof text, "%s: %s", what, err ? ferrule_error_message(err).ptr : "");
    cJSON *step = cJSON_CreateObject();
    cJSON_AddStringToObject(step, "runner_error", text);
    return step;
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

static ferrule_agent *build_agent(const cJSON *doc, const cJSON *tools, cJSON **problem);

/* Adds the agents `doc` lists to `builder`, each built first from its own
 * config, tools and agents. */
static void add_agents(ferrule_agent_builder *builder, const cJSON *doc, cJSON **problem) {
    const cJSON *item;
    cJSON_ArrayForEach(item, cJSON_GetObjectItem(doc, "agents")) {
        ferrule_agent *child = build_agent(item, cJSON_GetObjectItem(item, "tools"), problem);
        if (!child) continue;
        const char *name = cJSON_GetStringValue(cJSON_GetObjectItem(item, "name"));
        const char *description = cJSON_GetStringValue(cJSON_GetObjectItem(item, "description"));
        const char *mode = cJSON_GetStringValue(cJSON_GetObjectItem(item, "mode"));
        cJSON *options = cJSON_GetObjectItem(item, "options");
        char *options_text = options ? print_json(options) : NULL;
        ferrule_agent_tool_spec spec = {
            .struct_size = sizeof spec,
            .name = name ? name : "",
            .name_len = name ? strlen(name) : 0,
            .description = description ? description : "",
            .description_len = description ? strlen(description) : 0,
            .agent = child,
            .mode = mode ? mode : "",
            .mode_len = mode ? strlen(mode) : 0,
            .options = options_text ? options_text : "",
            .options_len = options_text ? strlen(options_text) : 0,
        };
        ferrule_error *err = ferrule_agent_builder_add_agent(builder, &spec);
        if (err && !*problem) *problem = runner_error("an agent was rejected", err);
        ferrule_error_free(err);
        free(options_text);
        ferrule_agent_free(child); /* the builder holds its own */
    }
}

/* Builds the scenario's agent (or one of its `agents`, whose document has the
 * same fields) from its config and `tools` (the scenario's own unless a resume
 * step gives others), with its agents; NULL on failure, with `*problem` the
 * step that says why. */
static ferrule_agent *build_agent(const cJSON *doc, const cJSON *tools, cJSON **problem) {
    cJSON *script;
    char *config = model_config(cJSON_GetObjectItem(doc, "config"), &script);
    ferrule_agent_builder *builder = NULL;
    ferrule_error *err = ferrule_agent_builder_new(STR(config), &builder);
    free(config);
    if (err) {
        *problem = runner_error("config rejected", err);
        ferrule_error_free(err);
        cJSON_Delete(script);
        return NULL;
    }
    if (script && !playable(script)) {
        if (!*problem) *problem = runner_error("a host model cannot replay the script", NULL);
        cJSON_Delete(script);
        script = NULL;
    }
    if (script) {
        ferrule_model_spec model = {.struct_size = sizeof model, .name = HOST_MODEL, .name_len = strlen(HOST_MODEL),
                                    .generate = replay, .user_data = script, .free_user_data = free_script};
        err = ferrule_agent_builder_set_model(builder, &model);
        if (err && !*problem) *problem = runner_error("the model was rejected", err);
        if (err) cJSON_Delete(script);
        ferrule_error_free(err);
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
        if (err && !*problem) *problem = runner_error("a tool was rejected", err);
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
        if (err && !*problem) *problem = runner_error("a hook was rejected", err);
        if (err) free(state);
        ferrule_error_free(err);
        free(stages);
    }
    add_agents(builder, doc, problem);
    ferrule_agent *agent = NULL;
    err = ferrule_agent_build(builder, &agent);
    if (err && !*problem) *problem = runner_error("the build failed", err);
    ferrule_error_free(err);
    if (agent && *problem) {
        ferrule_agent_free(agent);
        agent = NULL;
    }
    return agent;
}

/* The events of a run, parsed, in the order the callback got them. */
static cJSON *parsed_events(const event_log *log) {
    cJSON *events = cJSON_CreateArray();
    for (size_t i = 0; i < log->count; i++) cJSON_AddItemToArray(events, cJSON_Parse(log->events[i]));
    return events;
}

/* Starts `input` on `agent` and observes the run (its events, result, hook
 * consultations and cancel handlers) or the refusal of its start (code and
 * message). `expect.cancel_handlers`, when given, is how many handlers to wait
 * for before counting them. */
static cJSON *run_step(ferrule_agent *agent, const cJSON *input, const cJSON *expect) {
    event_log log;
    event_log_init(&log);
    atomic_store(&cancel_handlers, 0);
    pthread_mutex_lock(&hook_log_lock);
    cJSON_Delete(hook_log);
    hook_log = cJSON_CreateArray();
    pthread_mutex_unlock(&hook_log_lock);
    pthread_mutex_lock(&trace_lock);
    cJSON_Delete(traceparents);
    traceparents = cJSON_CreateObject();
    pthread_mutex_unlock(&trace_lock);
    char *input_text = print_json(input);
    ferrule_run *run = NULL;
    ferrule_error *err = ferrule_agent_start(agent, STR(input_text), event_log_on_event, &log, event_log_free, &run);
    free(input_text);
    cJSON *step = cJSON_CreateObject();
    if (err) {
        cJSON *error = cJSON_AddObjectToObject(step, "start_error");
        cJSON_AddNumberToObject(error, "code", ferrule_error_code(err));
        cJSON_AddStringToObject(error, "message", ferrule_error_message(err).ptr);
        /* A refused start leaves the user data with the host. */
        if (atomic_load(&log.freed) != 0) cJSON_AddStringToObject(step, "runner_error", "a refused start freed the event user data");
        ferrule_error_free(err);
    } else {
        atomic_store(&current_run, run);
        char *result_text = harness_wait(run);
        atomic_store(&current_run, NULL);
        if (span_log) { /* set and unset on this thread */
            ferrule_str id = ferrule_run_id(run);
            char run_id[64];
            snprintf(run_id, sizeof run_id, "%.*s", (int)id.len, id.ptr);
            cJSON_AddItemToObject(step, "spans", trace_of(run_id));
            pthread_mutex_lock(&trace_lock);
            cJSON_AddItemToObject(step, "traceparents", cJSON_Duplicate(traceparents, 1));
            pthread_mutex_unlock(&trace_lock);
        }
        cJSON_AddItemToObject(step, "result", cJSON_Parse(result_text));
        ferrule_string_free(result_text);
        ferrule_run_free(run);
        const cJSON *handlers = cJSON_GetObjectItem(expect, "cancel_handlers");
        if (cJSON_IsNumber(handlers)) wait_for_count(&cancel_handlers, handlers->valueint, 10000);
        cJSON_AddItemToObject(step, "events", parsed_events(&log));
        pthread_mutex_lock(&hook_log_lock);
        cJSON_AddItemToObject(step, "hook_calls", cJSON_Duplicate(hook_log, 1));
        pthread_mutex_unlock(&hook_log_lock);
        cJSON_AddNumberToObject(step, "cancel_handlers", atomic_load(&cancel_handlers));
        if (cJSON_GetObjectItem(expect, "unused_recordings")) {
            char *unused = NULL;
            size_t unused_len = 0;
            ferrule_error *failed = ferrule_agent_unused_recordings(agent, &unused, &unused_len);
            cJSON *report = failed ? NULL : cJSON_ParseWithLength(unused, unused_len);
            cJSON *list = report ? cJSON_DetachItemFromObject(report, "unused") : NULL;
            cJSON_AddItemToObject(step, "unused_recordings", list ? list : cJSON_CreateNull());
            cJSON_Delete(report);
            ferrule_string_free(unused);
            ferrule_error_free(failed);
        }
    }
    /* Tools that completed after a timeout may still run; wait for their threads
     * to finish with the behaviour before the document goes. */
    harness_sleep_ms(20);
    event_log_destroy(&log);
    return step;
}

/* Runs each of `calls` (a result's returned calls) as an `invoke` run on
 * `agent`, the `attempt`th time: their outcomes by call id. */
static cJSON *run_returned(ferrule_agent *agent, const cJSON *calls, int attempt) {
    cJSON *outcomes = cJSON_CreateObject();
    const cJSON *call;
    cJSON_ArrayForEach(call, calls) {
        cJSON *input = cJSON_CreateObject();
        cJSON_AddItemToObject(input, "invoke", cJSON_Duplicate(call, 1));
        cJSON_AddNumberToObject(input, "attempt", attempt);
        char *text = print_json(input);
        cJSON_Delete(input);
        ferrule_run *run = NULL;
        cJSON *result = NULL;
        if (harness_expect_ok(ferrule_agent_start(agent, STR(text), NULL, NULL, NULL, &run), __FILE__, __LINE__)) {
            char *result_text = harness_wait(run);
            result = result_text ? cJSON_Parse(result_text) : NULL;
            ferrule_string_free(result_text);
            ferrule_run_free(run);
        }
        free(text);
        cJSON *outcome = cJSON_DetachItemFromObject(result, "outcome");
        const char *id = cJSON_GetStringValue(cJSON_GetObjectItem(call, "id"));
        cJSON_AddItemToObject(outcomes, id ? id : "", outcome ? outcome : cJSON_CreateNull());
        cJSON_Delete(result);
    }
    return outcomes;
}

/* The input that resumes from `state` with the step's decisions, or with
 * `run_returned` the outcomes of the calls the last run returned (`calls`),
 * run on `agent`; the step's `state_patch` fields replace the state's. */
static cJSON *resume_input(ferrule_agent *agent, const cJSON *state, const cJSON *calls, const cJSON *step) {
    cJSON *copy = cJSON_Duplicate(state, 1);
    const cJSON *field;
    cJSON_ArrayForEach(field, cJSON_GetObjectItem(step, "state_patch")) {
        cJSON_DeleteItemFromObject(copy, field->string);
        cJSON_AddItemToObject(copy, field->string, cJSON_Duplicate(field, 1));
    }
    cJSON *input = cJSON_CreateObject();
    cJSON_AddItemToObject(input, "resume", copy);
    const cJSON *run = cJSON_GetObjectItem(step, "run_returned");
    if (run) {
        const cJSON *attempt = cJSON_GetObjectItem(run, "attempt");
        int n = cJSON_IsNumber(attempt) ? attempt->valueint : 1;
        cJSON_AddItemToObject(input, "results", run_returned(agent, calls, n));
        cJSON_AddStringToObject(input, "calls", "return");
        return input;
    }
    const cJSON *decisions = cJSON_GetObjectItem(step, "decisions");
    cJSON_AddItemToObject(input, "decisions", decisions ? cJSON_Duplicate(decisions, 1) : cJSON_CreateObject());
    return input;
}

/* Runs one scenario (its first run, then each resume from the last state) and
 * returns the observation. */
static cJSON *run_scenario(const char *name, const cJSON *doc) {
    cJSON *observation = cJSON_CreateObject();
    cJSON_AddStringToObject(observation, "runner", host_model_mode ? "c-host-model" : "c");
    cJSON_AddStringToObject(observation, "scenario", name);
    cJSON *steps = cJSON_AddArrayToObject(observation, "steps");
    const cJSON *tools = cJSON_GetObjectItem(doc, "tools");
    cJSON *problem = NULL;
    ferrule_agent *agent = build_agent(doc, tools, &problem);
    if (!agent) {
        cJSON_AddItemToArray(steps, problem);
        return observation;
    }
    /* A traced scenario holds the process's tracer while it runs. */
    if (cJSON_IsTrue(cJSON_GetObjectItem(doc, "trace"))) {
        pthread_mutex_lock(&trace_lock);
        span_log = cJSON_CreateArray();
        pthread_mutex_unlock(&trace_lock);
        ferrule_error *refused = ferrule_runtime_set_tracer(keep_span, NULL, NULL);
        if (refused) {
            cJSON_AddItemToArray(steps, runner_error("the tracer was refused", refused));
            ferrule_error_free(refused);
            ferrule_agent_free(agent);
            return observation;
        }
    }
    cJSON *last = run_step(agent, cJSON_GetObjectItem(doc, "input"), cJSON_GetObjectItem(doc, "expect"));
    cJSON_AddItemToArray(steps, last);
    const cJSON *state = cJSON_GetObjectItem(cJSON_GetObjectItem(last, "result"), "state");
    const cJSON *calls = cJSON_GetObjectItem(cJSON_GetObjectItem(last, "result"), "calls");
    const cJSON *resume;
    cJSON_ArrayForEach(resume, cJSON_GetObjectItem(doc, "resumes")) {
        if (!cJSON_IsObject(state)) break;
        ferrule_agent *on = agent;
        cJSON *step = NULL;
        if (cJSON_IsTrue(cJSON_GetObjectItem(resume, "new_agent"))) {
            const cJSON *resume_tools = cJSON_GetObjectItem(resume, "tools");
            on = build_agent(doc, resume_tools ? resume_tools : tools, &step);
        }
        if (on) {
            cJSON *input = resume_input(on, state, calls, resume);
            step = run_step(on, input, cJSON_GetObjectItem(resume, "expect"));
            cJSON_Delete(input);
        }
        if (on && on != agent) ferrule_agent_free(on);
        cJSON_AddItemToArray(steps, step);
        const cJSON *result = cJSON_GetObjectItem(step, "result");
        const cJSON *next = cJSON_GetObjectItem(result, "state");
        if (next) state = next;
        calls = cJSON_GetObjectItem(result, "calls");
    }
    ferrule_agent_free(agent);
    if (cJSON_IsTrue(cJSON_GetObjectItem(doc, "trace"))) {
        harness_expect_ok(ferrule_runtime_set_tracer(NULL, NULL, NULL), __FILE__, __LINE__);
        pthread_mutex_lock(&trace_lock);
        cJSON_Delete(span_log);
        span_log = NULL;
        pthread_mutex_unlock(&trace_lock);
    }
    return observation;
}

static int by_name(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "--host-model") == 0) {
        host_model_mode = 1;
        argv++;
        argc--;
    }
    if (argc < 2) {
        fprintf(stderr, "usage: %s [--host-model] OUT_DIR [SCENARIOS_DIR]\n", argv[0]);
        return 2;
    }
    const char *out_dir = argv[1];
    const char *dir_path = argc > 2 ? argv[2] : FERRULE_CONFORMANCE_DIR;
    scenarios_dir = dir_path;
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
        if (len > 5 && strcmp(entry->d_name + len - 5, ".json") == 0) names[count++] = strndup(entry->d_name, len - 5);
    }
    closedir(dir);
    qsort(names, count, sizeof names[0], by_name);

    int written = 0;
    for (size_t i = 0; i < count; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s.json", dir_path, names[i]);
        char *text = read_file(path);
        cJSON *doc = text ? cJSON_Parse(text) : NULL;
        free(text);
        cJSON *observation = doc ? run_scenario(names[i], doc) : NULL;
        char *json = observation ? cJSON_PrintUnformatted(observation) : NULL;
        snprintf(path, sizeof path, "%s/%s.json", out_dir, names[i]);
        FILE *out = json ? fopen(path, "wb") : NULL;
        if (out) {
            fputs(json, out);
            fclose(out);
            written++;
        } else {
            fprintf(stderr, "%s: no observation written (%s)\n", names[i], doc ? path : "the scenario is not JSON");
        }
        free(json);
        cJSON_Delete(observation);
        cJSON_Delete(doc);
        free(names[i]);
    }
    printf("%d observations written to %s\n", written, out_dir);
    cJSON_Delete(hook_log);
    return 0;
}
