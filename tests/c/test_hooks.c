/*
 * Hooks and injection through the C ABI, as a hostile host uses them: responses
 * racing timeouts and cancellation, two threads responding at once, user data
 * ownership, and injections racing the end of the run.
 */
#include <unistd.h>

#include <cjson/cJSON.h>

#include "harness.h"

/* ---- a tool that answers at once ----------------------------------------------- */

static void answer(void *user_data, ferrule_tool_call *call) {
    (void)user_data;
    ferrule_error_free(ferrule_tool_call_complete(call, STR("\"ok\"")));
}

/* An agent whose model makes `calls` calls of "t" in each of `rounds` rounds,
 * with `extra` config fields, and the hook `decide` at `stages`. */
static ferrule_agent *hooked_agent(int calls, int rounds, const char *extra, const char *stages, ferrule_hook_fn decide,
                                   void *user_data, void (*free_user_data)(void *)) {
    char config[2048];
    size_t used = (size_t)snprintf(config, sizeof config, "{\"model\": {\"provider\": \"scripted\", \"script\": [{\"tool_calls\": [");
    for (int i = 0; i < calls; i++) {
        used += (size_t)snprintf(config + used, sizeof config - used, "%s{\"id\": \"c%d\", \"name\": \"t\", \"arguments\": {}}",
                                 i ? ", " : "", i);
    }
    snprintf(config + used, sizeof config - used,
             "], \"repeat\": %d}, {\"text\": \"done\"}]}, \"max_rounds\": %d, \"max_concurrent_tools\": %d%s}", rounds,
             rounds + 1, calls, extra);
    ferrule_agent_builder *builder = NULL;
    if (!harness_expect_ok(ferrule_agent_builder_new(STR(config), &builder), __FILE__, __LINE__)) return NULL;
    ferrule_tool_spec spec = harness_spec("t", "{\"nonblocking\": true}", answer, NULL, NULL);
    if (!harness_expect_ok(ferrule_agent_builder_add_tool(builder, &spec), __FILE__, __LINE__) ||
        !harness_expect_ok(ferrule_agent_builder_add_hook(builder, STR(stages), decide, user_data, free_user_data),
                           __FILE__, __LINE__)) {
        ferrule_agent_builder_free(builder);
        return NULL;
    }
    ferrule_agent *agent = NULL;
    if (!harness_expect_ok(ferrule_agent_build(builder, &agent), __FILE__, __LINE__)) return NULL;
    return agent;
}

/* ---- responses racing timeouts and cancellation ---------------------------------- */

typedef struct {
    atomic_int handled;
    atomic_int freed;
} consultation_count;

enum { MAX_CONSULTATIONS = 20000 };
static consultation_count consultations[MAX_CONSULTATIONS];
static atomic_int next_consultation, responded;

static void count_handler(void *user_data) {
    atomic_fetch_add(&((consultation_count *)user_data)->handled, 1);
}

static void count_free(void *user_data) {
    atomic_fetch_add(&((consultation_count *)user_data)->freed, 1);
}

static void *respond_at_random(void *arg) {
    usleep((useconds_t)(rand() % 1500));
    ferrule_error_free(ferrule_hook_respond(arg, STR("{}")));
    atomic_fetch_add(&responded, 1);
    return NULL;
}

/* Registers a counting cancel handler, then responds from a thread of its own at
 * a random moment around the 1 ms hook timeout. */
static void respond_racing(void *user_data, ferrule_hook *hook) {
    (void)user_data;
    int index = atomic_fetch_add(&next_consultation, 1);
    if (index < MAX_CONSULTATIONS) {
        consultation_count *count = &consultations[index];
        ferrule_error_free(ferrule_hook_on_cancel(hook, count_handler, count, count_free));
    }
    pthread_t thread;
    if (pthread_create(&thread, NULL, respond_at_random, hook) != 0) {
        respond_at_random(hook); /* no thread to spare: respond here */
        return;
    }
    pthread_detach(thread);
}

/* The hook runs on a callback thread, or (nonblocking) on ferrule's runtime; it
 * returns at once either way. */
