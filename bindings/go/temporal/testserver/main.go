// Command testserver runs a real Temporal server for the tests of package
// ferruletemporal: go.temporal.io/server's temporaltest, every service in this
// one process, on SQLite in memory, listening on 127.0.0.1 only. Once the
// server is up it prints "<frontend host:port> <namespace>" on one line; it
// stops when its standard input closes (the test that started it ended, or
// died).
//
// A module of its own: the server wants an older go.temporal.io/api than
// the SDK the package is built on, and a newer Go (build it with
// GOTOOLCHAIN=go1.27.3, which make test-temporal does).
package main

import (
	"fmt"
	"io"
	"os"

	"go.temporal.io/server/temporaltest"
)

func main() {
	server := temporaltest.NewServer()
	fmt.Println(server.GetFrontendHostPort(), server.GetDefaultNamespace())
	_, _ = io.Copy(io.Discard, os.Stdin)
	server.Stop()
}
