#include "harness.h"

#include <unistd.h>

int harness_case_failed;

int harness_expect_error(ferrule_error *err, uint32_t code, const char *needle, const char *file, int line) {
    if (err == NULL) {
        fprintf(stderr, "  %s:%d: expected error code %u, got success\n", file, line, code);
        return 0;
    }
    uint32_t got = ferrule_error_code(err);
    ferrule_str message = ferrule_error_message(err);
    int ok = got == code && message.ptr[message.len] == '\0' && (needle == NULL || strstr(message.ptr, needle));
    if (!ok) {
        fprintf(stderr, "  %s:%d: expected code %u containing \"%s\", got code %u: %s\n", file, line, code,
                needle ? needle : "", got, message.ptr);
    }
    ferrule_error_free(err);
    return ok;
}

int harness_expect_ok(ferrule_error *err, const char *file, int line) {
    if (err == NULL) return 1;
    fprintf(stderr, "  %s:%d: unexpected error %u: %s\n", file, line, ferrule_error_code(err),
            ferrule_error_message(err).ptr);
    ferrule_error_free(err);
    return 0;
}

int harness_main(const harness_case *cases, size_t count, int argc, char **argv) {
    size_t passed = 0, failed = 0;
    for (size_t i = 0; i < count; i++) {
        if (argc > 1 && strcmp(argv[1], cases[i].name) != 0) continue;
        harness_case_failed = 0;
        cases[i].run();
        printf("%s %s\n", harness_case_failed ? "FAIL" : "ok  ", cases[i].name);
        fflush(stdout);
        if (harness_case_failed) failed++; else passed++;
    }
    printf("%zu passed, %zu failed\n", passed, failed);
    return failed == 0 && passed > 0 ? 0 : 1;
}

