//go:build cgo && !ferrule_local && !ferrule_system && !(linux && !android && (amd64 || arm64))

package ferrule

// No library is published for this platform (the published ones are Linux with
// glibc on amd64 and arm64): build with the tag ferrule_system against an
// installed library (pkg-config; docs/go.md, "Building").
var _ = ferrule_has_no_library_for_this_platform_build_with_tag_ferrule_system
