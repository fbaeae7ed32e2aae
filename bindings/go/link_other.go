//go:build !ferrule_local && !ferrule_system && !(linux && (amd64 || arm64))

package ferrule

// No library is published for this platform: build with the tag ferrule_system
// against an installed library (pkg-config), or with ferrule_local in a checkout
// after cargo build --release (docs/go.md, "Building").
var _ = ferrule_has_no_library_for_this_platform_build_with_tag_ferrule_system
