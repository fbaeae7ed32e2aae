/*
 * Agents added to another agent's builder (ferrule_agent_builder_add_agent):
 * called as a tool, handed off to, and every way a host can get the spec wrong.
 */
#include "harness.h"

#define SCRIPT(turns) "{\"model\": {\"provider\": \"scripted\", \"script\": [" turns "]}}"

/* ---- tools ------------------------------------------------------------------ */

static void answer_found(void *user_data, ferrule_tool_call *call) {
    (void)user_data;
    CHECK_OK(ferrule_tool_call_complete(call, STR("\"found it\"")));
}

/* ---- helpers ----------------------------------------------------------------- */

static ferrule_agent_tool_spec agent_spec(const char *name, const ferrule_agent *agent, const char *mode,
                                          const char *options) {
    ferrule_agent_tool_spec spec = {
        .struct_size = sizeof(ferrule_agent_tool_spec),
        .name = name,
        .name_len = strlen(name),
        .description = "an agent",
        .description_len = 8,
        .agent = agent,
        .input_schema = "",
        .input_schema_len = 0,
        .mode = mode,
        .mode_len = strlen(mode),
        .options = options,
        .options_len = strlen(options),
    };
    return spec;
}

/* The researcher: calls its host tool `lookup`, then answers. */
static ferrule_agent *researcher(counter *tool_data) {
    ferrule_tool_spec lookup = harness_spec("lookup", "", answer_found, tool_data, counter_free);
    return harness_agent(SCRIPT("{\"tool_calls\": [{\"id\": \"r1\", \"name\": \"lookup\", \"arguments\": {}}],"
                                " \"usage\": {\"input_tokens\": 10, \"output_tokens\": 1}},"
                                " {\"text\": \"the facts\", \"usage\": {\"input_tokens\": 20, \"output_tokens\": 2}}"),
                         &lookup, 1);
}

static ferrule_agent_builder *builder_of(const char *config) {
    ferrule_agent_builder *builder = NULL;
    ferrule_error *err = ferrule_agent_builder_new(config, strlen(config), &builder);
    if (err) {
        ferrule_error_free(err);
        return NULL;
    }
    return builder;
}

/* ---- cases ------------------------------------------------------------------ */

static void an_agent_called_as_a_tool_runs_nested_and_is_counted_once(void) {
    counter tool_data = {0};
    ferrule_agent *child = researcher(&tool_data);
    CHECK(child != NULL);
    ferrule_agent_builder *builder = builder_of(
        SCRIPT("{\"tool_calls\": [{\"id\": \"c1\", \"name\": \"researcher\", \"arguments\": {\"input\": \"dig\"}}],"
               " \"usage\": {\"input_tokens\": 100, \"output_tokens\": 10}},"
               " {\"text\": \"done\", \"usage\": {\"input_tokens\": 200, \"output_tokens\": 20}}"));
    CHECK(builder != NULL);
    ferrule_agent_tool_spec spec = agent_spec("researcher", child, "tool", "");
    CHECK_OK(ferrule_agent_builder_add_agent(builder, &spec));
    /* The builder holds the child: the host's handle may go at once. */
    ferrule_agent_free(child);
    CHECK(atomic_load(&tool_data.frees) == 0);
    ferrule_agent *parent = NULL;
    CHECK_OK(ferrule_agent_build(builder, &parent));

    event_log log;
    event_log_init(&log);
    char *result = harness_run(parent, &log);
    CHECK(result != NULL);
    CHECK(strstr(result, "\"status\":\"completed\""));
    CHECK(strstr(result, "the facts"));
    CHECK(!strstr(result, "found it")); /* the nested transcript is not the parent's */
    CHECK(strstr(result, "\"usage\":{\"input_tokens\":330,\"output_tokens\":33}"));
    CHECK(event_log_count(&log, "\"type\":\"agent_event\"") == 12);
    CHECK(event_log_count(&log, "\"agent\":\"researcher\",\"depth\":1") == 12);
    /* The nested tool's end and the nested run's end, wrapped. */
    CHECK(event_log_count(&log, "found it") == 2);
    CHECK(strstr(log.events[log.count - 1], "\"type\":\"run_end\""));
    ferrule_string_free(result);
    event_log_destroy(&log);
    /* The child's tools go with the last agent that holds it. */
    CHECK(atomic_load(&tool_data.frees) == 0);
    ferrule_agent_free(parent);
    CHECK(atomic_load(&tool_data.frees) == 1);
}