static void race(const char *stages) {
    ferrule_agent *agent = hooked_agent(6, 3, ", \"hook_timeout_ms\": 1", stages, respond_racing, NULL, NULL);
    CHECK(agent != NULL);
    for (int i = 0; i < 150; i++) {
        event_log log;
        event_log_init(&log);
        ferrule_run *run = NULL;
        CHECK_OK(ferrule_agent_start(agent, STR("{\"prompt\": \"go\"}"), event_log_on_event, &log, event_log_free, &run));
        if (rand() % 3 == 0) {
            usleep((useconds_t)(rand() % 2000));
            ferrule_run_cancel(run);
        }
        char *result = harness_wait(run);
        CHECK(result != NULL);
        CHECK(strstr(result, "\"status\":\"completed\"") || strstr(result, "\"status\":\"cancelled\"") ||
              strstr(result, "\"code\":\"TIMEOUT\""));
        ferrule_string_free(result);
        ferrule_run_free(run);
        CHECK(event_log_count(&log, "\"type\":\"tool_execution_start\"") ==
              event_log_count(&log, "\"type\":\"tool_execution_end\""));
        CHECK(event_log_count(&log, "\"type\":\"run_end\"") == 1);
        event_log_destroy(&log);
    }
    ferrule_agent_free(agent);
}

static void responses_race_timeouts_and_cancels_and_every_handler_is_freed_once(void) {
    race("[\"tool_call\", \"tool_result\"]");
    race("{\"stages\": [\"tool_call\", \"tool_result\"], \"nonblocking\": true}");
    int total = atomic_load(&next_consultation);
    CHECK(wait_for_count(&responded, total, 10000));
    for (int i = 0; i < total && i < MAX_CONSULTATIONS; i++) {
        CHECK(wait_for_count(&consultations[i].freed, 1, 5000));
        CHECK(atomic_load(&consultations[i].freed) == 1 && atomic_load(&consultations[i].handled) <= 1);
    }
}

/* ---- two threads responding at once ---------------------------------------------- */

static atomic_int accepted_responses, refused_responses;

static void *respond_and_count(void *arg) {
    ferrule_error *err = ferrule_hook_respond(arg, STR("{}"));
    if (err == NULL) {
        atomic_fetch_add(&accepted_responses, 1);
    } else if (ferrule_error_code(err) == FERRULE_ERROR_ALREADY_COMPLETED) {
        atomic_fetch_add(&refused_responses, 1);
    }
    ferrule_error_free(err);
    return NULL;
}

static void respond_twice(void *user_data, ferrule_hook *hook) {
    (void)user_data;
    pthread_t threads[2];
    int started[2];
    for (int i = 0; i < 2; i++) started[i] = pthread_create(&threads[i], NULL, respond_and_count, hook) == 0;
    for (int i = 0; i < 2; i++) {
        if (started[i]) {
            pthread_join(threads[i], NULL);
        } else {
            respond_and_count(hook); /* no thread to spare: race from here */
        }
    }
}

static void of_two_responses_racing_exactly_one_is_taken(void) {
    ferrule_agent *agent = hooked_agent(4, 50, "", "[\"tool_call\"]", respond_twice, NULL, NULL);
    CHECK(agent != NULL);
    ferrule_run *run = NULL;
    CHECK_OK(ferrule_agent_start(agent, STR("{\"prompt\": \"go\"}"), NULL, NULL, NULL, &run));
    char *result = harness_wait(run);
    CHECK(result && strstr(result, "\"status\":\"completed\""));
    ferrule_string_free(result);
    ferrule_run_free(run);
    ferrule_agent_free(agent);
    /* The last hook's callback may still be joining its threads after the run:
     * either of its two may be the one still counting. */
    wait_for_count(&accepted_responses, 200, 5000);
    wait_for_count(&refused_responses, 200, 5000);
    CHECK(atomic_load(&accepted_responses) == 200);
    CHECK(atomic_load(&refused_responses) == 200);
}

/* ---- user data ------------------------------------------------------------------ */

static void go_on(void *user_data, ferrule_hook *hook) {
    (void)user_data;
    ferrule_error_free(ferrule_hook_respond(hook, STR("{}")));
}

