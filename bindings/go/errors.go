package ferrule

import (
	"encoding/json"
	"fmt"
)

// Code is a stable ferrule error code (FERRULE_ERROR_* in ferrule.h).
type Code uint32

// The codes; their numbers never change.
const (
	CodeNullArg                 Code = 1
	CodeInvalidUTF8             Code = 2
	CodeInvalidJSON             Code = 3
	CodeInvalidArg              Code = 4
	CodeInvalidSchema           Code = 5
	CodeDuplicateTool           Code = 6
	CodePanic                   Code = 7
	CodeCancelled               Code = 8
	CodeTimeout                 Code = 9
	CodeWouldDeadlock           Code = 10
	CodeAlreadyCompleted        Code = 11
	CodeAlreadyInitialized      Code = 12
	CodeForked                  Code = 13
	CodeShutdown                Code = 14
	CodeToolFailed              Code = 15
	CodeScriptExhausted         Code = 16
	CodeResourceExhausted       Code = 17
	CodeInvalidOutput           Code = 18
	CodeHookAborted             Code = 19
	CodeProviderAuth            Code = 32
	CodeProviderInvalidRequest  Code = 33
	CodeProviderNotFound        Code = 34
	CodeProviderRateLimited     Code = 35
	CodeProviderOverloaded      Code = 36
	CodeProviderServer          Code = 37
	CodeProviderNetwork         Code = 38
	CodeProviderMalformedStream Code = 39
)

// codeNames are the codes as JSON names them (a run result's "error").
var codeNames = map[Code]string{
	CodeNullArg: "NULL_ARG", CodeInvalidUTF8: "INVALID_UTF8", CodeInvalidJSON: "INVALID_JSON",
	CodeInvalidArg: "INVALID_ARG", CodeInvalidSchema: "INVALID_SCHEMA", CodeDuplicateTool: "DUPLICATE_TOOL",
	CodePanic: "PANIC", CodeCancelled: "CANCELLED", CodeTimeout: "TIMEOUT", CodeWouldDeadlock: "WOULD_DEADLOCK",
	CodeAlreadyCompleted: "ALREADY_COMPLETED", CodeAlreadyInitialized: "ALREADY_INITIALIZED",
	CodeForked: "FORKED", CodeShutdown: "SHUTDOWN", CodeToolFailed: "TOOL_FAILED",
	CodeScriptExhausted: "SCRIPT_EXHAUSTED", CodeResourceExhausted: "RESOURCE_EXHAUSTED",
	CodeInvalidOutput: "INVALID_OUTPUT", CodeHookAborted: "HOOK_ABORTED",
	CodeProviderAuth: "PROVIDER_AUTH", CodeProviderInvalidRequest: "PROVIDER_INVALID_REQUEST",
	CodeProviderNotFound: "PROVIDER_NOT_FOUND", CodeProviderRateLimited: "PROVIDER_RATE_LIMITED",
	CodeProviderOverloaded: "PROVIDER_OVERLOADED", CodeProviderServer: "PROVIDER_SERVER",
	CodeProviderNetwork: "PROVIDER_NETWORK", CodeProviderMalformedStream: "PROVIDER_MALFORMED_STREAM",
}

// String is the code's name, such as "INVALID_ARG".
func (c Code) String() string {
	if name, ok := codeNames[c]; ok {
		return name
	}
	return fmt.Sprintf("CODE_%d", uint32(c))
}

// MarshalText writes the code's name.
func (c Code) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

// UnmarshalText reads a code's name; a name this package does not know is code
// 0 (an Error keeps the name in its message).
func (c *Code) UnmarshalText(text []byte) error {
	for code, name := range codeNames {
		if name == string(text) {
			*c = code
			return nil
		}
	}
	*c = 0
	return nil
}

// Error is every error ferrule reports: from a call of this package, or inside a
// failed run's Result. Match it with errors.As, or its code with errors.Is and
// the Err sentinels.
type Error struct {
	Code    Code   `json:"code"`
	Message string `json:"message"`
}

// UnmarshalJSON reads {"code", "message"}; a code this package does not know
// yet keeps its name at the front of the message.
func (e *Error) UnmarshalJSON(data []byte) error {
	var w struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	}
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	_ = e.Code.UnmarshalText([]byte(w.Code))
	e.Message = w.Message
	if e.Code == 0 && w.Code != "" {
		e.Message = w.Code + ": " + w.Message
	}
	return nil
}

// Error is "CODE: message".
func (e *Error) Error() string { return e.Code.String() + ": " + e.Message }

// Is reports whether target is an *Error with the same code.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// Sentinels, one per code, for errors.Is.
var (
	ErrNullArg                 error = &Error{Code: CodeNullArg}
	ErrInvalidUTF8             error = &Error{Code: CodeInvalidUTF8}
	ErrInvalidJSON             error = &Error{Code: CodeInvalidJSON}
	ErrInvalidArg              error = &Error{Code: CodeInvalidArg}
	ErrInvalidSchema           error = &Error{Code: CodeInvalidSchema}
	ErrDuplicateTool           error = &Error{Code: CodeDuplicateTool}
	ErrPanic                   error = &Error{Code: CodePanic}
	ErrCancelled               error = &Error{Code: CodeCancelled}
	ErrTimeout                 error = &Error{Code: CodeTimeout}
	ErrWouldDeadlock           error = &Error{Code: CodeWouldDeadlock}
	ErrAlreadyCompleted        error = &Error{Code: CodeAlreadyCompleted}
	ErrAlreadyInitialized      error = &Error{Code: CodeAlreadyInitialized}
	ErrForked                  error = &Error{Code: CodeForked}
	ErrShutdown                error = &Error{Code: CodeShutdown}
	ErrToolFailed              error = &Error{Code: CodeToolFailed}
	ErrScriptExhausted         error = &Error{Code: CodeScriptExhausted}
	ErrResourceExhausted       error = &Error{Code: CodeResourceExhausted}
	ErrInvalidOutput           error = &Error{Code: CodeInvalidOutput}
	ErrHookAborted             error = &Error{Code: CodeHookAborted}
	ErrProviderAuth            error = &Error{Code: CodeProviderAuth}
	ErrProviderInvalidRequest  error = &Error{Code: CodeProviderInvalidRequest}
	ErrProviderNotFound        error = &Error{Code: CodeProviderNotFound}
	ErrProviderRateLimited     error = &Error{Code: CodeProviderRateLimited}
	ErrProviderOverloaded      error = &Error{Code: CodeProviderOverloaded}
	ErrProviderServer          error = &Error{Code: CodeProviderServer}
	ErrProviderNetwork         error = &Error{Code: CodeProviderNetwork}
	ErrProviderMalformedStream error = &Error{Code: CodeProviderMalformedStream}
)

// errClosed is the error for using an agent after Close.
func errClosed(what string) error {
	return &Error{Code: CodeInvalidArg, Message: what + " is closed"}
}
