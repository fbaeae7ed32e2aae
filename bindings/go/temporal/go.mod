module github.com/ferrule-dev/ferrule/bindings/go/temporal

go 1.26.0

require (
	github.com/ferrule-dev/ferrule/bindings/go v0.0.0
	go.temporal.io/api v1.64.3
	go.temporal.io/sdk v1.51.0
	google.golang.org/protobuf v1.36.11
)

require (
	github.com/buger/jsonparser v1.6.1 // indirect
	github.com/davecgh/go-spew v1.1.1 // indirect
	github.com/facebookgo/clock v0.0.0-20150410010913-600d898af40a // indirect
	github.com/ferrule-dev/ferrule/bindings/go/lib/linux-amd64 v0.0.0 // indirect
	github.com/ferrule-dev/ferrule/bindings/go/lib/linux-arm64 v0.0.0 // indirect
	github.com/gogo/protobuf v1.3.2 // indirect
	github.com/golang/mock v1.6.0 // indirect
	github.com/google/jsonschema-go v0.4.3 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/grpc-ecosystem/go-grpc-middleware/v2 v2.3.2 // indirect
	github.com/grpc-ecosystem/grpc-gateway/v2 v2.22.0 // indirect
	github.com/nexus-rpc/nexus-proto-annotations v0.1.0 // indirect
	github.com/nexus-rpc/sdk-go v0.7.0 // indirect
	github.com/pmezard/go-difflib v1.0.0 // indirect
	github.com/robfig/cron v1.2.0 // indirect
	github.com/stretchr/objx v0.5.2 // indirect
	github.com/stretchr/testify v1.10.0 // indirect
	github.com/valyala/fastjson v1.6.10 // indirect
	golang.org/x/net v0.58.0 // indirect
	golang.org/x/sync v0.22.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
	golang.org/x/text v0.41.0 // indirect
	golang.org/x/time v0.3.0 // indirect
	google.golang.org/genproto/googleapis/api v0.0.0-20260526163538-3dc84a4a5aaa // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260526163538-3dc84a4a5aaa // indirect
	google.golang.org/grpc v1.83.2 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)

// A checkout builds with the binding beside it; a module depending on this one
// ignores these lines.
replace (
	github.com/ferrule-dev/ferrule/bindings/go => ../
	github.com/ferrule-dev/ferrule/bindings/go/lib/linux-amd64 => ../lib/linux-amd64
	github.com/ferrule-dev/ferrule/bindings/go/lib/linux-arm64 => ../lib/linux-arm64
)