/* Responds, then goes on for a while before it returns. */
static void go_on_then_linger(void *user_data, ferrule_hook *hook) {
    (void)user_data;
    ferrule_error_free(ferrule_hook_respond(hook, STR("{}")));
    harness_sleep_ms(50);
}

/* The run ends only once the hook's callbacks have returned: freeing the agent
 * after the wait frees the hook's data at once, on this thread. */
static void a_hooks_user_data_is_freed_once_and_never_when_adding_fails(void) {
    counter kept = {0}, refused = {0};
    ferrule_agent_builder *builder = NULL;
    CHECK_OK(ferrule_agent_builder_new(STR("{\"model\": {\"provider\": \"scripted\", \"script\": [{\"text\": \"x\"}]}}"),
                                       &builder));
    CHECK_ERROR(ferrule_agent_builder_add_hook(builder, STR("[\"tool_cal\"]"), go_on, &refused, counter_free),
                FERRULE_ERROR_INVALID_ARG, "tool_cal");
    CHECK_ERROR(ferrule_agent_builder_add_hook(builder, STR("[]"), go_on, &refused, counter_free),
                FERRULE_ERROR_INVALID_ARG, "at least one");
    CHECK_ERROR(ferrule_agent_builder_add_hook(builder, STR("{\"stages\": [\"run_start\"], \"blocking\": 1}"), go_on,
                                               &refused, counter_free),
                FERRULE_ERROR_INVALID_ARG, "blocking");
    CHECK_ERROR(ferrule_agent_builder_add_hook(builder, STR("[\"run_start\", \"run_start\"]"), go_on, &refused,
                                               counter_free),
                FERRULE_ERROR_INVALID_ARG, "twice");
    CHECK_ERROR(ferrule_agent_builder_add_hook(builder, STR("[\"run_start\"]"), NULL, &refused, counter_free),
                FERRULE_ERROR_NULL_ARG, NULL);
    CHECK_ERROR(ferrule_agent_builder_add_hook(NULL, STR("[\"run_start\"]"), go_on, &refused, counter_free),
                FERRULE_ERROR_NULL_ARG, NULL);
    CHECK_OK(ferrule_agent_builder_add_hook(builder, STR("[\"run_start\", \"final_answer\"]"), go_on_then_linger,
                                            &kept, counter_free));
    ferrule_agent *agent = NULL;
    CHECK_OK(ferrule_agent_build(builder, &agent));
    ferrule_run *run = NULL;
    CHECK_OK(ferrule_agent_start(agent, STR("{\"prompt\": \"go\"}"), NULL, NULL, NULL, &run));
    ferrule_string_free(harness_wait(run));
    ferrule_run_free(run);
    CHECK(atomic_load(&kept.frees) == 0);
    ferrule_agent_free(agent);
    CHECK(atomic_load(&kept.frees) == 1);
    CHECK(atomic_load(&refused.frees) == 0);
}

/* ---- a decision that is not JSON ---------------------------------------------------- */

static void respond_with_text(void *user_data, ferrule_hook *hook) {
    (void)user_data;
    CHECK_ERROR(ferrule_hook_respond(hook, STR("{nope")), FERRULE_ERROR_INVALID_JSON, "hook decision");
}

/* The run fails with the very error ferrule_hook_respond returned. */
static void a_decision_that_is_not_json_fails_the_run_with_invalid_json(void) {
    ferrule_agent *agent = hooked_agent(1, 1, "", "[\"tool_call\"]", respond_with_text, NULL, NULL);
    if (agent == NULL) return;
    ferrule_run *run = NULL;
    CHECK_OK(ferrule_agent_start(agent, STR("{\"prompt\": \"go\"}"), NULL, NULL, NULL, &run));
    char *result = harness_wait(run);
    CHECK(result != NULL && strstr(result, "\"status\":\"failed\"") != NULL);
    CHECK(result != NULL && strstr(result, "\"code\":\"INVALID_JSON\"") != NULL);
    ferrule_string_free(result);
    ferrule_run_free(run);
    ferrule_agent_free(agent);
}

/* ---- a cancel while a hook decides ------------------------------------------------- */

static _Atomic(ferrule_hook *) held_hook;
static atomic_int held_consultations;

