module github.com/ferrule-dev/ferrule/examples/go

go 1.26

require github.com/ferrule-dev/ferrule/bindings/go v0.0.0

require github.com/google/jsonschema-go v0.4.3 // indirect

replace github.com/ferrule-dev/ferrule/bindings/go => ../../bindings/go
