package ferrule

import (
	"runtime"
	"sync"
	"time"
)

// Tool calls run on goroutines that, after a call, stay awake for a moment
// (spinWindow) waiting for the next one. A call handed to an awake goroutine
// starts at once; a new goroutine instead waits for Go to wake a sleeping thread,
// which on a VM can take tens of microseconds, and a call that finishes that
// late also finds ferrule's runtime thread asleep. ferrule's own callback
// threads spin for the same reason.
const spinWindow = 50 * time.Microsecond

// awake are the goroutines waiting for work, each with its mailbox.
var awake struct {
	sync.Mutex
	idle []chan func()
}

// dispatch runs work on an awake goroutine, or on a new one.
func dispatch(work func()) {
	awake.Lock()
	if n := len(awake.idle); n > 0 {
		mailbox := awake.idle[n-1]
		awake.idle = awake.idle[:n-1]
		awake.Unlock()
		mailbox <- work // buffered: never waits
		return
	}
	awake.Unlock()
	go worker(work)
}

// worker runs work, then waits awake for more for spinWindow before it ends.
func worker(work func()) {
	mailbox := make(chan func(), 1)
	for work != nil {
		work()
		work = nextWork(mailbox)
	}
}

// maxAwake is how many goroutines stay awake at once: one is enough to take the
// next call at once, and more would only take the processor from others.
const maxAwake = 1

// nextWork offers mailbox for spinWindow; nil when nothing came or enough
// goroutines are awake already.
func nextWork(mailbox chan func()) func() {
	awake.Lock()
	if len(awake.idle) >= maxAwake {
		awake.Unlock()
		return nil
	}
	awake.idle = append(awake.idle, mailbox)
	awake.Unlock()
	deadline := time.Now().Add(spinWindow)
	for time.Now().Before(deadline) {
		select {
		case work := <-mailbox:
			return work
		default:
			runtime.Gosched()
		}
	}
	awake.Lock()
	for i, m := range awake.idle {
		if m == mailbox {
			awake.idle = append(awake.idle[:i], awake.idle[i+1:]...)
			awake.Unlock()
			return nil
		}
	}
	awake.Unlock()
	// A dispatcher took this mailbox already: its work is on the way.
	return <-mailbox
}