/* Keeps the consultation for the test to answer later. */
static void hold(void *user_data, ferrule_hook *hook) {
    (void)user_data;
    atomic_fetch_add(&held_consultations, 1);
    atomic_store(&held_hook, hook);
}

/* A host polling ferrule_hook_is_cancelled learns of the cancel the moment it
 * is made, not once the run gets to it; no hook is consulted after it. */
static void a_waiting_hook_sees_its_runs_cancel_at_once(void) {
    for (int i = 0; i < 50; i++) {
        atomic_store(&held_hook, NULL);
        atomic_store(&held_consultations, 0);
        ferrule_agent *agent = hooked_agent(2, 1, "", "{\"stages\": [\"tool_call\", \"tool_result\"], \"nonblocking\": true}",
                                            hold, NULL, NULL);
        if (agent == NULL) return;
        ferrule_run *run = NULL;
        CHECK_OK(ferrule_agent_start(agent, STR("{\"prompt\": \"go\"}"), NULL, NULL, NULL, &run));
        CHECK(wait_for_count(&held_consultations, 1, 5000));
        ferrule_hook *hook = atomic_load(&held_hook);
        CHECK(hook != NULL && !ferrule_hook_is_cancelled(hook));
        ferrule_run_cancel(run);
        CHECK(ferrule_hook_is_cancelled(hook));
        char *result = harness_wait(run);
        CHECK(result != NULL && strstr(result, "\"status\":\"cancelled\"") != NULL);
        ferrule_string_free(result);
        /* Accepted and discarded after the cancel. */
        CHECK_OK(ferrule_hook_respond(hook, STR("{}")));
        CHECK(atomic_load(&held_consultations) == 1);
        ferrule_run_free(run);
        ferrule_agent_free(agent);
    }
}

/* ---- injections racing the end ----------------------------------------------------- */

typedef struct {
    ferrule_run *run;
    atomic_int accepted;
} injector;

static void *inject_until_refused(void *arg) {
    injector *state = arg;
    for (;;) {
        ferrule_error *err = ferrule_run_inject(state->run, STR("{\"role\": \"user\", \"content\": \"more\"}"));
        if (err) {
            int over = ferrule_error_code(err) == FERRULE_ERROR_ALREADY_COMPLETED;
            ferrule_error_free(err);
            if (over) return NULL;
            continue;
        }
        atomic_fetch_add(&state->accepted, 1);
        usleep(50);
    }
}

static void an_accepted_injection_is_never_lost(void) {
    ferrule_agent *agent = hooked_agent(2, 3, "", "[\"tool_result\"]", go_on, NULL, NULL);
    CHECK(agent != NULL);
    int accepted = 0;
    for (int i = 0; i < 100; i++) {
        injector state = {.run = NULL};
        CHECK_OK(ferrule_agent_start(agent, STR("{\"prompt\": \"go\"}"), NULL, NULL, NULL, &state.run));
        pthread_t thread;
        int started = pthread_create(&thread, NULL, inject_until_refused, &state) == 0;
        char *result = harness_wait(state.run);
        if (started) pthread_join(thread, NULL);
        CHECK(result != NULL);
        /* Every accepted message is in the transcript, marked. */
        size_t marked = 0;
        for (const char *at = result; (at = strstr(at, "\"origin\":\"injection\"")) != NULL; at++) marked++;
        int ok = marked == (size_t)atomic_load(&state.accepted);
        accepted += atomic_load(&state.accepted);
        ferrule_string_free(result);
        ferrule_run_free(state.run);
        CHECK(ok);
    }
    ferrule_agent_free(agent);
    CHECK(accepted > 0);
    CHECK_ERROR(ferrule_run_inject(NULL, STR("{}")), FERRULE_ERROR_NULL_ARG, NULL);
}

/* ---- history carried as it grows ----------------------------------------------- */

/* The history as the "whole history" hook saw it last, for the "new" hook to
 * compare what it kept with. */
static char *whole_history;
static atomic_int kept_histories_freed, turns_checked, histories_restarted;

static void free_kept_history(void *state) {
    cJSON_Delete(state);
    atomic_fetch_add(&kept_histories_freed, 1);
}

