//go:build !ferrule_local && !ferrule_system

package ferrule

// The static library for linux/arm64, from a module of its own.
import _ "github.com/ferrule-dev/ferrule/bindings/go/lib/linux-arm64"
