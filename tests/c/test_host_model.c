/*
 * A model the host runs (ferrule_agent_builder_set_model): the request it is
 * given, the answer it streams from any thread, retries, cancellation, and every
 * way a host can get it wrong.
 */
#include "harness.h"

#define HOST_CONFIG(extra) "{\"model\": {\"provider\": \"host\", \"name\": \"pocket\"" extra "}}"

/* What the model saw and did, shared with the test. */
typedef struct {
    atomic_int requests;
    atomic_int frees;
    atomic_int cancels;
    atomic_int freed_inside_an_answer;
    char last_request[8192];
    char options[2048];
    char new_messages[4096];
    /* The first `failures` requests fail with `fail_code`, retryable or not. */
    int failures;
    uint32_t fail_code;
    int retryable;
    int stream_before_failing;
} model_state;

/* Set on a host thread while it answers a request. */
static _Thread_local int answering;

static void model_free(void *user_data) {
    model_state *state = user_data;
    if (answering) atomic_fetch_add(&state->freed_inside_an_answer, 1);
    atomic_fetch_add(&state->frees, 1);
}

static void copy_str(char *to, size_t size, ferrule_str from) {
    size_t len = from.len < size - 1 ? from.len : size - 1;
    memcpy(to, from.ptr, len);
    to[len] = '\0';
}

static void remember(model_state *state, ferrule_model_request *request) {
    copy_str(state->last_request, sizeof state->last_request, ferrule_model_request_json(request));
    copy_str(state->options, sizeof state->options, ferrule_model_request_options_json(request));
    copy_str(state->new_messages, sizeof state->new_messages, ferrule_model_request_new_messages_json(request));
}

/* Round 1: "Looking." and a call of `lookup` in three pieces, without an id.
 * Round 2: the answer. Blocking: it runs on a tool callback thread. */
static void two_rounds(void *user_data, ferrule_model_request *request) {
    model_state *state = user_data;
    int n = atomic_fetch_add(&state->requests, 1);
    remember(state, request);
    if (n < state->failures) {
        if (state->stream_before_failing) {
            CHECK_OK(ferrule_model_request_text_delta(request, STR("partial")));
        }
        CHECK_OK(ferrule_model_request_fail(request, state->fail_code, STR("busy"), state->retryable));
        return;
    }
    if (strstr(state->last_request, "\"role\":\"tool\"") == NULL) {
        CHECK_OK(ferrule_model_request_thinking_delta(request, STR("need data")));
        CHECK_OK(ferrule_model_request_text_delta(request, STR("Look")));
        CHECK_OK(ferrule_model_request_text_delta(request, STR("ing.")));
        CHECK_OK(ferrule_model_request_tool_call_delta(request, 0, NULL, 0, STR("lookup"), STR("{\"q\":")));
        CHECK_OK(ferrule_model_request_tool_call_delta(request, 0, NULL, 0, NULL, 0, STR("\"C-1\"")));
        CHECK_OK(ferrule_model_request_tool_call_delta(request, 0, NULL, 0, NULL, 0, STR("}")));
        CHECK_OK(ferrule_model_request_usage(request, 10, 3, 0));
        CHECK_OK(ferrule_model_request_complete(request, NULL, 0));
    } else {
        CHECK_OK(ferrule_model_request_text_delta(request, STR("Found C-1.")));
        CHECK_OK(ferrule_model_request_usage(request, 20, 4, 5));
        CHECK_OK(ferrule_model_request_complete(request, STR("end_turn")));
        /* Nothing goes after the answer. */
        CHECK_ERROR(ferrule_model_request_text_delta(request, STR("more")), FERRULE_ERROR_ALREADY_COMPLETED, NULL);
        CHECK_ERROR(ferrule_model_request_complete(request, NULL, 0), FERRULE_ERROR_ALREADY_COMPLETED, NULL);
    }
}

static void answer_lookup(void *user_data, ferrule_tool_call *call) {
    (void)user_data;
    CHECK_OK(ferrule_tool_call_complete(call, STR("\"plan Gold\"")));
}