static cJSON *payload_of(ferrule_hook *hook) {
    ferrule_str payload = ferrule_hook_payload(hook);
    return cJSON_ParseWithLength(payload.ptr, payload.len);
}

/* Notes the whole history of each turn. */
static void note_whole_history(void *user_data, ferrule_hook *hook) {
    (void)user_data;
    cJSON *payload = payload_of(hook);
    free(whole_history);
    whole_history = cJSON_PrintUnformatted(cJSON_GetObjectItem(payload, "messages"));
    cJSON_Delete(payload);
    ferrule_error_free(ferrule_hook_respond(hook, STR("{}")));
}

/* At the third turn, replaces the history with one user message. */
static void replace_at_turn_three(void *user_data, ferrule_hook *hook) {
    (void)user_data;
    cJSON *payload = payload_of(hook);
    int turn = cJSON_GetObjectItem(payload, "turn")->valueint;
    cJSON_Delete(payload);
    const char *decision = turn == 3 ? "{\"messages\": [{\"role\": \"user\", \"content\": \"again\"}]}" : "{}";
    ferrule_error_free(ferrule_hook_respond(hook, STR(decision)));
}

/* Keeps the history in its run state from the new messages of each payload,
 * checks them against the whole history, and answers whether all held. */
static void keep_new_history(void *user_data, ferrule_hook *hook) {
    (void)user_data;
    cJSON *payload = payload_of(hook);
    int from = cJSON_GetObjectItem(payload, "messages_from")->valueint;
    int count = cJSON_GetObjectItem(payload, "message_count")->valueint;
    cJSON *kept = ferrule_hook_run_state(hook);
    if (kept == NULL) {
        kept = cJSON_CreateArray();
        if (!harness_expect_ok(ferrule_hook_set_run_state(hook, kept, free_kept_history), __FILE__, __LINE__)) {
            cJSON_Delete(kept);
            kept = NULL;
        }
    }
    int held = kept != NULL && from <= cJSON_GetArraySize(kept);
    if (held && from == 0 && cJSON_GetArraySize(kept) > 0) atomic_fetch_add(&histories_restarted, 1);
    while (held && cJSON_GetArraySize(kept) > from) cJSON_DeleteItemFromArray(kept, from);
    cJSON *message;
    cJSON_ArrayForEach(message, cJSON_GetObjectItem(payload, "messages")) {
        if (held) cJSON_AddItemToArray(kept, cJSON_Duplicate(message, 1));
    }
    held = held && cJSON_GetArraySize(kept) == count;
    ferrule_str stage = ferrule_hook_stage(hook);
    if (held && stage.len == strlen("turn_start")) {
        char *printed = cJSON_PrintUnformatted(kept);
        held = whole_history != NULL && strcmp(printed, whole_history) == 0;
        free(printed);
        atomic_fetch_add(&turns_checked, 1);
    }
    cJSON_Delete(payload);
    ferrule_error_free(ferrule_hook_respond(hook, STR(held ? "{}" : "{\"abort\": \"the kept history differs\"}")));
}

/* A hook registered with "history": "new" is given each message once, and
 * the whole history again after a hook replaced it; what it kept for the run is
 * freed once, before the wait returns. */
