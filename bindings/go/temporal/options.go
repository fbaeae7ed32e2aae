package ferruletemporal

import (
	"time"

	"go.temporal.io/sdk/temporal"
)

// Options say how a run's activities are bounded and retried, and how long
// the workflow grows before it continues as new. The zero value takes every
// default.
type Options struct {
	// StepTimeout bounds one model step, a model request with ferrule's own
	// retries (StartToCloseTimeout); default 10 minutes.
	StepTimeout time.Duration `json:",omitempty"`
	// StepRetry retries a step whose worker died or whose model failed in a
	// way worth trying again (rate limits, overload, server and network
	// errors, ferrule short of threads); default Temporal's own: unlimited
	// attempts, backing off from 1 second to 1 minute (a run waits out an
	// outage).
	StepRetry *temporal.RetryPolicy `json:",omitempty"`
	// CallTimeout bounds one call (StartToCloseTimeout); default 1 hour. The
	// tool's own timeout bounds it inside ferrule as always.
	CallTimeout time.Duration `json:",omitempty"`
	// Heartbeat is the heartbeat timeout of both activities: a worker that
	// dies is noticed after it, and the activity tried again elsewhere;
	// default 30 seconds. They heartbeat at least every third of it (and on
	// every progress update of a call).
	Heartbeat time.Duration `json:",omitempty"`
	// CallRetry retries a call whose worker died or that outlived
	// CallTimeout; default 5 attempts, backing off from 1 second to 1 minute,
	// after which the call is answered as its tool's failure. A tool's own
	// failure is not retried: it is the call's result, which the model sees.
	CallRetry *temporal.RetryPolicy `json:",omitempty"`
	// StepsPerRun is how many steps one workflow run makes before it
	// continues as new, carrying the state (sooner when Temporal suggests it);
	// default 100.
	StepsPerRun int `json:",omitempty"`
	// EventsKept is how many of the latest events QueryEvents answers;
	// default 256.
	EventsKept int `json:",omitempty"`
	// WithMessages puts the transcript in the final Response (it is in every
	// step's state anyway); off by default, to keep the result small.
	WithMessages bool `json:",omitempty"`
	// PayloadLimit is the most bytes of JSON a step's output (the run's
	// state, which holds the whole transcript, and its events) or a call's
	// outcome may take: Temporal refuses payloads over 2 MB by default, and
	// obscurely. A larger one fails the run at once, saying so. Default
	// 1,900,000; raise it with DataConverter (compressed payloads) or a server
	// that allows more.
	PayloadLimit int `json:",omitempty"`
}

// withDefaults fills what was left zero.
func (o Options) withDefaults() Options {
	if o.StepTimeout == 0 {
		o.StepTimeout = 10 * time.Minute
	}
	if o.StepRetry == nil {
		o.StepRetry = &temporal.RetryPolicy{InitialInterval: time.Second, MaximumInterval: time.Minute}
	}
	if o.CallTimeout == 0 {
		o.CallTimeout = time.Hour
	}
	if o.Heartbeat == 0 {
		o.Heartbeat = 30 * time.Second
	}
	if o.CallRetry == nil {
		o.CallRetry = &temporal.RetryPolicy{InitialInterval: time.Second, MaximumInterval: time.Minute, MaximumAttempts: 5}
	}
	if o.StepsPerRun <= 0 {
		o.StepsPerRun = 100
	}
	if o.EventsKept <= 0 {
		o.EventsKept = 256
	}
	if o.PayloadLimit <= 0 {
		o.PayloadLimit = 1_900_000
	}
	return o
}