static ferrule_agent *host_agent(const char *config, model_state *state, ferrule_model_fn generate, int nonblocking) {
    ferrule_agent_builder *builder = NULL;
    ferrule_error *err = ferrule_agent_builder_new(config, strlen(config), &builder);
    if (err) {
        ferrule_error_free(err);
        return NULL;
    }
    ferrule_tool_spec lookup = harness_spec("lookup", "", answer_lookup, NULL, NULL);
    ferrule_model_spec spec = {
        .struct_size = sizeof(ferrule_model_spec),
        .name = "pocket",
        .name_len = 6,
        .generate = generate,
        .user_data = state,
        .free_user_data = model_free,
        .nonblocking = nonblocking,
    };
    ferrule_agent *agent = NULL;
    if ((err = ferrule_agent_builder_add_tool(builder, &lookup)) || (err = ferrule_agent_builder_set_model(builder, &spec)) ||
        (err = ferrule_agent_build(builder, &agent))) {
        fprintf(stderr, "  %s\n", ferrule_error_message(err).ptr);
        ferrule_error_free(err);
        return NULL;
    }
    return agent;
}

/* ---- cases ------------------------------------------------------------------ */

static void a_host_model_streams_calls_and_answers_like_a_provider(void) {
    model_state state = {0};
    ferrule_agent *agent = host_agent(HOST_CONFIG(", \"max_tokens\": 77"), &state, two_rounds, 0);
    CHECK(agent != NULL);
    event_log log;
    event_log_init(&log);
    char *result = harness_run(agent, &log);
    CHECK(result != NULL);
    CHECK(strstr(result, "\"status\":\"completed\""));
    CHECK(strstr(result, "Found C-1."));
    /* The call came without an id: one was made up, and the result answers it. */
    CHECK(strstr(result, "\"tool_calls\":[{\"id\":\"call_"));
    CHECK(strstr(result, "\"arguments\":\"{\\\"q\\\":\\\"C-1\\\"}\""));
    CHECK(strstr(result, "\"usage\":{\"input_tokens\":30,\"output_tokens\":7,\"cached_tokens\":5}"));
    CHECK(atomic_load(&state.requests) == 2);
    /* The second request: the whole transcript, and where it went on from. */
    CHECK(strstr(state.last_request, "\"first_new_message\":1"));
    CHECK(strstr(state.last_request, "\"max_tokens\":77"));
    CHECK(strstr(state.last_request, "\"model\":\"pocket\""));
    CHECK(strstr(state.last_request, "plan Gold"));
    CHECK(strstr(state.last_request, "\"tool_choice\":\"auto\""));
    CHECK(strstr(state.last_request, "\"name\":\"lookup\""));
    CHECK(strstr(state.last_request, "\"turn\":2"));
    CHECK(strstr(state.last_request, "\"message_count\":3"));
    CHECK(strstr(state.last_request, "\"run_id\":\"run-"));
    CHECK(strstr(state.options, "\"run_id\":\"run-"));
    CHECK(strstr(state.new_messages, "[{\"role\":\"assistant\"") == state.new_messages);
    CHECK(strstr(state.new_messages, "\"role\":\"tool\""));
    CHECK(strstr(state.new_messages, "\"role\":\"user\"") == NULL);
    CHECK(strstr(state.options, "\"messages\"") == NULL);
    CHECK(strstr(state.options, "\"message_count\":3"));
    /* Streamed pieces reached the host's events, in order. */
    CHECK(event_log_count(&log, "\"message_delta\",\"turn\":1,\"thinking\":\"need data\"") == 1);
    CHECK(event_log_count(&log, "\"text\":\"Look\"") == 1);
    CHECK(event_log_count(&log, "\"tool_call_delta\"") == 3);
    CHECK(event_log_count(&log, "\"tool_execution_end\"") == 1);
    ferrule_string_free(result);
    event_log_destroy(&log);
    ferrule_agent_free(agent);
    CHECK(wait_for_count(&state.frees, 1, 5000));
}

/* Nonblocking: the callback returns at once; a host thread answers. */
static void *answer_later(void *request) {
    harness_sleep_ms(5);
    ferrule_model_request *r = request;
    if (ferrule_model_request_text_delta(r, STR("from "))) abort();
    if (ferrule_model_request_text_delta(r, STR("a thread"))) abort();
    if (ferrule_model_request_complete(r, NULL, 0)) abort();
    return NULL;
}

static void hand_to_a_thread(void *user_data, ferrule_model_request *request) {
    model_state *state = user_data;
    atomic_fetch_add(&state->requests, 1);
    CHECK(thread_kind() == 'r');
    pthread_t thread;
    CHECK(pthread_create(&thread, NULL, answer_later, request) == 0);
    pthread_detach(thread);
}

