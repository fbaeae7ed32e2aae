//go:build !ferrule_local && !ferrule_system

package ferrule

// The static library for linux/amd64, from a module of its own.
import _ "github.com/ferrule-dev/ferrule/bindings/go/lib/linux-amd64"
