package ferrule

import (
	"encoding/base64"
	"encoding/json"
	"strings"
)

// Message is one message of a transcript, in ferrule's provider-neutral form.
// Role is "system", "user", "assistant" or "tool".
type Message struct {
	Role    string
	Content []Part
	// ToolCalls are an assistant's calls.
	ToolCalls []ToolCall
	// ToolCallID, Name and IsError belong to a tool result.
	ToolCallID, Name string
	IsError          bool
	// StopReason and Usage belong to an assistant message.
	StopReason string
	Usage      *Usage
	// Origin says where a user or system message came from when not from the
	// run's input: "injection" (Run.Inject, or a turn start hook).
	Origin string
}

// Part is a piece of message content. Type is "text", "image", "file",
// "thinking" or "redacted_thinking".
type Part struct {
	Type      string
	Text      string
	MediaType string
	// Data is an image's or a file's bytes.
	Data []byte
	URL  string
	// Name is a file's name.
	Name string
	// Thinking, Signature and ID belong to reasoning ("thinking") parts, which
	// go back to the provider that made them; Redacted is a redacted_thinking
	// part's opaque data.
	Thinking, Signature, ID, Redacted string
}

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
func (m Message) Text() string {
	var b strings.Builder
	for _, p := range m.Content {
		if p.Type == "text" {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

type wireMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCalls  []ToolCall      `json:"tool_calls,omitempty"`
	ToolCallID string          `json:"tool_call_id,omitempty"`
	Name       string          `json:"name,omitempty"`
	IsError    bool            `json:"is_error,omitempty"`
	StopReason string          `json:"stop_reason,omitempty"`
	Usage      *Usage          `json:"usage,omitempty"`
	Origin     string          `json:"origin,omitempty"`
}

// MarshalJSON writes the message JSON: a system message's content is its text.
func (m Message) MarshalJSON() ([]byte, error) {
	var content any = m.Content
	if m.Role == "system" {
		content = m.Text()
	} else if m.Content == nil {
		content = []Part{}
	}
	raw, err := json.Marshal(content)
	if err != nil {
		return nil, err
	}
	if m.Role == "tool" {
		// A call id or name may be empty; the fields are required all the same.
		return json.Marshal(struct {
			Role       string          `json:"role"`
			ToolCallID string          `json:"tool_call_id"`
			Name       string          `json:"name"`
			Content    json.RawMessage `json:"content"`
			IsError    bool            `json:"is_error"`
		}{m.Role, m.ToolCallID, m.Name, raw, m.IsError})
	}
	return json.Marshal(wireMessage{Role: m.Role, Content: raw, ToolCalls: m.ToolCalls, StopReason: m.StopReason,
		Usage: m.Usage, Origin: m.Origin})
}

// UnmarshalJSON reads the message JSON; content given as a string becomes one
// text part.
func (m *Message) UnmarshalJSON(data []byte) error {
	var w wireMessage
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	content, err := partsOf(w.Content)
	if err != nil {
		return err
	}
	*m = Message{Role: w.Role, Content: content, ToolCalls: w.ToolCalls, ToolCallID: w.ToolCallID, Name: w.Name,
		IsError: w.IsError, StopReason: w.StopReason, Usage: w.Usage, Origin: w.Origin}
	return nil
}

// partsOf reads content that is a string, a list of parts, or absent.
func partsOf(raw json.RawMessage) ([]Part, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var text string
	if json.Unmarshal(raw, &text) == nil {
		return []Part{Text(text)}, nil
	}
	var parts []Part
	err := json.Unmarshal(raw, &parts)
	return parts, err
}

type wirePart struct {
	Type      string `json:"type"`
	Text      string `json:"text,omitempty"`
	MediaType string `json:"media_type,omitempty"`
	Data      string `json:"data,omitempty"`
	URL       string `json:"url,omitempty"`
	Name      string `json:"name,omitempty"`
	Thinking  string `json:"thinking,omitempty"`
	Signature string `json:"signature,omitempty"`
	ID        string `json:"id,omitempty"`
}

// MarshalJSON writes the part JSON (Data as base64).
func (p Part) MarshalJSON() ([]byte, error) {
	w := wirePart{Type: p.Type, Text: p.Text, MediaType: p.MediaType, URL: p.URL, Name: p.Name,
		Thinking: p.Thinking, Signature: p.Signature, ID: p.ID}
	switch {
	case p.Type == "redacted_thinking":
		return json.Marshal(struct {
			Type string `json:"type"`
			Data string `json:"data"`
		}{p.Type, p.Redacted})
	case p.Type == "file":
		// A file's data is required, even when empty.
		return json.Marshal(struct {
			Type      string `json:"type"`
			MediaType string `json:"media_type"`
			Data      string `json:"data"`
			Name      string `json:"name,omitempty"`
		}{p.Type, p.MediaType, base64.StdEncoding.EncodeToString(p.Data), p.Name})
	case p.Data != nil:
		w.Data = base64.StdEncoding.EncodeToString(p.Data)
	}
	if p.Type == "text" {
		// An empty text is still a text.
		return json.Marshal(struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}{p.Type, p.Text})
	}
	if p.Type == "thinking" {
		return json.Marshal(struct {
			Type      string `json:"type"`
			Thinking  string `json:"thinking"`
			Signature string `json:"signature,omitempty"`
			ID        string `json:"id,omitempty"`
		}{p.Type, p.Thinking, p.Signature, p.ID})
	}
	return json.Marshal(w)
}

// UnmarshalJSON reads the part JSON.
func (p *Part) UnmarshalJSON(data []byte) error {
	var w wirePart
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	*p = Part{Type: w.Type, Text: w.Text, MediaType: w.MediaType, URL: w.URL, Name: w.Name, Thinking: w.Thinking,
		Signature: w.Signature, ID: w.ID}
	if w.Type == "redacted_thinking" {
		p.Redacted = w.Data
	} else if w.Data != "" || w.Type == "file" {
		decoded, err := decodeBase64(w.Data)
		if err != nil {
			return err
		}
		p.Data = decoded
	}
	return nil
}

// decodeBase64 reads base64 with or without padding, in the standard or the URL
// alphabet: ferrule passes data on as the tool or provider gave it.
func decodeBase64(text string) ([]byte, error) {
	var err error
	for _, encoding := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding,
		base64.RawURLEncoding} {
		var decoded []byte
		if decoded, err = encoding.DecodeString(text); err == nil {
			return decoded, nil
		}
	}
	return nil, err
}