static void a_nonblocking_model_answers_from_its_own_thread(void) {
    model_state state = {0};
    ferrule_agent *agent = host_agent(HOST_CONFIG(""), &state, hand_to_a_thread, 1);
    CHECK(agent != NULL);
    char *result = harness_run(agent, NULL);
    CHECK(result != NULL);
    CHECK(strstr(result, "\"status\":\"completed\""));
    CHECK(strstr(result, "from a thread"));
    ferrule_string_free(result);
    ferrule_agent_free(agent);
    CHECK(wait_for_count(&state.frees, 1, 5000));
}

static void a_retryable_failure_is_asked_again_until_output_has_streamed(void) {
    model_state state = {.failures = 2, .fail_code = FERRULE_ERROR_PROVIDER_RATE_LIMITED, .retryable = 1};
    ferrule_agent *agent =
        host_agent(HOST_CONFIG(", \"max_retries\": 2, \"retry_backoff_ms\": 1"), &state, two_rounds, 0);
    CHECK(agent != NULL);
    event_log log;
    event_log_init(&log);
    char *result = harness_run(agent, &log);
    CHECK(result != NULL);
    CHECK(strstr(result, "\"status\":\"completed\""));
    CHECK(event_log_count(&log, "\"type\":\"retry\"") == 2);
    CHECK(event_log_count(&log, "PROVIDER_RATE_LIMITED") == 2);
    CHECK(atomic_load(&state.requests) == 4);
    ferrule_string_free(result);
    event_log_destroy(&log);
    ferrule_agent_free(agent);

    /* Once text has streamed, a failure ends the run. */
    model_state streamed = {.failures = 1, .fail_code = FERRULE_ERROR_PROVIDER_OVERLOADED, .retryable = 1,
                            .stream_before_failing = 1};
    agent = host_agent(HOST_CONFIG(", \"max_retries\": 2, \"retry_backoff_ms\": 1"), &streamed, two_rounds, 0);
    CHECK(agent != NULL);
    result = harness_run(agent, NULL);
    CHECK(strstr(result, "\"status\":\"failed\""));
    CHECK(strstr(result, "PROVIDER_OVERLOADED"));
    CHECK(strstr(result, "the host model failed: busy"));
    CHECK(atomic_load(&streamed.requests) == 1);
    ferrule_string_free(result);
    ferrule_agent_free(agent);
}

/* A model that never answers until it is cancelled. */
static void on_model_cancel(void *user_data) {
    model_state *state = user_data;
    atomic_fetch_add(&state->cancels, 1);
}

static _Atomic(ferrule_model_request *) waiting_request;

static void wait_forever(void *user_data, ferrule_model_request *request) {
    model_state *state = user_data;
    atomic_store(&waiting_request, request);
    atomic_fetch_add(&state->requests, 1);
    CHECK_OK(ferrule_model_request_on_cancel(request, on_model_cancel, state, NULL));
    CHECK_ERROR(ferrule_model_request_on_cancel(request, on_model_cancel, state, NULL), FERRULE_ERROR_INVALID_ARG,
                "already");
}

/* Starts a run on a model that waits until it is cancelled; `*request` is the
 * run's first request, once it came. */
static void start_waiting(model_state *state, ferrule_agent **agent, ferrule_run **run,
                          ferrule_model_request **request) {
    *agent = host_agent(HOST_CONFIG(""), state, wait_forever, 1);
    CHECK(*agent != NULL);
    CHECK_OK(ferrule_agent_start(*agent, STR("{\"prompt\": \"go\"}"), NULL, NULL, NULL, run));
    CHECK(wait_for_count(&state->requests, 1, 5000));
    *request = atomic_load(&waiting_request);
}

static void cancelling_the_run_cancels_the_request_and_a_late_answer_is_discarded(void) {
    model_state state = {0};
    ferrule_agent *agent = NULL;
    ferrule_run *run = NULL;
    ferrule_model_request *request = NULL;
    start_waiting(&state, &agent, &run, &request);
    CHECK(request != NULL);
    CHECK(!ferrule_model_request_is_cancelled(request));
    ferrule_run_cancel(run);
    CHECK(wait_for_count(&state.cancels, 1, 5000));
    CHECK(ferrule_model_request_is_cancelled(request));
    /* The answer after the cancel is accepted and dropped; the handle is then stale. */
    CHECK_OK(ferrule_model_request_text_delta(request, STR("late")));
    CHECK_OK(ferrule_model_request_complete(request, NULL, 0));
    CHECK_ERROR(ferrule_model_request_fail(request, FERRULE_ERROR_PROVIDER_SERVER, NULL, 0, false),
                FERRULE_ERROR_ALREADY_COMPLETED, NULL);
    CHECK(ferrule_model_request_is_cancelled(request));
    CHECK(ferrule_model_request_json(request).len == 0);
    char *result = harness_wait(run);
    CHECK(strstr(result, "\"status\":\"cancelled\""));
    CHECK(strstr(result, "late") == NULL);
    ferrule_string_free(result);
    ferrule_run_free(run);
    ferrule_agent_free(agent);
    CHECK(atomic_load(&state.cancels) == 1);
}