static void a_hook_taking_new_messages_keeps_the_whole_history(void) {
    const char *config = "{\"model\": {\"provider\": \"scripted\", \"script\": [{\"tool_calls\": [{\"id\": \"c1\", "
                         "\"name\": \"t\", \"arguments\": {}}], \"repeat\": 5}, {\"text\": \"done\"}]}, "
                         "\"max_rounds\": 10}";
    ferrule_agent_builder *builder = NULL;
    CHECK_OK(ferrule_agent_builder_new(STR(config), &builder));
    ferrule_tool_spec spec = harness_spec("t", "{\"nonblocking\": true}", answer, NULL, NULL);
    CHECK_OK(ferrule_agent_builder_add_tool(builder, &spec));
    CHECK_OK(ferrule_agent_builder_add_hook(builder, STR("[\"turn_start\"]"), replace_at_turn_three, NULL, NULL));
    CHECK_OK(ferrule_agent_builder_add_hook(builder, STR("[\"turn_start\"]"), note_whole_history, NULL, NULL));
    CHECK_ERROR(ferrule_agent_builder_add_hook(builder, STR("{\"stages\": [\"turn_start\"], \"history\": \"newest\"}"),
                                               keep_new_history, NULL, NULL),
                FERRULE_ERROR_INVALID_ARG, "newest");
    CHECK_OK(ferrule_agent_builder_add_hook(builder,
                                            STR("{\"stages\": [\"run_start\", \"turn_start\"], \"history\": \"new\"}"),
                                            keep_new_history, NULL, NULL));
    ferrule_agent *agent = NULL;
    CHECK_OK(ferrule_agent_build(builder, &agent));
    for (int i = 0; i < 2; i++) {
        atomic_store(&turns_checked, 0);
        atomic_store(&histories_restarted, 0);
        ferrule_run *run = NULL;
        CHECK_OK(ferrule_agent_start(agent, STR("{\"prompt\": \"go\"}"), NULL, NULL, NULL, &run));
        char *result = harness_wait(run);
        CHECK(atomic_load(&kept_histories_freed) == i + 1);
        CHECK(result != NULL && strstr(result, "\"status\":\"completed\"") != NULL);
        ferrule_string_free(result);
        ferrule_run_free(run);
        CHECK(atomic_load(&turns_checked) == 6);
        /* The first turn_start after run_start, and the one after the replacement. */
        CHECK(atomic_load(&histories_restarted) == 2);
    }
    ferrule_agent_free(agent);
    free(whole_history);
    whole_history = NULL;
}

static atomic_int late_state_refused;

/* Responds, then tries to keep a state for the run. */
static void respond_then_keep(void *user_data, ferrule_hook *hook) {
    (void)user_data;
    ferrule_error_free(ferrule_hook_respond(hook, STR("{}")));
    static int state;
    ferrule_error *error = ferrule_hook_set_run_state(hook, &state, NULL);
    if (ferrule_error_code(error) == FERRULE_ERROR_ALREADY_COMPLETED && ferrule_hook_run_state(hook) == NULL) {
        atomic_fetch_add(&late_state_refused, 1);
    }
    ferrule_error_free(error);
}

/* A run state is kept through a live consultation only; NULL is refused. */
static void a_run_state_is_refused_once_responded(void) {
    CHECK_ERROR(ferrule_hook_set_run_state(NULL, NULL, NULL), FERRULE_ERROR_NULL_ARG, NULL);
    CHECK(ferrule_hook_run_state(NULL) == NULL);
    ferrule_agent *agent = hooked_agent(1, 2, "", "[\"turn_start\"]", respond_then_keep, NULL, NULL);
    if (agent == NULL) return;
    ferrule_run *run = NULL;
    CHECK_OK(ferrule_agent_start(agent, STR("{\"prompt\": \"go\"}"), NULL, NULL, NULL, &run));
    ferrule_string_free(harness_wait(run));
    ferrule_run_free(run);
    ferrule_agent_free(agent);
    CHECK(atomic_load(&late_state_refused) == 3);
}

int main(int argc, char **argv) {
    srand(11);
    static const harness_case cases[] = {
        {"responses_race_timeouts_and_cancels_and_every_handler_is_freed_once",
         responses_race_timeouts_and_cancels_and_every_handler_is_freed_once},
        {"of_two_responses_racing_exactly_one_is_taken", of_two_responses_racing_exactly_one_is_taken},
        {"a_hooks_user_data_is_freed_once_and_never_when_adding_fails",
         a_hooks_user_data_is_freed_once_and_never_when_adding_fails},
        {"an_accepted_injection_is_never_lost", an_accepted_injection_is_never_lost},
        {"a_decision_that_is_not_json_fails_the_run_with_invalid_json",
         a_decision_that_is_not_json_fails_the_run_with_invalid_json},
        {"a_waiting_hook_sees_its_runs_cancel_at_once",
         a_waiting_hook_sees_its_runs_cancel_at_once},
        {"a_hook_taking_new_messages_keeps_the_whole_history", a_hook_taking_new_messages_keeps_the_whole_history},
        {"a_run_state_is_refused_once_responded", a_run_state_is_refused_once_responded},
    };
    return harness_main(cases, sizeof cases / sizeof cases[0], argc, argv);
}
