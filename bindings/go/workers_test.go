package ferrule

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestEveryDispatchedCallRunsOnceAndWorkersGoBackToSleep(t *testing.T) {
	var ran atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 2000 {
				wg.Add(1)
				dispatch(func() {
					ran.Add(1)
					wg.Done()
				})
			}
		})
	}
	wg.Wait()
	if got := ran.Load(); got != 16000 {
		t.Fatalf("%d of 16000 calls ran", got)
	}
	deadline := time.Now().Add(hangProtection)
	for {
		awake.Lock()
		waiting := awake.mailbox != nil
		awake.Unlock()
		if !waiting {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("a goroutine is still awake")
		}
		time.Sleep(time.Millisecond)
	}
}
