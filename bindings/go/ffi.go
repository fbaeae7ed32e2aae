package ferrule

/*
#cgo ferrule_local LDFLAGS: ${SRCDIR}/../../target/release/libferrule.a -lgcc_s -lutil -lrt -lpthread -lm -ldl -lc
#cgo ferrule_system pkg-config: ferrule
#include <stdlib.h>
#include "ferrule.h"
#include "shims.h"
*/
import "C"

import (
	"fmt"
	"math/bits"
	"runtime/cgo"
	"unsafe"
)

// The library must speak the ABI this package was written against.
func init() {
	if got := uint32(C.ferrule_abi_version()); got != C.FERRULE_ABI_VERSION {
		panic(fmt.Sprintf("ferrule: the linked library has ABI version %d, this package needs %d", got, C.FERRULE_ABI_VERSION))
	}
}

// Version is the linked library's version.
func Version() string {
	return goStr(C.ferrule_version())
}

// ConfigureRuntime sizes ferrule's threads before its first run, from JSON such
// as {"worker_threads": 2, "max_callback_threads": 256} (docs/c.md, "Ownership and
// threads"). ErrAlreadyInitialized once a run has started or after an earlier
// call; ErrInvalidArg for an unknown field or a size out of range.
func ConfigureRuntime(config []byte) error {
	text, length := cArg(config)
	return takeError(C.ferrule_runtime_configure(text, length))
}

// goStr copies a borrowed ferrule string.
func goStr(s C.ferrule_str) string {
	return C.GoStringN(s.ptr, C.int(s.len))
}

// goBytes copies a borrowed ferrule string into Go memory, as bytes.
func goBytes(s C.ferrule_str) []byte {
	return C.GoBytes(unsafe.Pointer(s.ptr), C.int(s.len))
}

// lentBytes is a borrowed ferrule string as bytes, without a copy: valid only
// as long as ferrule lends it (a caller that keeps them copies them).
func lentBytes(s C.ferrule_str) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(s.ptr)), int(s.len))
}

// cArg is b as a (pointer, length) argument of a call that only reads it during
// the call (ferrule copies what it keeps): Go memory without Go pointers, which
// cgo lets C read for the call's duration.
func cArg(b []byte) (*C.char, C.size_t) {
	if len(b) == 0 {
		return nil, 0
	}
	return (*C.char)(unsafe.Pointer(unsafe.SliceData(b))), C.size_t(len(b))
}

// cBytes is a copy of b in C memory, for a struct C reads; freed by the
// returned function.
func cBytes(b []byte) (*C.char, C.size_t, func()) {
	if len(b) == 0 {
		return nil, 0, func() {}
	}
	p := C.CBytes(b)
	return (*C.char)(p), C.size_t(len(b)), func() { C.free(p) }
}

// handleTag marks a cgo handle carried as user data. Handles are small
// numbers, and an unsafe.Pointer below 4096 found on a goroutine's stack when
// the runtime moves it is a fatal "invalid pointer found on stack"; with the
// top bit set the value is no address of Go's heap or stacks (nor a
// canonical one), which the runtime leaves alone.
const handleTag = uintptr(1) << (bits.UintSize - 1)

// handleData turns a cgo handle into the user data C passes back.
func handleData(h cgo.Handle) unsafe.Pointer {
	return C.ferrule_go_handle_data(C.uintptr_t(uintptr(h) | handleTag))
}

// dataHandle is the cgo handle behind user data.
func dataHandle(p unsafe.Pointer) cgo.Handle {
	return cgo.Handle(uintptr(p) &^ handleTag)
}

// takeError turns a ferrule error into a Go one (nil for NULL) and frees it.
func takeError(e *C.ferrule_error) error {
	if e == nil {
		return nil
	}
	defer C.ferrule_error_free(e)
	return &Error{Code: Code(C.ferrule_error_code(e)), Message: goStr(C.ferrule_error_message(e))}
}
