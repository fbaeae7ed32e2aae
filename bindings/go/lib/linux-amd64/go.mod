module github.com/ferrule-dev/ferrule/bindings/go/lib/linux-amd64

go 1.26
