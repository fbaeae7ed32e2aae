package ferrule

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// bigRunEnd is a run_end event of more than bigEvent bytes whose result's
// messages are messages, with its other fields around them.
func bigRunEnd(messages string) string {
	var filler strings.Builder
	for filler.Len() <= bigEvent {
		fmt.Fprintf(&filler, `{"role": "tool", "tool_call_id": "c%d", "name": "pay", "content": [{"type": "text", "text": "ok"}]},`, filler.Len())
	}
	return `{"type": "run_end", "run_id": "r1", "result": {"status": "completed",
		"final": {"role": "assistant", "content": [{"type": "text", "text": "done"}]},
		"messages": [` + filler.String() + messages + `],
		"usage": {"input_tokens": 10, "output_tokens": 20}, "rounds": 3, "output": {"deep": [1, "]"]}, "agent": "billing"}}`
}

func TestABigRunEndReadInPartsIsWhatParsingItWholeGives(t *testing.T) {
	valid := bigRunEnd(`{"role": "system", "content": "be brief"},
		{"role": "user", "content": [{"type": "text", "text": "hi \u00e9 \"]\" \\"}], "origin": "injection"},
		{"role": "assistant", "content": [], "tool_calls": [{"id": "c1", "name": "pay", "arguments": "{\"n\":[1]}"}],
		 "stop_reason": "tool_use", "usage": {"input_tokens": 5, "output_tokens": 7}},
		{"role": "critic", "note": [1, {"x": "}"}]},
		null`)
	cases := map[string]string{
		"valid":                 valid,
		"no messages":           `{"type": "run_end", "run_id": "r1", "result": {"status": "completed", "messages": []}}` + strings.Repeat(" ", bigEvent),
		"a string message":      bigRunEnd(`"null"`),
		"a number message":      bigRunEnd(`7`),
		"a message of bad kind": bigRunEnd(`{"role": "tool", "is_error": "yes"}`),
		"invalid JSON inside":   bigRunEnd(`{"role": "user", "content": tru}`),
		"messages not a list":   strings.Replace(valid, `"messages": [`, `"messages": {"x": [`, 1),
		"a null result":         `{"type": "run_end", "run_id": "r1", "result": null, "pad": "` + strings.Repeat("x", bigEvent) + `"}`,
		"another type":          strings.Replace(valid, `"run_end"`, `"turn_end"`, 1),
		"cut short":             valid[:len(valid)-3],
		"trailing text":         valid + " x",
		"two results":           strings.Replace(valid, `"agent": "billing"}`, `"agent": "billing"}, "result": {"status": "failed", "messages": []}`, 1),
		"a result in capitals":  strings.Replace(valid, `"agent": "billing"}`, `"agent": "billing"}, "RESULT": {"status": "failed"}`, 1),
		"two message lists":     strings.Replace(valid, `"rounds": 3`, `"rounds": 3, "Messages": []`, 1),
		"an escaped second key": strings.Replace(valid, `"messages": [`, `"messages": [], "mess\u0061ges": [`, 1),
	}
	for name, text := range cases {
		if len(text) <= bigEvent {
			t.Fatalf("%s: %d bytes is not big", name, len(text))
		}
		whole, parts := decodeEvent([]byte(text)), decodeReceived([]byte(text))
		if !reflect.DeepEqual(whole, parts) {
			t.Errorf("%s: in parts\n%#v\nwhole\n%#v", name, parts, whole)
		}
		if name == "valid" {
			end, ok := parts.(*RunEndEvent)
			if !ok || end.Result == nil || decodeRunEndInParts([]byte(text)) == nil {
				t.Fatalf("valid: not read in parts: %#v", parts)
			}
			last := end.Result.Messages[len(end.Result.Messages)-5:]
			if last[1].Content[0].Text != "hi é \"]\" \\" || last[2].ToolCalls[0].Arguments != `{"n":[1]}` || last[3].Role != "critic" {
				t.Errorf("valid: the last messages read as %#v", last)
			}
		}
	}
}

func TestABigBurstIsReadEventByEventAsAWholeParseReadsIt(t *testing.T) {
	small := `{"type": "turn_end", "run_id": "r1", "turn": 1}`
	burst := "[" + small + ", " + bigRunEnd(`{"role": "user", "content": "go"}`) + "]"
	whole, parts := []Event{decodeEvent([]byte(small)), decodeEvent([]byte(bigRunEnd(`{"role": "user", "content": "go"}`)))}, decodeEvents([]byte(burst))
	if !reflect.DeepEqual(whole, parts) || !reflect.DeepEqual(parseEvents([]byte(burst)), parts) {
		t.Errorf("in parts\n%#v\nwhole\n%#v", parts, whole)
	}
	unknown := `{"type": "later_kind", "run_id": "r1", "note": "<é>"}`
	for _, text := range []string{
		"[" + small + ", 7, " + strings.Repeat(" ", bigEvent) + "]",
		"[" + small + strings.Repeat(" ", bigEvent),
		"[" + small + ", " + unknown + ", " + bigRunEnd(`{"role": "user", "content": "go"}`) + "]",
		"[" + small + ", " + bigRunEnd(`{"role": "user", "content": "go"}`) + "] x",
		"[" + small + "][" + bigRunEnd(`{"role": "user", "content": "go"}`) + "]",
		"[" + small + ", " + bigRunEnd(`{"role": "user", "content": tru}`) + "]",
		"[" + small + ", " + strings.Replace(bigRunEnd(`{"role": "user", "content": "go"}`), `"run_end"`, `"turn_end"`, 1)[:bigEvent+10] + "]",
	} {
		if got, want := decodeEvents([]byte(text)), parseEvents([]byte(text)); !reflect.DeepEqual(got, want) {
			t.Errorf("%.40q: %#v, want %#v", text, got, want)
		}
	}
}
