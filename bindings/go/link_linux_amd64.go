//go:build cgo && !ferrule_local && !ferrule_system && !android

package ferrule

// The static library for linux/amd64 (glibc), from a module of its own.
import _ "github.com/ferrule-dev/ferrule/bindings/go/lib/linux-amd64"
