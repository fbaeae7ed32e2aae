//go:build !cgo

package ferrule

// The binding calls ferrule's C library through cgo: build with CGO_ENABLED=1
// and a C compiler.
var _ = ferrule_needs_cgo_build_with_CGO_ENABLED_1_and_a_C_compiler
