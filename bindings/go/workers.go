package ferrule

import (
	"runtime"
	"sync"
	"time"
)

// Tool calls run on goroutines of which one, after a call, stays awake for a
// moment (spinWindow) waiting for the next one. A call handed to the awake
// goroutine starts at once; a new goroutine instead waits for Go to wake a
// sleeping thread, which on a VM can take tens of microseconds, and a call that
// finishes that late also finds ferrule's runtime thread asleep. ferrule's own
// callback threads spin for the same reason. One is enough to take the next
// call at once; more would only take the processor from others.
const spinWindow = 50 * time.Microsecond

// awake holds the mailbox of the goroutine waiting for work, if one is.
var awake struct {
	sync.Mutex
	mailbox chan func()
}

// dispatch runs work on the awake goroutine, or on a new one.
func dispatch(work func()) {
	awake.Lock()
	mailbox := awake.mailbox
	awake.mailbox = nil
	awake.Unlock()
	if mailbox != nil {
		mailbox <- work // buffered: never waits
		return
	}
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

// nextWork offers mailbox for spinWindow; nil when nothing came or another
// goroutine is awake already.
func nextWork(mailbox chan func()) func() {
	awake.Lock()
	if awake.mailbox != nil {
		awake.Unlock()
		return nil
	}
	awake.mailbox = mailbox
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
	offered := awake.mailbox == mailbox
	if offered {
		awake.mailbox = nil
	}
	awake.Unlock()
	if offered {
		return nil
	}
	// A dispatcher took the mailbox already: its work is on the way.
	return <-mailbox
}
