module github.com/ferrule-dev/ferrule/examples/go

go 1.26.0

require github.com/ferrule-dev/ferrule/bindings/go v0.0.0

require (
	github.com/buger/jsonparser v1.6.1 // indirect
	github.com/ferrule-dev/ferrule/bindings/go/lib/linux-amd64 v0.0.0 // indirect
	github.com/ferrule-dev/ferrule/bindings/go/lib/linux-arm64 v0.0.0 // indirect
	github.com/google/jsonschema-go v0.4.3 // indirect
	github.com/valyala/fastjson v1.6.10 // indirect
)

// The binding and its libraries' modules from the checkout (build with the tag
// ferrule_local, or with the libraries of a release in bindings/go/lib).
replace (
	github.com/ferrule-dev/ferrule/bindings/go => ../../bindings/go
	github.com/ferrule-dev/ferrule/bindings/go/lib/linux-amd64 => ../../bindings/go/lib/linux-amd64
	github.com/ferrule-dev/ferrule/bindings/go/lib/linux-arm64 => ../../bindings/go/lib/linux-arm64
)
