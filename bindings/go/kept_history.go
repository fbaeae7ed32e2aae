package ferrule

/*
#include "ferrule.h"
#include "shims.h"
*/
import "C"

import (
	"fmt"
	"runtime/cgo"
	"slices"
	"sync"

	"github.com/buger/jsonparser"
)

// A typed turn_start hook is registered for the new messages alone
// ("history": "new"): each payload carries the messages added since the
// hook's last turn_start payload in the run, from index messages_from, and the
// hook keeps the history it was given for the run (in the consultation's run
// state, which ferrule frees when the run ends). Its payload's Messages is the
// whole history all the same, decoded once per message instead of once per
// message per turn, so a consultation costs the same at the thousandth turn as
// at the first.

// keptHistory is the history one hook has been given in one run.
type keptHistory struct {
	mu       sync.Mutex
	messages []Message
}

// completeHistory puts the whole history in payload, from the new messages it
// carries (raw is its JSON) and those kept from the hook's earlier payloads in
// the run; a payload without messages_from (a hook registered WithoutHistory)
// is left as it is. (A run_start payload carries the whole input in any case.)
func completeHistory(consultation *C.ferrule_hook, raw []byte, payload *TurnStartPayload) error {
	from, err := jsonparser.GetInt(raw, "messages_from")
	if err == jsonparser.KeyPathNotFoundError {
		return nil
	}
	if err != nil {
		return fmt.Errorf("messages_from: %w", err)
	}
	kept, err := keptHistoryOf(consultation)
	if err != nil {
		return err
	}
	whole, err := kept.merge(int(from), payload.Messages, payload.MessageCount)
	if err != nil {
		return err
	}
	payload.Messages = whole
	return nil
}

// keptHistoryOf is the history the consultation's hook keeps for its run,
// made on its first consultation in the run.
func keptHistoryOf(consultation *C.ferrule_hook) (*keptHistory, error) {
	if state := C.ferrule_hook_run_state(consultation); state != nil {
		return dataHandle(state).Value().(*keptHistory), nil
	}
	kept := &keptHistory{}
	handle := cgo.NewHandle(kept)
	err := takeError(C.ferrule_hook_set_run_state(consultation, handleData(handle), C.ferrule_free_fn(C.ferrule_go_free)))
	if err != nil {
		handle.Delete() // not taken: still ours
		return nil, err
	}
	return kept, nil
}

// merge puts added in place at index from and returns the whole history of
// count messages. The slice returned is shared with the hook's later payloads
// in the run: what an earlier payload was given never changes, as the history
// is copied when it is replaced.
func (k *keptHistory) merge(from int, added []Message, count int) ([]Message, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if from < 0 || from > len(k.messages) {
		return nil, fmt.Errorf("the payload's messages start at %d, after the %d kept", from, len(k.messages))
	}
	if from < len(k.messages) {
		// Replaced: earlier payloads keep the messages they were given.
		k.messages = slices.Clone(k.messages[:from])
	}
	k.messages = append(k.messages, added...)
	if len(k.messages) != count {
		return nil, fmt.Errorf("the history kept holds %d messages, the payload says %d", len(k.messages), count)
	}
	return k.messages[:count:count], nil
}