static void a_handoff_hands_the_run_on(void) {
    ferrule_agent *billing = harness_agent(SCRIPT("{}, {\"text\": \"billing here\"}"), NULL, 0);
    CHECK(billing != NULL);
    ferrule_agent_builder *builder =
        builder_of(SCRIPT("{\"tool_calls\": [{\"id\": \"h1\", \"name\": \"transfer_to_billing\", \"arguments\": {}}]}"));
    CHECK(builder != NULL);
    ferrule_agent_tool_spec spec = agent_spec("billing", billing, "handoff", "{\"handoff_messages\": \"without_tool_calls\"}");
    CHECK_OK(ferrule_agent_builder_add_agent(builder, &spec));
    ferrule_agent_free(billing);
    ferrule_agent *front = NULL;
    CHECK_OK(ferrule_agent_build(builder, &front));
    event_log log;
    event_log_init(&log);
    char *result = harness_run(front, &log);
    CHECK(result && strstr(result, "\"status\":\"completed\""));
    CHECK(strstr(result, "\"agent\":\"billing\""));
    CHECK(strstr(result, "billing here"));
    CHECK(!strstr(result, "transfer_to_billing")); /* the handoff carried no tool calls */
    CHECK(event_log_count(&log, "\"type\":\"handoff\"") == 1);
    ferrule_string_free(result);
    event_log_destroy(&log);
    ferrule_agent_free(front);
}

/* ---- hook states across a handoff ------------------------------------------- */

/* A hook's state for the run: whose hook made it. */
typedef struct {
    char agent;
} hook_state;

static atomic_int states_freed[2], foreign_states_seen, fresh_states_seen;

static void free_hook_state(void *state) {
    atomic_fetch_add(&states_freed[((hook_state *)state)->agent == 'b'], 1);
    free(state);
}

/* Keeps a state for the run on the first turn it is consulted at, noting
 * whether it found one already and whether it was its own agent's. */
static void keep_state(void *user_data, ferrule_hook *hook) {
    char agent = *(const char *)user_data;
    hook_state *state = ferrule_hook_run_state(hook);
    if (state == NULL) {
        atomic_fetch_add(&fresh_states_seen, 1);
        state = malloc(sizeof *state);
        state->agent = agent;
        ferrule_error *error = ferrule_hook_set_run_state(hook, state, free_hook_state);
        if (error != NULL) free(state);
        ferrule_error_free(error);
    } else if (state->agent != agent) {
        atomic_fetch_add(&foreign_states_seen, 1);
    }
    ferrule_error_free(ferrule_hook_respond(hook, STR("{}")));
}

/* After a handoff the other agent's hook starts without a state, never sees
 * the first agent's, and each state is freed once by the time the wait returns. */
static void a_handoff_starts_the_other_agents_hooks_afresh(void) {
    static const char a = 'a', b = 'b';
    ferrule_agent_builder *builder = builder_of(SCRIPT("{}, {\"text\": \"billing here\"}"));
    CHECK(builder != NULL);
    CHECK_OK(ferrule_agent_builder_add_hook(builder, STR("[\"turn_start\"]"), keep_state, (void *)&b, NULL));
    ferrule_agent *billing = NULL;
    CHECK_OK(ferrule_agent_build(builder, &billing));
    builder = builder_of(SCRIPT("{\"tool_calls\": [{\"id\": \"h1\", \"name\": \"transfer_to_billing\", \"arguments\": {}}]}"));
    CHECK(builder != NULL);
    CHECK_OK(ferrule_agent_builder_add_hook(builder, STR("[\"turn_start\"]"), keep_state, (void *)&a, NULL));
    ferrule_agent_tool_spec spec = agent_spec("billing", billing, "handoff", "{}");
    CHECK_OK(ferrule_agent_builder_add_agent(builder, &spec));
    ferrule_agent_free(billing);
    ferrule_agent *front = NULL;
    CHECK_OK(ferrule_agent_build(builder, &front));
    char *result = harness_run(front, NULL);
    CHECK(result && strstr(result, "\"agent\":\"billing\""));
    ferrule_string_free(result);
    CHECK(atomic_load(&fresh_states_seen) == 2);
    CHECK(atomic_load(&foreign_states_seen) == 0);
    CHECK(atomic_load(&states_freed[0]) == 1 && atomic_load(&states_freed[1]) == 1);
    ferrule_agent_free(front);
}

