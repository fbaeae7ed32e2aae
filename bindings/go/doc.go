// Package ferrule runs LLM agents whose loop lives in the ferrule core (Rust, over
// its C ABI): model requests, validation of every tool call, parallel or
// sequential batches, timeouts and cancellation. Tools are Go functions; events
// arrive in order on a channel.
//
//	agent, err := ferrule.NewAgent(ferrule.Config{Model: ferrule.Model{Provider: "openai", Name: "gpt-4.1-mini"}},
//		ferrule.NewTool("lookup", "Looks a customer up.", lookup))
//	res, err := agent.Run(ctx, ferrule.Prompt("Who is C-100?"))
//
// By default the package links the static library of its platform's module
// (github.com/ferrule-dev/ferrule/bindings/go/lib/linux-amd64 or linux-arm64),
// which go build fetches for the host alone. With the build tag ferrule_system it
// links an installed library found through pkg-config; with ferrule_local, the
// library `cargo build --release` leaves in a checkout (target/release).
//
// Threads: every function and method may be called from any goroutine. Tools run
// on goroutines of their own; a tool's context is cancelled when its call times
// out or its run is cancelled.
package ferrule
