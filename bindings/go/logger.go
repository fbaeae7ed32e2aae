package ferrule

/*
#include "ferrule.h"
#include "shims.h"
*/
import "C"

import (
	"context"
	"log/slog"
	"runtime/cgo"
	"sort"
	"time"

	"github.com/valyala/fastjson"
)

// LevelTrace is the slog level of ferrule's trace records, below slog.LevelDebug.
const LevelTrace = slog.LevelDebug - 4

// SetLogger sends ferrule's log records to logger's handler: retried model
// requests, dropped tool calls, what MCP servers write on stderr, cassettes
// that cannot be written (docs/logging.md). ferrule writes nothing to stdout
// or stderr itself. Each record becomes a slog.Record at its level (trace is
// LevelTrace), made when ferrule made it, with a "target" attribute
// ("ferrule::provider", "ferrule::mcp", ...) and one attribute per field
// ("run_id", "server", "attempt", ...), in the order of their names.
//
// ferrule makes only the records of the most detailed level the handler
// enables when SetLogger is called, and hands them to it on one thread of its
// own, in order, never blocking a run: a handler that falls behind loses
// records, and the next it gets says how many. nil removes the logger. The
// logger is the process's: a second call replaces the first. Safe from any
// goroutine.
func SetLogger(logger *slog.Logger) error {
	if logger == nil {
		return takeError(C.ferrule_runtime_set_logger(nil, nil, nil, 0))
	}
	handler := logger.Handler()
	level := enabledLevel(handler)
	if level == 0 {
		return takeError(C.ferrule_runtime_set_logger(nil, nil, nil, 0))
	}
	handle := cgo.NewHandle(&logSink{handler: handler})
	err := takeError(C.ferrule_runtime_set_logger(C.ferrule_log_fn(C.ferrule_go_log), handleData(handle),
		C.ferrule_free_fn(C.ferrule_go_free), C.uint32_t(level)))
	if err != nil {
		handle.Delete()
	}
	return err
}

// The slog level of each of ferrule's, from the most severe (FERRULE_LOG_LEVEL_ERROR, 1).
var slogLevels = [...]slog.Level{slog.LevelError, slog.LevelWarn, slog.LevelInfo, slog.LevelDebug, LevelTrace}

// enabledLevel is ferrule's number for the most detailed level handler
// enables, 0 for none.
func enabledLevel(handler slog.Handler) uint32 {
	for number := len(slogLevels); number > 0; number-- {
		if handler.Enabled(context.Background(), slogLevels[number-1]) {
			return uint32(number)
		}
	}
	return 0
}

// logSink hands ferrule's records to a slog handler, on ferrule's logger thread.
type logSink struct {
	handler slog.Handler
}

// handle decodes one record and gives it to the handler, if it enables its
// level; a panic in the handler loses the record, never the process (it would
// cross ferrule's C frames).
func (s *logSink) handle(data []byte) {
	defer func() { _ = recover() }()
	var parser fastjson.Parser
	value, err := parser.ParseBytes(data)
	if err != nil {
		return
	}
	var record LogRecord
	if record.decodeFrom(value) != nil {
		return
	}
	level := slogOf(record.Level)
	ctx := context.Background()
	if !s.handler.Enabled(ctx, level) {
		return
	}
	out := slog.NewRecord(time.Unix(0, int64(record.TimeUnixNano)), level, record.Message, 0)
	out.AddAttrs(slog.String("target", record.Target))
	if fields, err := value.Get("fields").Object(); err == nil {
		var attrs []slog.Attr
		fields.Visit(func(key []byte, field *fastjson.Value) {
			attrs = append(attrs, slog.Any(string(key), plain(field)))
		})
		sort.Slice(attrs, func(i, j int) bool { return attrs[i].Key < attrs[j].Key })
		out.AddAttrs(attrs...)
	}
	_ = s.handler.Handle(ctx, out)
}

// slogOf is the slog level of one of ferrule's.
func slogOf(level LogLevel) slog.Level {
	switch level {
	case LogLevelError:
		return slog.LevelError
	case LogLevelWarn:
		return slog.LevelWarn
	case LogLevelInfo:
		return slog.LevelInfo
	case LogLevelDebug:
		return slog.LevelDebug
	}
	return LevelTrace
}

// plain is a field's value as Go's: a string, a number (int64 when whole), a
// bool, nil, or JSON text for an array or object.
func plain(value *fastjson.Value) any {
	switch value.Type() {
	case fastjson.TypeString:
		return string(value.GetStringBytes())
	case fastjson.TypeNumber:
		if whole, err := value.Int64(); err == nil {
			return whole
		}
		return value.GetFloat64()
	case fastjson.TypeTrue:
		return true
	case fastjson.TypeFalse:
		return false
	case fastjson.TypeNull:
		return nil
	}
	return value.String()
}