/* A request outlives its run and agent until the host answers it, and so does
 * the model's user data; the late answer lets go of it, and free_user_data
 * then runs on a ferrule thread, not inside the host's call (whose thread may
 * hold a lock the finalizer takes, or be the thread it joins). */
static void a_late_answer_frees_the_user_data_off_the_answering_thread(void) {
    model_state state = {0};
    ferrule_agent *agent = NULL;
    ferrule_run *run = NULL;
    ferrule_model_request *request = NULL;
    start_waiting(&state, &agent, &run, &request);
    CHECK(request != NULL);
    ferrule_run_cancel(run);
    ferrule_string_free(harness_wait(run));
    ferrule_run_free(run);
    ferrule_agent_free(agent);
    harness_sleep_ms(20);
    CHECK(atomic_load(&state.frees) == 0); /* the unanswered request holds it */
    answering = 1;
    CHECK_OK(ferrule_model_request_text_delta(request, STR("late")));
    CHECK_OK(ferrule_model_request_complete(request, NULL, 0));
    answering = 0;
    CHECK(wait_for_count(&state.frees, 1, 5000));
    CHECK(atomic_load(&state.freed_inside_an_answer) == 0);
}

static void bad_answer(void *user_data, ferrule_model_request *request) {
    model_state *state = user_data;
    atomic_fetch_add(&state->requests, 1);
    CHECK_ERROR(ferrule_model_request_text_delta(request, "\xff", 1), FERRULE_ERROR_INVALID_UTF8, "text");
    CHECK_ERROR(ferrule_model_request_text_delta(NULL, STR("x")), FERRULE_ERROR_NULL_ARG, "request");
    CHECK_ERROR(ferrule_model_request_text_delta(request, NULL, 3), FERRULE_ERROR_NULL_ARG, "text");
    CHECK_ERROR(ferrule_model_request_on_cancel(request, NULL, NULL, NULL), FERRULE_ERROR_NULL_ARG, "on_cancel");
    if (state->fail_code) {
        CHECK_ERROR(ferrule_model_request_fail(request, FERRULE_ERROR_NULL_ARG, STR("no"), false), FERRULE_ERROR_INVALID_ARG,
                    "code 1");
    } else {
        CHECK_ERROR(ferrule_model_request_complete(request, STR("finished")), FERRULE_ERROR_INVALID_ARG,
                    "\"finished\"");
    }
}

