package ferrule

import (
	"encoding/json"
	"fmt"
)

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

// errClosed is the error for using an agent after Close.
func errClosed(what string) error {
	return &Error{Code: CodeInvalidArg, Message: what + " is closed"}
}
