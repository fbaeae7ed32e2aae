module github.com/ferrule-dev/ferrule/bindings/go

go 1.26

require (
	github.com/ferrule-dev/ferrule/bindings/go/lib/linux-amd64 v0.0.0
	github.com/ferrule-dev/ferrule/bindings/go/lib/linux-arm64 v0.0.0
	github.com/google/jsonschema-go v0.4.3
)

require (
	github.com/buger/jsonparser v1.6.1
	github.com/valyala/fastjson v1.6.10
)

// A checkout builds with the libraries' modules beside it; a release commit sets
// the versions above (scripts/release-go.sh), and a module depending on this one
// ignores these lines.
replace (
	github.com/ferrule-dev/ferrule/bindings/go/lib/linux-amd64 => ./lib/linux-amd64
	github.com/ferrule-dev/ferrule/bindings/go/lib/linux-arm64 => ./lib/linux-arm64
)