static void a_wrong_spec_is_refused_and_changes_nothing(void) {
    ferrule_agent *child = harness_agent(SCRIPT("{\"text\": \"x\"}"), NULL, 0);
    CHECK(child != NULL);
    ferrule_agent_builder *builder = builder_of(SCRIPT("{\"text\": \"x\"}"));
    CHECK(builder != NULL);
    ferrule_agent_tool_spec spec = agent_spec("helper", child, "tool", "");

    CHECK_ERROR(ferrule_agent_builder_add_agent(NULL, &spec), FERRULE_ERROR_NULL_ARG, "builder");
    CHECK_ERROR(ferrule_agent_builder_add_agent(builder, NULL), FERRULE_ERROR_NULL_ARG, "spec");
    ferrule_agent_tool_spec wrong = spec;
    wrong.agent = NULL;
    CHECK_ERROR(ferrule_agent_builder_add_agent(builder, &wrong), FERRULE_ERROR_NULL_ARG, "spec->agent");
    wrong = spec;
    wrong.struct_size = 8;
    CHECK_ERROR(ferrule_agent_builder_add_agent(builder, &wrong), FERRULE_ERROR_INVALID_ARG, "struct_size");
    wrong = spec;
    wrong.mode = "delegate";
    wrong.mode_len = 8;
    CHECK_ERROR(ferrule_agent_builder_add_agent(builder, &wrong), FERRULE_ERROR_INVALID_ARG, "delegate");
    wrong = spec;
    wrong.options = "{\"timeout\": 5}";
    wrong.options_len = strlen(wrong.options);
    CHECK_ERROR(ferrule_agent_builder_add_agent(builder, &wrong), FERRULE_ERROR_INVALID_ARG, "timeout");
    wrong.options = "{\"timeout_ms\": 5, \"timeout_ms\": 6}";
    wrong.options_len = strlen(wrong.options);
    CHECK_ERROR(ferrule_agent_builder_add_agent(builder, &wrong), FERRULE_ERROR_INVALID_ARG, "timeout_ms");
    wrong.options = "{\"timeout_ms\": ";
    wrong.options_len = strlen(wrong.options);
    CHECK_ERROR(ferrule_agent_builder_add_agent(builder, &wrong), FERRULE_ERROR_INVALID_JSON, NULL);
    wrong = spec;
    wrong.options = "{\"handoff_messages\": \"all\", \"timeout_ms\": 5}";
    wrong.options_len = strlen(wrong.options);
    wrong.mode = "handoff";
    wrong.mode_len = 7;
    CHECK_ERROR(ferrule_agent_builder_add_agent(builder, &wrong), FERRULE_ERROR_INVALID_ARG, "timeout_ms");
    wrong = spec;
    wrong.name = "bad\xff";
    wrong.name_len = 4;
    CHECK_ERROR(ferrule_agent_builder_add_agent(builder, &wrong), FERRULE_ERROR_INVALID_UTF8, "spec->name");
    wrong = spec;
    wrong.input_schema = "{\"type\": \"nonsense\"}";
    wrong.input_schema_len = strlen(wrong.input_schema);
    CHECK_ERROR(ferrule_agent_builder_add_agent(builder, &wrong), FERRULE_ERROR_INVALID_SCHEMA, NULL);

    /* None of that added anything: the name is still free, once. */
    CHECK_OK(ferrule_agent_builder_add_agent(builder, &spec));
    CHECK_ERROR(ferrule_agent_builder_add_agent(builder, &spec), FERRULE_ERROR_DUPLICATE_TOOL, "helper");
    ferrule_agent_builder_free(builder);
    ferrule_agent_free(child);
}

int main(int argc, char **argv) {
    static const harness_case cases[] = {
        {"an_agent_called_as_a_tool_runs_nested_and_is_counted_once",
         an_agent_called_as_a_tool_runs_nested_and_is_counted_once},
        {"a_handoff_hands_the_run_on", a_handoff_hands_the_run_on},
        {"a_handoff_starts_the_other_agents_hooks_afresh", a_handoff_starts_the_other_agents_hooks_afresh},
        {"a_wrong_spec_is_refused_and_changes_nothing", a_wrong_spec_is_refused_and_changes_nothing},
    };
    return harness_main(cases, sizeof cases / sizeof cases[0], argc, argv);
}
