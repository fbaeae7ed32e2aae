/* A program of a project that found ferrule with find_package: one run of an
 * agent on the scripted model; exits 0 when the run completed with its answer. */
#include <stdio.h>
#include <string.h>

#include <ferrule.h>

#define STR(s) s, strlen(s)

int main(void) {
    const char *config = "{\"model\": {\"provider\": \"scripted\", \"script\": [{\"text\": \"found\"}]}}";
    ferrule_agent_builder *builder = NULL;
    ferrule_agent *agent = NULL;
    ferrule_run *run = NULL;
    char *result = NULL;
    size_t len = 0;
    ferrule_error *err = ferrule_agent_builder_new(STR(config), &builder);
    if (!err) err = ferrule_agent_build(builder, &agent);
    if (!err) err = ferrule_agent_start(agent, STR("{\"prompt\": \"go\"}"), NULL, NULL, NULL, &run);
    if (!err) err = ferrule_run_wait(run, &result, &len);
    if (err) {
        fprintf(stderr, "ferrule: %s\n", ferrule_error_message(err).ptr);
        ferrule_error_free(err);
        return 1;
    }
    int completed = strstr(result, "\"status\":\"completed\"") != NULL && strstr(result, "found") != NULL;
    printf("ferrule %s: %s\n", ferrule_version().ptr, completed ? "completed" : result);
    ferrule_string_free(result);
    ferrule_run_free(run);
    ferrule_agent_free(agent);
    return completed ? 0 : 1;
}
