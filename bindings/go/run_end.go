package ferrule

import (
	"bytes"
	"slices"
	"unsafe"

	"github.com/buger/jsonparser"
	"github.com/valyala/fastjson"
)

// A run's transcript is most of the JSON a run sends, and a parsed value holds
// about 30 times its text (fastjson's values, which a parser keeps for the
// next parse): a 2 MB transcript of 12,800 calls, parsed whole, holds 72 MB,
// and parses at a third of the speed once the garbage collector has taken the
// pooled parsers, which a long run usually lets it do. A run_end event longer
// than bigEvent is therefore read in parts, as ferrule writes it: the
// transcript message by message, each parsed on its own (jsonparser finds the
// messages without parsing them), then the event without its transcript.
// Anything else, and a run_end that is not as ferrule writes it (a key of the
// path repeated, in any case), is parsed whole.

// bigEvent is the length from which a run_end event is read in parts.
const bigEvent = 64 << 10

// decodeReceived reads one event as ferrule sends it: as decodeEvent does,
// but a big run_end in parts (decodeEvent parses the whole text).
func decodeReceived(data []byte) Event {
	if len(data) > bigEvent {
		if event := decodeRunEndInParts(data); event != nil {
			return event
		}
	}
	return decodeEvent(data)
}

// decodeRunEndInParts reads a run_end event whose result has a list of
// messages; nil when data is no such event or a part does not decode
// (decodeEvent then reads it whole, and reports what is wrong as it does).
func decodeRunEndInParts(data []byte) *RunEndEvent {
	if kind, err := jsonparser.GetString(data, "type"); err != nil || kind != "run_end" {
		return nil
	}
	messages, start, end, ok := decodeMessages(data, "result", "messages")
	if !ok {
		return nil
	}
	rest := make([]byte, 0, len(data)-(end-start)+2)
	rest = append(append(append(rest, data[:start]...), "[]"...), data[end:]...)
	parser := parsers.Get()
	defer parsers.Put(parser)
	value, err := parser.ParseBytes(rest)
	if err != nil || !onlyOnce(value, "result") || !onlyOnce(value.Get("result"), "messages") {
		return nil
	}
	event, ok := eventFrom(value, rest).(*RunEndEvent)
	if !ok || event.Result == nil {
		return nil
	}
	event.Result.Messages = messages
	return event
}

// onlyOnce reports whether the object v has one member named key, as
// encoding/json matches names (in any case).
func onlyOnce(v *fastjson.Value, key string) bool {
	object, err := v.Object()
	if err != nil {
		return false
	}
	count := 0
	object.Visit(func(name []byte, _ *fastjson.Value) {
		if string(name) == key || foldedKey(name, key) != "" {
			count++
		}
	})
	return count == 1
}

// messageSize is what a Message takes in memory.
const messageSize = int(unsafe.Sizeof(Message{}))

// decodeMessages reads the JSON list of messages at the path keys of the
// object data, each message parsed on its own, and where the list's text
// starts and ends; false when there is no list there or a message does not
// decode.
func decodeMessages(data []byte, keys ...string) (messages []Message, start, end int, ok bool) {
	parser := parsers.Get()
	defer parsers.Put(parser)
	messages = make([]Message, 0, 16)
	first, failed := -1, false
	closing, err := jsonparser.ArrayEach(data, func(item []byte, kind jsonparser.ValueType, offset int, err error) {
		// A string comes without its quotes: only objects (and null) are
		// taken as they are.
		if failed || err != nil || (kind != jsonparser.Object && kind != jsonparser.Null) {
			failed = true
			return
		}
		var message Message
		value, err := parser.ParseBytes(item)
		if err != nil || message.decodeFrom(value) != nil {
			failed = true
			return
		}
		if first < 0 {
			first = offset
		}
		if len(messages) == cap(messages) {
			// Room for the rest of the text, as long as the messages so far
			// are on average, but never more memory than that text's length
			// (trimmed below if the text held fewer).
			left, read := len(data)-offset-len(item), offset+len(item)-first
			messages = slices.Grow(messages, min(len(messages)*left/read, left/messageSize)+1)
		}
		messages = append(messages, message)
	}, keys...)
	if err != nil || failed {
		return nil, 0, 0, false
	}
	if first < 0 {
		first = closing
	}
	if cap(messages) > len(messages)+len(messages)/8+16 {
		messages = slices.Clone(messages)
	}
	// Only blanks are between the list's bracket and its first item.
	return messages, bytes.LastIndexByte(data[:first], '['), closing + 1, true
}
