//go:build cgo && !ferrule_local && !ferrule_system && !android

package ferrule

// The static library for linux/arm64 (glibc), from a module of its own.
import _ "github.com/ferrule-dev/ferrule/bindings/go/lib/linux-arm64"
