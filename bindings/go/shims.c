#include "shims.h"
#include "_cgo_export.h"

void ferrule_go_tool(void *user_data, ferrule_tool_call *call) { goTool(user_data, call); }

void ferrule_go_hook(void *user_data, ferrule_hook *hook) { goHook(user_data, hook); }

void ferrule_go_model(void *user_data, ferrule_model_request *request) { goModel(user_data, request); }

void ferrule_go_event(void *user_data, const char *json, size_t len) { goEvent(user_data, (char *)json, len); }

void ferrule_go_log(void *user_data, const char *json, size_t len) { goLog(user_data, (char *)json, len); }

void ferrule_go_span(void *user_data, const char *json, size_t len) { goSpan(user_data, (char *)json, len); }

void ferrule_go_free(void *user_data) { goFree(user_data); }

void ferrule_go_cancel(void *user_data) { goCancel(user_data); }

void *ferrule_go_handle_data(uintptr_t handle) { return (void *)handle; }
