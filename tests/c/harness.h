/*
 * A minimal test harness for ferrule's C tests: named cases, CHECK macros that
 * fail the current case, helpers for ferrule errors, counters and event logs.
 */
#ifndef FERRULE_TEST_HARNESS_H
#define FERRULE_TEST_HARNESS_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* pthread_getname_np */
#endif
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ferrule.h"

#define STR(s) (s), strlen(s)

extern int harness_case_failed;

#define CHECK(cond)                                                                   \
    do {                                                                              \
        if (!(cond)) {                                                                \
            fprintf(stderr, "  %s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
            harness_case_failed = 1;                                                  \
            return;                                                                   \
        }                                                                             \
    } while (0)

/* Checks that `err` is an error with `code` whose message contains `needle`
 * (NULL: any message), then frees it. */
#define CHECK_ERROR(err, code, needle) CHECK(harness_expect_error((err), (code), (needle), __FILE__, __LINE__))
#define CHECK_OK(err) CHECK(harness_expect_ok((err), __FILE__, __LINE__))

typedef struct {
    const char *name;
    void (*run)(void);
} harness_case;

int harness_expect_error(ferrule_error *err, uint32_t code, const char *needle, const char *file, int line);
int harness_expect_ok(ferrule_error *err, const char *file, int line);
int harness_main(const harness_case *cases, size_t count, int argc, char **argv);
void harness_sleep_ms(long ms);

/* ---- counting free_user_data ------------------------------------------------- */

typedef struct {
    atomic_int frees;
} counter;

void counter_free(void *user_data);

/* ---- an event log: every event JSON of one run, in order --------------------- */

typedef struct {
    pthread_mutex_t lock;
    char **events;
    size_t count;
    size_t capacity;
    atomic_int freed;
} event_log;

void event_log_init(event_log *log);
void event_log_destroy(event_log *log);
void event_log_on_event(void *user_data, const char *json, size_t len);
void event_log_free(void *user_data);
/* How many events contain `needle`. */
size_t event_log_count(event_log *log, const char *needle);
/* Waits until the run's event user data was freed (after run_end). */
int event_log_wait_freed(event_log *log, long timeout_ms);

/* ---- latches: threads wait until the test opens it ----------------------------- */

typedef struct {
    pthread_mutex_t lock;
    pthread_cond_t opened;
    int open;
} latch;

void latch_init(latch *l);
void latch_destroy(latch *l);
void latch_wait(latch *l);
void latch_open(latch *l);

/* Waits until `*value` reaches `expected` (another thread counts up). */
int wait_for_count(atomic_int *value, int expected, long timeout_ms);

/* ---- stderr ------------------------------------------------------------------ */

/* Sends this process's stderr to a temporary file until capture_stderr_end,
 * which returns what was written (free it). */
int capture_stderr_begin(void);
char *capture_stderr_end(int saved);

/* ---- threads ----------------------------------------------------------------- */

/* Which of ferrule's threads the caller is on: 'r' a runtime thread
 * ("ferrule-N"), 'c' a tool callback thread ("ferrule-cb-N"), 'e' an event
 * thread ("ferrule-ev-N"), 'l' the logger thread ("ferrule-log"), 'h' any
 * other (a host thread). */
char thread_kind(void);

/* ---- building agents --------------------------------------------------------- */

/* A spec for `name` with an open object schema and `options` JSON (may be ""). */
ferrule_tool_spec harness_spec(const char *name, const char *options, ferrule_tool_fn execute, void *user_data,
                               void (*free_user_data)(void *));
/* Builds an agent from `config` and `count` specs; NULL on failure (reported). */
ferrule_agent *harness_agent(const char *config, const ferrule_tool_spec *specs, size_t count);
/* Builds an agent whose scripted model calls `spec`'s tool `calls` times at once
 * in each of `rounds` rounds, then answers "done"; `extra` adds config fields
 * (", \"tool_timeout_ms\": 1") or is "". max_concurrent_tools is `calls`. */
ferrule_agent *harness_batch_agent(const ferrule_tool_spec *spec, int calls, int rounds, const char *extra);
/* Waits for `run` and returns its result JSON (free with ferrule_string_free). */
char *harness_wait(ferrule_run *run);
/* Runs `agent` on {"prompt": "go"} with events to `log` (may be NULL), frees the
 * run and returns its result JSON (free with ferrule_string_free), or NULL. */
char *harness_run(ferrule_agent *agent, event_log *log);

#endif