void harness_sleep_ms(long ms) {
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

void counter_free(void *user_data) {
    atomic_fetch_add(&((counter *)user_data)->frees, 1);
}

void event_log_init(event_log *log) {
    memset(log, 0, sizeof *log);
    pthread_mutex_init(&log->lock, NULL);
}

void event_log_destroy(event_log *log) {
    for (size_t i = 0; i < log->count; i++) free(log->events[i]);
    free(log->events);
    pthread_mutex_destroy(&log->lock);
}

void event_log_on_event(void *user_data, const char *json, size_t len) {
    event_log *log = user_data;
    char *copy = malloc(len + 1);
    memcpy(copy, json, len + 1);
    pthread_mutex_lock(&log->lock);
    if (log->count == log->capacity) {
        log->capacity = log->capacity ? log->capacity * 2 : 16;
        log->events = realloc(log->events, log->capacity * sizeof *log->events);
    }
    log->events[log->count++] = copy;
    pthread_mutex_unlock(&log->lock);
}

void event_log_free(void *user_data) {
    atomic_fetch_add(&((event_log *)user_data)->freed, 1);
}

size_t event_log_count(event_log *log, const char *needle) {
    size_t n = 0;
    pthread_mutex_lock(&log->lock);
    for (size_t i = 0; i < log->count; i++) n += strstr(log->events[i], needle) != NULL;
    pthread_mutex_unlock(&log->lock);
    return n;
}

int event_log_wait_freed(event_log *log, long timeout_ms) {
    for (long waited = 0; waited < timeout_ms; waited += 2) {
        if (atomic_load(&log->freed)) return 1;
        harness_sleep_ms(2);
    }
    return atomic_load(&log->freed);
}

void latch_init(latch *l) {
    pthread_mutex_init(&l->lock, NULL);
    pthread_cond_init(&l->opened, NULL);
    l->open = 0;
}

void latch_destroy(latch *l) {
    pthread_cond_destroy(&l->opened);
    pthread_mutex_destroy(&l->lock);
}

void latch_wait(latch *l) {
    pthread_mutex_lock(&l->lock);
    while (!l->open) pthread_cond_wait(&l->opened, &l->lock);
    pthread_mutex_unlock(&l->lock);
}

void latch_open(latch *l) {
    pthread_mutex_lock(&l->lock);
    l->open = 1;
    pthread_cond_broadcast(&l->opened);
    pthread_mutex_unlock(&l->lock);
}

int wait_for_count(atomic_int *value, int expected, long timeout_ms) {
    for (long waited = 0; waited < timeout_ms && atomic_load(value) < expected; waited += 1) harness_sleep_ms(1);
    return atomic_load(value) >= expected;
}

static FILE *captured_stderr;

int capture_stderr_begin(void) {
    fflush(stderr);
    captured_stderr = tmpfile();
    int saved = dup(2);
    dup2(fileno(captured_stderr), 2);
    return saved;
}

char *capture_stderr_end(int saved) {
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    long size = ftell(captured_stderr);
    if (size < 0) size = 0;
    char *text = calloc((size_t)size + 1, 1);
    rewind(captured_stderr);
    size_t got = fread(text, 1, (size_t)size, captured_stderr);
    text[got] = '\0';
    fclose(captured_stderr);
    return text;
}

char thread_kind(void) {
    char name[16] = {0};
    pthread_getname_np(pthread_self(), name, sizeof name);
    if (strncmp(name, "ferrule-cb-", 11) == 0) return 'c';
    if (strncmp(name, "ferrule-ev-", 11) == 0) return 'e';
    if (strcmp(name, "ferrule-log") == 0) return 'l';
    if (strncmp(name, "ferrule-", 8) == 0 && name[8] >= '0' && name[8] <= '9') return 'r';
    return 'h';
}

ferrule_tool_spec harness_spec(const char *name, const char *options, ferrule_tool_fn execute, void *user_data,
                               void (*free_user_data)(void *)) {
    ferrule_tool_spec spec;
    memset(&spec, 0, sizeof spec);
    spec.struct_size = sizeof spec;
    spec.name = name;
    spec.name_len = strlen(name);
    spec.description = "a test tool";
    spec.description_len = strlen(spec.description);
    spec.input_schema = "{\"type\": \"object\"}";
    spec.input_schema_len = strlen(spec.input_schema);
    spec.options = options;
    spec.options_len = strlen(options);
    spec.execute = execute;
    spec.user_data = user_data;
    spec.free_user_data = free_user_data;
    return spec;
}

ferrule_agent *harness_agent(const char *config, const ferrule_tool_spec *specs, size_t count) {
    ferrule_agent_builder *builder = NULL;
    if (!harness_expect_ok(ferrule_agent_builder_new(STR(config), &builder), __FILE__, __LINE__)) return NULL;
    for (size_t i = 0; i < count; i++) {
        if (!harness_expect_ok(ferrule_agent_builder_add_tool(builder, &specs[i]), __FILE__, __LINE__)) {
            ferrule_agent_builder_free(builder);
            return NULL;
        }
    }
    ferrule_agent *agent = NULL;
    if (!harness_expect_ok(ferrule_agent_build(builder, &agent), __FILE__, __LINE__)) return NULL;
    return agent;
}

ferrule_agent *harness_batch_agent(const ferrule_tool_spec *spec, int calls, int rounds, const char *extra) {
    size_t size = 512 + (size_t)calls * 64 + strlen(extra);
    char *config = malloc(size);
    size_t used = (size_t)snprintf(config, size, "{\"model\": {\"provider\": \"scripted\", \"script\": [{\"tool_calls\": [");
    for (int i = 0; i < calls; i++) {
        used += (size_t)snprintf(config + used, size - used, "%s{\"id\": \"c%d\", \"name\": \"%.*s\", \"arguments\": {}}",
                                 i ? ", " : "", i, (int)spec->name_len, spec->name);
    }
    snprintf(config + used, size - used,
             "], \"repeat\": %d}, {\"text\": \"done\"}]}, \"max_rounds\": %d, \"max_concurrent_tools\": %d%s}", rounds,
             rounds + 1, calls, extra);
    ferrule_agent *agent = harness_agent(config, spec, 1);
    free(config);
    return agent;
}

char *harness_wait(ferrule_run *run) {
    char *json = NULL;
    size_t len = 0;
    if (!harness_expect_ok(ferrule_run_wait(run, &json, &len), __FILE__, __LINE__)) return NULL;
    if (strlen(json) != len) {
        fprintf(stderr, "  run result length %zu does not match its text\n", len);
    }
    return json;
}

char *harness_run(ferrule_agent *agent, event_log *log) {
    ferrule_run *run = NULL;
    ferrule_error *err = log ? ferrule_agent_start(agent, STR("{\"prompt\": \"go\"}"), event_log_on_event, log,
                                                   event_log_free, &run)
                             : ferrule_agent_start(agent, STR("{\"prompt\": \"go\"}"), NULL, NULL, NULL, &run);
    if (!harness_expect_ok(err, __FILE__, __LINE__)) return NULL;
    char *result = harness_wait(run);
    ferrule_run_free(run);
    return result;
}
