package ferrule

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"unicode/utf8"

	"github.com/valyala/fastjson"
)

// The package's types read ferrule's JSON in one pass: the text is parsed once
// (fastjson), and each generated type (records, messages, parts) takes its
// fields from the parsed value (decodeFrom), where encoding/json would scan
// every nested value again for each UnmarshalJSON on the way down. A run's
// transcript is most of what crosses, so this is most of what reading a result
// costs. Fields of other types go through encoding/json from their own JSON.

// decoder is a type that reads itself from a parsed value.
type decoder interface {
	decodeFrom(v *fastjson.Value) error
}

// parsers are fastjson's parsers, reused: a parsed value lives until its
// parser parses again, and every decodeFrom copies what it keeps.
var parsers fastjson.ParserPool

// decodeJSON reads data into dst in one pass.
func decodeJSON(data []byte, dst decoder) error {
	parser := parsers.Get()
	defer parsers.Put(parser)
	v, err := parser.ParseBytes(data)
	if err != nil {
		return fmt.Errorf("invalid JSON: %w", err)
	}
	return dst.decodeFrom(v)
}

// decodeAny reads data into dst: in one pass when it is one of the package's
// types, else with encoding/json.
func decodeAny(data []byte, dst any) error {
	if d, ok := dst.(decoder); ok {
		return decodeJSON(data, d)
	}
	return json.Unmarshal(data, dst)
}

// decodeFields calls field for each member of the object v, in order, until one
// fails. Null leaves the destination as it is, as encoding/json does.
func decodeFields(v *fastjson.Value, into string, field func(key []byte, f *fastjson.Value) error) error {
	if v.Type() == fastjson.TypeNull {
		return nil
	}
	object, err := v.Object()
	if err != nil {
		return mismatch(v, into)
	}
	object.Visit(func(key []byte, f *fastjson.Value) {
		if err == nil {
			err = field(key, f)
		}
	})
	return err
}

// tag is the string member key of the object v ("" when absent); an error
// naming into (the member's place, "Message.role") when it is not a string.
func tag(v *fastjson.Value, key, into string) (string, error) {
	f := member(v, key)
	if f == nil {
		return "", nil // absent, or v is no object (decodeFields reports it)
	}
	var s string
	if err := decodeString(f, &s, into); err != nil {
		return "", err
	}
	return s, nil
}

// member is the member key of the object v, matched as encoding/json matches
// a name (regardless of case when not exactly); nil when absent or when v is
// no object.
func member(v *fastjson.Value, key string) *fastjson.Value {
	if v.Type() != fastjson.TypeObject {
		return nil
	}
	f := v.Get(key)
	if f == nil {
		object, _ := v.Object()
		object.Visit(func(name []byte, m *fastjson.Value) {
			if f == nil && bytes.EqualFold(name, []byte(key)) {
				f = m
			}
		})
	}
	return f
}

// foldedKey is the one of keys that key matches regardless of case, as
// encoding/json matches a field's name when none matches exactly; "" for none.
func foldedKey(key []byte, keys ...string) string {
	for _, known := range keys {
		if bytes.EqualFold(key, []byte(known)) {
			return known
		}
	}
	return ""
}

// jsonText is v written as JSON: the value it was read from, with JSON's
// escapes (fastjson's own writer gives what it already unescaped Go's, which
// JSON does not have).
func jsonText(v *fastjson.Value) []byte {
	return appendJSON(nil, v)
}

func appendJSON(dst []byte, v *fastjson.Value) []byte {
	switch v.Type() {
	case fastjson.TypeObject:
		object, _ := v.Object()
		dst = append(dst, '{')
		first := true
		object.Visit(func(key []byte, member *fastjson.Value) {
			if !first {
				dst = append(dst, ',')
			}
			first = false
			dst = appendJSONString(dst, string(key))
			dst = append(dst, ':')
			dst = appendJSON(dst, member)
		})
		return append(dst, '}')
	case fastjson.TypeArray:
		items, _ := v.Array()
		dst = append(dst, '[')
		for i, item := range items {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendJSON(dst, item)
		}
		return append(dst, ']')
	case fastjson.TypeString:
		text, _ := v.StringBytes()
		return appendJSONString(dst, string(text))
	}
	return v.MarshalTo(dst) // a number as written, true, false or null
}