static void a_bad_answer_fails_the_run_and_a_wrong_spec_is_refused(void) {
    model_state state = {0};
    ferrule_agent *agent = host_agent(HOST_CONFIG(""), &state, bad_answer, 0);
    CHECK(agent != NULL);
    char *result = harness_run(agent, NULL);
    CHECK(strstr(result, "\"status\":\"failed\""));
    CHECK(strstr(result, "PROVIDER_MALFORMED_STREAM"));
    ferrule_string_free(result);
    ferrule_agent_free(agent);
    model_state failing = {.fail_code = 1};
    agent = host_agent(HOST_CONFIG(""), &failing, bad_answer, 0);
    CHECK(agent != NULL);
    result = harness_run(agent, NULL);
    CHECK(strstr(result, "\"status\":\"failed\""));
    CHECK(strstr(result, "PROVIDER_SERVER"));
    ferrule_string_free(result);
    ferrule_agent_free(agent);

    /* The spec and the configuration must agree; nothing is taken on error. */
    model_state unused = {0};
    ferrule_model_spec spec = {
        .struct_size = sizeof(ferrule_model_spec), .name = "pocket", .name_len = 6,
        .generate = two_rounds, .user_data = &unused, .free_user_data = model_free,
    };
    ferrule_agent_builder *builder = NULL;
    const char *scripted = "{\"model\": {\"provider\": \"scripted\", \"script\": [{\"text\": \"x\"}]}}";
    CHECK_OK(ferrule_agent_builder_new(scripted, strlen(scripted), &builder));
    CHECK_ERROR(ferrule_agent_builder_set_model(builder, &spec), FERRULE_ERROR_INVALID_ARG, "\"host\"");
    ferrule_agent_builder_free(builder);

    const char *config = HOST_CONFIG("");
    CHECK_OK(ferrule_agent_builder_new(config, strlen(config), &builder));
    ferrule_model_spec wrong = spec;
    wrong.name = "other";
    wrong.name_len = 5;
    CHECK_ERROR(ferrule_agent_builder_set_model(builder, &wrong), FERRULE_ERROR_INVALID_ARG, "\"other\"");
    wrong = spec;
    wrong.struct_size = 8;
    CHECK_ERROR(ferrule_agent_builder_set_model(builder, &wrong), FERRULE_ERROR_INVALID_ARG, "struct_size");
    wrong = spec;
    wrong.generate = NULL;
    CHECK_ERROR(ferrule_agent_builder_set_model(builder, &wrong), FERRULE_ERROR_NULL_ARG, "spec->generate");
    CHECK_ERROR(ferrule_agent_builder_set_model(builder, NULL), FERRULE_ERROR_NULL_ARG, "spec");
    CHECK(atomic_load(&unused.frees) == 0);
    /* Without a model, a host configuration does not build. */
    ferrule_agent *agent_without = NULL;
    CHECK_ERROR(ferrule_agent_build(builder, &agent_without), FERRULE_ERROR_INVALID_ARG,
                "ferrule_agent_builder_set_model");
    CHECK_OK(ferrule_agent_builder_new(config, strlen(config), &builder));
    CHECK_OK(ferrule_agent_builder_set_model(builder, &spec));
    CHECK_ERROR(ferrule_agent_builder_set_model(builder, &spec), FERRULE_ERROR_INVALID_ARG, "already");
    /* A builder freed unbuilt frees the model it took, once. */
    ferrule_agent_builder_free(builder);
    CHECK(wait_for_count(&unused.frees, 1, 5000));
    CHECK(atomic_load(&unused.requests) == 0);
}

/* ---- a piece racing the answer ---------------------------------------------- */

typedef struct {
    ferrule_model_request *request;
    atomic_int accepted;
    atomic_int go;
    /* Requests the model has finished with (its streaming thread joined). */
    atomic_int finished;
} race;

static void *stream_until_refused(void *arg) {
    race *r = arg;
    while (!atomic_load(&r->go)) {
    }
    for (;;) {
        ferrule_error *err = ferrule_model_request_text_delta(r->request, "x", 1);
        if (err) {
            ferrule_error_free(err);
            return NULL;
        }
        atomic_fetch_add(&r->accepted, 1);
    }
}

static void racing(void *user_data, ferrule_model_request *request) {
    race *r = user_data;
    r->request = request;
    atomic_store(&r->accepted, 0);
    pthread_t thread;
    if (pthread_create(&thread, NULL, stream_until_refused, r) != 0) abort();
    atomic_store(&r->go, 1);
    for (volatile int spin = 0; spin < (int)(((uintptr_t)request >> 4) % 2000); spin++) {
    }
    if (ferrule_model_request_complete(request, NULL, 0)) abort();
    pthread_join(thread, NULL);
    atomic_store(&r->go, 0);
    atomic_fetch_add(&r->finished, 1);
}

static void a_piece_accepted_is_in_the_answer_however_it_races_the_completion(void) {
    static race r;
    ferrule_agent_builder *builder = NULL;
    const char *config = HOST_CONFIG("");
    CHECK_OK(ferrule_agent_builder_new(config, strlen(config), &builder));
    ferrule_model_spec spec = {.struct_size = sizeof spec, .name = "pocket", .name_len = 6, .generate = racing,
                               .user_data = &r};
    CHECK_OK(ferrule_agent_builder_set_model(builder, &spec));
    ferrule_agent *agent = NULL;
    CHECK_OK(ferrule_agent_build(builder, &agent));
    for (int i = 0; i < 300; i++) {
        char *result = harness_run(agent, NULL);
        CHECK(result != NULL);
        CHECK(wait_for_count(&r.finished, i + 1, 5000));
        /* Every x the model was told it sent is in the answer, and no other. */
        int accepted = atomic_load(&r.accepted);
        const char *text = strstr(result, "\"final\":");
        CHECK(text != NULL);
        int xs = 0;
        const char *at = strstr(text, "\"text\":\"");
        if (at) {
            for (at += 8; *at == 'x'; at++) xs++;
        }
        if (xs != accepted) fprintf(stderr, "  run %d: %d accepted, %d in the answer\n", i, accepted, xs);
        CHECK(xs == accepted);
        ferrule_string_free(result);
    }
    ferrule_agent_free(agent);
}

