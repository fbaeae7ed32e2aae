package ferrule

/*
#include "ferrule.h"
*/
import "C"

import "unsafe"

// The functions ferrule calls, through the shims in shims.c. Their user data is a
// cgo handle (see handleData), or a call's key in liveCalls; no Go pointer is
// ever kept by C.

// released is user data with something to do when ferrule lets go of it.
type released interface{ release() }

//export goTool
func goTool(userData unsafe.Pointer, call *C.ferrule_tool_call) {
	dataHandle(userData).Value().(*registeredTool).invoke(call)
}

//export goModel
func goModel(userData unsafe.Pointer, request *C.ferrule_model_request) {
	dataHandle(userData).Value().(*registeredModel).generate(request)
}

//export goHook
func goHook(userData unsafe.Pointer, hook *C.ferrule_hook) {
	dataHandle(userData).Value().(*Hook).consult(hook)
}

//export goEvent
func goEvent(userData unsafe.Pointer, json *C.char, length C.size_t) {
	// Borrowed for the call: deliver copies what it keeps.
	dataHandle(userData).Value().(*eventSink).deliver(unsafe.Slice((*byte)(unsafe.Pointer(json)), length))
}

//export goLog
func goLog(userData unsafe.Pointer, json *C.char, length C.size_t) {
	// Borrowed for the call: the record is decoded into Go memory.
	dataHandle(userData).Value().(*logSink).handle(unsafe.Slice((*byte)(unsafe.Pointer(json)), length))
}

//export goSpan
func goSpan(userData unsafe.Pointer, json *C.char, length C.size_t) {
	// Borrowed for the call: the tracer copies what it keeps.
	dataHandle(userData).Value().(*spanSink).handle(unsafe.Slice((*byte)(unsafe.Pointer(json)), length))
}

//export goCancel
func goCancel(userData unsafe.Pointer) {
	cancelCall(uintptr(dataHandle(userData)))
}

//export goFree
func goFree(userData unsafe.Pointer) {
	h := dataHandle(userData)
	if r, ok := h.Value().(released); ok {
		r.release()
	}
	h.Delete()
}