// appendJSONString appends s as a JSON string: copied between quotes when
// nothing in it needs escaping (most strings), else as encoding/json writes it.
func appendJSONString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= utf8.RuneSelf {
			quoted, _ := json.Marshal(s) // a string always marshals
			return append(dst, quoted...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}

// mismatch is the error for a JSON value of the wrong kind.
func mismatch(v *fastjson.Value, into string) error {
	return fmt.Errorf("cannot read JSON %s into %s", v.Type(), into)
}

// decodeValue reads v into dst (a pointer), naming into in errors.
func decodeValue(v *fastjson.Value, dst any, into string) error {
	switch d := dst.(type) {
	case decoder:
		return d.decodeFrom(v)
	case *string:
		return decodeString(v, d, into)
	case *bool:
		return decodeBool(v, d, into)
	case *int:
		if v.Type() == fastjson.TypeNull {
			return nil
		}
		n, err := v.Int()
		if err != nil {
			return mismatch(v, into)
		}
		*d = n
		return nil
	case *float64:
		if v.Type() == fastjson.TypeNull {
			return nil
		}
		n, err := v.Float64()
		if err != nil {
			return mismatch(v, into)
		}
		*d = n
		return nil
	case *json.RawMessage:
		// The text as it came, taken before anything unescapes it in place.
		raw := v.MarshalTo(nil)
		if string(raw) == "null" {
			raw = nil
		}
		*d = raw
		return nil
	case *content:
		return decodeContent(v, d, into)
	case *[]Message:
		return decodeList(v, d, into)
	case *[]Part:
		return decodeList(v, d, into)
	case *[]ToolCall:
		return decodeList(v, d, into)
	case *[]string:
		return decodeItems(v, d, into, func(item *fastjson.Value, s *string) error { return decodeString(item, s, into) })
	case **Usage:
		return decodePointer(v, d, into)
	case *base64Bytes:
		return decodeBase64(v, d, into)
	}
	return decodeReflected(v, reflect.ValueOf(dst).Elem(), into)
}

// decodeBool reads true or false (null leaves dst as it is).
func decodeBool(v *fastjson.Value, dst *bool, into string) error {
	switch v.Type() {
	case fastjson.TypeTrue, fastjson.TypeFalse:
		*dst = v.Type() == fastjson.TypeTrue
	case fastjson.TypeNull:
	default:
		return mismatch(v, into)
	}
	return nil
}

// decodeContent reads content: a list of parts, or a string as its text.
func decodeContent(v *fastjson.Value, dst *content, into string) error {
	if v.Type() == fastjson.TypeString {
		var text string
		_ = decodeString(v, &text, into)
		*dst = textParts(text)
		return nil
	}
	return decodeList(v, (*[]Part)(dst), into)
}

// decodeBase64 reads base64 text (decodeText); null is absent.
func decodeBase64(v *fastjson.Value, dst *base64Bytes, into string) error {
	if v.Type() == fastjson.TypeNull {
		return nil
	}
	raw, err := v.StringBytes()
	if err != nil {
		return mismatch(v, into)
	}
	return dst.decodeText(string(raw))
}

// decodeList reads a JSON list of one of the package's types (null is nil).
func decodeList[T any, P interface {
	*T
	decoder
}](v *fastjson.Value, dst *[]T, into string) error {
	return decodeItems(v, dst, into, func(item *fastjson.Value, t *T) error { return P(t).decodeFrom(item) })
}

// decodeItems reads a JSON list (null is nil), each item with decode.
func decodeItems[T any](v *fastjson.Value, dst *[]T, into string, decode func(*fastjson.Value, *T) error) error {
	if v.Type() == fastjson.TypeNull {
		*dst = nil
		return nil
	}
	items, err := v.Array()
	if err != nil {
		return mismatch(v, into)
	}
	list := make([]T, len(items))
	for i, item := range items {
		if err := decode(item, &list[i]); err != nil {
			return err
		}
	}
	*dst = list
	return nil
}

// decodePointer reads one of the package's types, which may be null (nil).
func decodePointer[T any, P interface {
	*T
	decoder
}](v *fastjson.Value, dst **T, into string) error {
	if v.Type() == fastjson.TypeNull {
		*dst = nil
		return nil
	}
	target := new(T)
	if err := P(target).decodeFrom(v); err != nil {
		return err
	}
	*dst = target
	return nil
}

// decodeString reads a JSON string (null leaves dst as it is).
func decodeString(v *fastjson.Value, dst *string, into string) error {
	switch v.Type() {
	case fastjson.TypeString:
		raw, _ := v.StringBytes()
		*dst = known(raw)
	case fastjson.TypeNull:
	default:
		return mismatch(v, into)
	}
	return nil
}

// decodeReflected reads v into the settable value dst: a list, a map, a
// pointer, a named string (an enumeration) by their parts; anything else
// through encoding/json.
func decodeReflected(v *fastjson.Value, dst reflect.Value, into string) error {
	null := v.Type() == fastjson.TypeNull
	switch dst.Kind() {
	case reflect.String:
		var s string
		if err := decodeString(v, &s, into); err != nil || null {
			return err
		}
		dst.SetString(s)
		return nil
	case reflect.Pointer:
		if null {
			dst.SetZero()
			return nil
		}
		target := reflect.New(dst.Type().Elem())
		if err := decodeValue(v, target.Interface(), into); err != nil {
			return err
		}
		dst.Set(target)
		return nil
	case reflect.Slice:
		if null {
			dst.SetZero()
			return nil
		}
		items, err := v.Array()
		if err != nil {
			return mismatch(v, into)
		}
		list := reflect.MakeSlice(dst.Type(), len(items), len(items))
		for i, item := range items {
			if err := decodeValue(item, list.Index(i).Addr().Interface(), into); err != nil {
				return err
			}
		}
		dst.Set(list)
		return nil
	case reflect.Map:
		if null {
			dst.SetZero()
			return nil
		}
		object, err := v.Object()
		if err != nil {
			return mismatch(v, into)
		}
		if dst.IsNil() {
			dst.Set(reflect.MakeMapWithSize(dst.Type(), object.Len()))
		}
		object.Visit(func(key []byte, f *fastjson.Value) {
			if err != nil {
				return
			}
			item := reflect.New(dst.Type().Elem())
			if err = decodeValue(f, item.Interface(), into); err == nil {
				dst.SetMapIndex(reflect.ValueOf(string(key)).Convert(dst.Type().Key()), item.Elem())
			}
		})
		return err
	}
	// jsonText, not v's own writer: v.Type() above may have unescaped it.
	if err := json.Unmarshal(jsonText(v), dst.Addr().Interface()); err != nil {
		return fmt.Errorf("%s: %w", into, err)
	}
	return nil
}

// known is raw as a string, without a copy for the words every message
// repeats (roles, part types, stop reasons).
func known(raw []byte) string {
	switch string(raw) {
	case "user":
		return "user"
	case "assistant":
		return "assistant"
	case "tool":
		return "tool"
	case "system":
		return "system"
	case "text":
		return "text"
	case "tool_use":
		return "tool_use"
	case "end_turn":
		return "end_turn"
	}
	return string(raw)
}
