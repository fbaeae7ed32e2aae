package ferrule

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// schemaFor reflects the input schema of a tool whose arguments are an Args
// (Draft 2020-12, through jsonschema-go), then applies this package's rules:
// pointer fields are optional like omitempty ones, an `enum:"a,b"` tag lists a
// string field's values, and objects allow no other properties when closed.
func schemaFor[Args any](closed bool) (json.RawMessage, error) {
	t := reflect.TypeFor[Args]()
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil, fmt.Errorf("the arguments type %v is not a struct", t)
	}
	schema, err := jsonschema.ForType(t, nil)
	if err != nil {
		return nil, err
	}
	adjust(t, schema, closed)
	return json.Marshal(schema)
}

// adjust walks a reflected schema beside the type it came from.
func adjust(t reflect.Type, schema *jsonschema.Schema, closed bool) {
	if schema == nil {
		return
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		adjust(t.Elem(), schema.Items, closed)
	case reflect.Map:
		adjust(t.Elem(), schema.AdditionalProperties, closed)
	case reflect.Struct:
		if !closed {
			schema.AdditionalProperties = nil
		}
		for _, field := range reflect.VisibleFields(t) {
			name, ok := jsonName(field)
			if !ok {
				continue
			}
			if field.Type.Kind() == reflect.Pointer {
				schema.Required = slices.DeleteFunc(schema.Required, func(r string) bool { return r == name })
			}
			property := schema.Properties[name]
			if values, ok := field.Tag.Lookup("enum"); ok && property != nil {
				for _, value := range strings.Split(values, ",") {
					property.Enum = append(property.Enum, value)
				}
			}
			adjust(field.Type, property, closed)
		}
	}
}

// jsonName is the property name encoding/json gives an exported field.
func jsonName(field reflect.StructField) (string, bool) {
	if !field.IsExported() || field.Anonymous {
		return "", false
	}
	tag := field.Tag.Get("json")
	if tag == "-" {
		return "", false
	}
	if name, _, _ := strings.Cut(tag, ","); name != "" {
		return name, true
	}
	return field.Name, true
}
