package ferrule

import (
	"encoding/base64"
	"encoding/json"
	"strings"
)

// Text is a text part.
func Text(s string) Part { return Part{Type: "text", Text: s} }

// Image is an inline image part.
func Image(mediaType string, data []byte) Part {
	return Part{Type: "image", MediaType: mediaType, Data: data}
}

// UserMessage is a user message of plain text.
func UserMessage(text string) Message {
	return Message{Role: "user", Content: []Part{Text(text)}}
}

// Text joins the message's text parts.
func (m Message) Text() string { return partsText(m.Content) }

// partsText joins the text parts of content.
func partsText(content []Part) string {
	var b strings.Builder
	for _, p := range content {
		if p.Type == "text" {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// textParts is text as content: one text part, none for no text.
func textParts(text string) []Part {
	if text == "" {
		return nil
	}
	return []Part{Text(text)}
}

// content is message content as JSON: a list of parts (nil is none), read
// from a string (one text part) too (decodeContent).
type content []Part

// MarshalJSON writes the parts; nil is an empty list.
func (c content) MarshalJSON() ([]byte, error) {
	if c == nil {
		return []byte("[]"), nil
	}
	return json.Marshal([]Part(c))
}

// base64Bytes is bytes as base64 JSON text.
type base64Bytes []byte

// MarshalJSON writes the bytes as standard base64.
func (b base64Bytes) MarshalJSON() ([]byte, error) {
	return json.Marshal(base64.StdEncoding.EncodeToString(b))
}

// decodeText reads base64 with or without padding, in the standard or the URL
// alphabet: ferrule passes data on as the tool or provider gave it.
func (b *base64Bytes) decodeText(text string) error {
	var err error
	for _, encoding := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding,
		base64.RawURLEncoding} {
		var decoded []byte
		if decoded, err = encoding.DecodeString(text); err == nil {
			*b = decoded
			return nil
		}
	}
	return err
}
