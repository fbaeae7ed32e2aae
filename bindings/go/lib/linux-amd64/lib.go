// Package ferrulelib carries ferrule's static library for linux/amd64 and the
// link line it needs. The ferrule package imports it on linux/amd64, so go build
// downloads only the host's library. libferrule.a is committed only in release
// commits (scripts/release-go.sh); in a checkout, build ferrule with the tag
// ferrule_local instead.
package ferrulelib

// #cgo LDFLAGS: ${SRCDIR}/libferrule.a -lgcc_s -lutil -lrt -lpthread -lm -ldl -lc
import "C"
