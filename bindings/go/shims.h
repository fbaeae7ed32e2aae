// C-side glue between ferrule's callbacks and the Go functions exported in
// callbacks.go: ferrule's function types with const qualifiers, and cgo handles
// carried as user data.
#ifndef FERRULE_GO_SHIMS_H
#define FERRULE_GO_SHIMS_H

#include <stdint.h>
#include "ferrule.h"

void ferrule_go_tool(void *user_data, ferrule_tool_call *call);
void ferrule_go_hook(void *user_data, ferrule_hook *hook);
void ferrule_go_model(void *user_data, ferrule_model_request *request);
void ferrule_go_event(void *user_data, const char *json, size_t len);
void ferrule_go_log(void *user_data, const char *json, size_t len);
void ferrule_go_span(void *user_data, const char *json, size_t len);
void ferrule_go_free(void *user_data);
void ferrule_go_cancel(void *user_data);
void *ferrule_go_handle_data(uintptr_t handle);

#endif
