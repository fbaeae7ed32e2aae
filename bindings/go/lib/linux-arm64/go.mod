module github.com/ferrule-dev/ferrule/bindings/go/lib/linux-arm64

go 1.26
