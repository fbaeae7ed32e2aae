module github.com/ferrule-dev/ferrule/bindings/go

go 1.26.0

require (
	github.com/ferrule-dev/ferrule/bindings/go/lib/linux-amd64 v0.0.0
	github.com/ferrule-dev/ferrule/bindings/go/lib/linux-arm64 v0.0.0
	github.com/google/jsonschema-go v0.4.3
)

require (
	github.com/buger/jsonparser v1.6.1
	github.com/valyala/fastjson v1.6.10
	go.opentelemetry.io/otel v1.47.0
	go.opentelemetry.io/otel/sdk v1.47.0
	go.opentelemetry.io/otel/trace v1.47.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/go-logr/logr v1.4.4 // indirect
	github.com/go-logr/stdr v1.2.2 // indirect
	github.com/google/uuid v1.6.0 // indirect
	go.opentelemetry.io/auto/sdk v1.2.1 // indirect
	go.opentelemetry.io/otel/log v1.47.0 // indirect
	go.opentelemetry.io/otel/metric v1.47.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
)

// A checkout builds with the libraries' modules beside it; a release commit sets
// the versions above (scripts/release-go.sh), and a module depending on this one
// ignores these lines.
replace (
	github.com/ferrule-dev/ferrule/bindings/go/lib/linux-amd64 => ./lib/linux-amd64
	github.com/ferrule-dev/ferrule/bindings/go/lib/linux-arm64 => ./lib/linux-arm64
)