/* ---- an answer past its bounds ----------------------------------------------- */

static void flood(void *user_data, ferrule_model_request *request) {
    model_state *state = user_data;
    atomic_fetch_add(&state->requests, 1);
    ferrule_error *err = NULL;
    for (int i = 0; i < 2000000 && !err; i++) {
        err = ferrule_model_request_tool_call_delta(request, 0, NULL, 0, NULL, 0, NULL, 0);
    }
    CHECK_ERROR(err, FERRULE_ERROR_PROVIDER_MALFORMED_STREAM, "larger than");
    /* Whatever the host says next, the request has failed for good. */
    ferrule_model_request_fail(request, FERRULE_ERROR_PROVIDER_SERVER, STR("again?"), true);
}

static void an_answer_past_its_bounds_fails_for_good_and_settings_that_mean_nothing_are_refused(void) {
    model_state state = {0};
    ferrule_agent *agent = host_agent(HOST_CONFIG(", \"max_retries\": 2, \"retry_backoff_ms\": 1"), &state, flood, 0);
    CHECK(agent != NULL);
    char *result = harness_run(agent, NULL);
    CHECK(strstr(result, "\"status\":\"failed\""));
    CHECK(strstr(result, "PROVIDER_MALFORMED_STREAM"));
    CHECK(atomic_load(&state.requests) == 1);
    ferrule_string_free(result);
    ferrule_agent_free(agent);

    model_state unused = {0};
    ferrule_model_spec spec = {.struct_size = sizeof spec, .name = "pocket", .name_len = 6, .generate = flood,
                               .user_data = &unused, .free_user_data = model_free};
    const char *configs[] = {HOST_CONFIG(", \"thinking\": {\"include_thoughts\": true}"),
                             HOST_CONFIG(", \"base_url\": \"http://127.0.0.1:1\""),
                             HOST_CONFIG(", \"api_key_env\": \"HOME\"")};
    for (size_t i = 0; i < sizeof configs / sizeof configs[0]; i++) {
        ferrule_agent_builder *builder = NULL;
        CHECK_OK(ferrule_agent_builder_new(configs[i], strlen(configs[i]), &builder));
        CHECK_ERROR(ferrule_agent_builder_set_model(builder, &spec), FERRULE_ERROR_INVALID_ARG, "means nothing");
        ferrule_agent_builder_free(builder);
    }
    CHECK(atomic_load(&unused.frees) == 0);
}

int main(int argc, char **argv) {
    static const harness_case cases[] = {
        {"a_host_model_streams_calls_and_answers_like_a_provider", a_host_model_streams_calls_and_answers_like_a_provider},
        {"a_nonblocking_model_answers_from_its_own_thread", a_nonblocking_model_answers_from_its_own_thread},
        {"a_retryable_failure_is_asked_again_until_output_has_streamed",
         a_retryable_failure_is_asked_again_until_output_has_streamed},
        {"cancelling_the_run_cancels_the_request_and_a_late_answer_is_discarded",
         cancelling_the_run_cancels_the_request_and_a_late_answer_is_discarded},
        {"a_late_answer_frees_the_user_data_off_the_answering_thread",
         a_late_answer_frees_the_user_data_off_the_answering_thread},
        {"a_bad_answer_fails_the_run_and_a_wrong_spec_is_refused", a_bad_answer_fails_the_run_and_a_wrong_spec_is_refused},
        {"a_piece_accepted_is_in_the_answer_however_it_races_the_completion",
         a_piece_accepted_is_in_the_answer_however_it_races_the_completion},
        {"an_answer_past_its_bounds_fails_for_good_and_settings_that_mean_nothing_are_refused",
         an_answer_past_its_bounds_fails_for_good_and_settings_that_mean_nothing_are_refused},
    };
    return harness_main(cases, sizeof cases / sizeof cases[0], argc, argv);
}
