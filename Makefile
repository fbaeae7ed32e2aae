# ferrule: `make demo` runs the C example host; `make test` runs every test suite.

CARGO    ?= cargo
CC       ?= cc
CBINDGEN ?= cbindgen
CBINDGEN_VERSION := 0.29.4
BUILD    := build
LIBDIR   := target/release
PREFIX   ?= /usr/local
VERSION  := $(shell sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
ABI_VERSION := $(shell sed -n 's/^\#define FERRULE_ABI_VERSION //p' include/ferrule.h)
CFLAGS_EXAMPLE := -std=c11 -Wall -Wextra -Werror -pedantic -O2 -Iinclude

.PHONY: test-temporal demo-temporal temporal-server fuzz soak test-miri test-loom all lib dist install install-files notices notices-check setup-packages release-libs release release-go aar test-packages demo demo-approval demo-go demo-swift test-swift test-kotlin test-mcp-conformance demo-kotlin kotlin-jar kotlin-native bench-kotlin bench bench-mcp bench-go bench-swift xcframework setup test test-rust test-header test-c test-go header header-check judge schema generate clean

all: lib

# The shared library's SONAME is libferrule.so.0 (build.rs); the link beside it
# lets programs linked here find it.
lib:
	$(CARGO) build --release --lib
	ln -sf libferrule.so $(LIBDIR)/libferrule.so.$(ABI_VERSION)

# The libraries as packages ship them, for this machine's architecture
# (scripts/dist.sh), and beside their sizes a C program's linked statically
# against them (docs/performance.md, "Artifact sizes").
HOST_ARCH := $(shell uname -m)
dist: setup-packages
	$(ZIG_PATH) ./scripts/dist.sh $(HOST_ARCH)-unknown-linux-gnu
	@mkdir -p $(BUILD)
	$(CC) $(CFLAGS_EXAMPLE) -s examples/c/agent.c -o $(BUILD)/agent-static $(call dist_of,$(HOST_ARCH))/libferrule.a \
		-lpthread -ldl -lm -lrt -lutil
	@awk -v size="$$(wc -c < $(BUILD)/agent-static)" 'BEGIN { printf "%8.1f MB  $(BUILD)/agent-static\n", size / 1e6 }'

# Installs the header, both libraries (the shared one as
# libferrule.so.VERSION with the .so.0 and .so links), ferrule.pc and the CMake
# package (lib/cmake/ferrule: find_package(ferrule)). install-files installs
# what LIBDIR holds without building it; PC_PREFIX is the prefix ferrule.pc
# names (a release's is relative to the file's own place).
PC_PREFIX = $(PREFIX)
install: lib
	$(MAKE) --no-print-directory install-files

install-files:
	install -d $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(PREFIX)/lib/cmake/ferrule \
		$(DESTDIR)$(PREFIX)/share/doc/ferrule
	install -m 644 LICENSE-MIT LICENSE-APACHE THIRD-PARTY-NOTICES $(DESTDIR)$(PREFIX)/share/doc/ferrule/
	install -m 644 include/ferrule.h $(DESTDIR)$(PREFIX)/include/
	install -m 644 $(LIBDIR)/libferrule.a $(DESTDIR)$(PREFIX)/lib/
	install -m 755 $(LIBDIR)/libferrule.so $(DESTDIR)$(PREFIX)/lib/libferrule.so.$(VERSION)
	ln -sf libferrule.so.$(VERSION) $(DESTDIR)$(PREFIX)/lib/libferrule.so.$(ABI_VERSION)
	ln -sf libferrule.so.$(ABI_VERSION) $(DESTDIR)$(PREFIX)/lib/libferrule.so
	sed -e 's|@PREFIX@|$(PC_PREFIX)|' -e 's|@VERSION@|$(VERSION)|' ferrule.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/ferrule.pc
	for file in ferrule-config ferrule-config-version; do \
		sed -e 's|@VERSION@|$(VERSION)|' -e 's|@ABI_VERSION@|$(ABI_VERSION)|' cmake/$$file.cmake.in \
			> $(DESTDIR)$(PREFIX)/lib/cmake/ferrule/$$file.cmake || exit 1; \
	done

$(BUILD)/agent: examples/c/agent.c include/ferrule.h lib
	@mkdir -p $(BUILD)
	$(CC) $(CFLAGS_EXAMPLE) examples/c/agent.c -o $@ -L$(LIBDIR) -lferrule -lpthread -Wl,-rpath,$(CURDIR)/$(LIBDIR)

demo: $(BUILD)/agent
	./$(BUILD)/agent

# Approval across two processes (examples/c/approval.c; needs cJSON): the first
# stops for approval and stores the state, the second resumes it with decisions.
$(BUILD)/approval: examples/c/approval.c include/ferrule.h lib
	@mkdir -p $(BUILD)
	$(CC) $(CFLAGS_EXAMPLE) examples/c/approval.c -o $@ -L$(LIBDIR) -lferrule -lcjson -lpthread -Wl,-rpath,$(CURDIR)/$(LIBDIR)

demo-approval: $(BUILD)/approval
	rm -f $(BUILD)/outbox.txt
	cd $(BUILD) && ./approval start state.json; test $$? -eq 3
	cd $(BUILD) && ./approval resume state.json call_2=yes "call_3=no:Not the whole list."
	cat $(BUILD)/outbox.txt

# Every suite, in order, each one's wall time printed after it and all of them
# at the end.
SUITES = test-rust test-miri test-loom test-mcp-conformance test-header test-c test-go test-temporal test-swift test-kotlin test-packages
test: setup
	@mkdir -p $(BUILD); : > $(BUILD)/suite-times.txt
	@for suite in $(SUITES); do \
		start=$$(date +%s); \
		$(MAKE) --no-print-directory $$suite || { echo "$$suite failed after $$(( $$(date +%s) - start )) s"; exit 1; }; \
		echo "$$suite: $$(( $$(date +%s) - start )) s" | tee -a $(BUILD)/suite-times.txt; \
	done
	@echo "suite times:"; cat $(BUILD)/suite-times.txt

setup:
	./scripts/setup.sh

# The conformance scenarios start the MCP test server the judge's package builds.
test-rust: judge
	$(CARGO) fmt --all --check
	$(CARGO) clippy --release --workspace --all-targets -- -D warnings
	$(CARGO) test --release --workspace
	$(CARGO) clippy --release --lib --no-default-features -- -D warnings
	$(CARGO) test --release --lib --no-default-features
	$(CARGO) run --release -q -p ferrule-codegen -- --check

# The MCP conformance suite's client scenarios against ferrule's MCP client,
# judged by the committed baselines of expected failures (tests/mcp/conformance.sh).
test-mcp-conformance:
	$(CARGO) build --release --example mcp_conformance_client
	bash tests/mcp/conformance.sh

# The bindings' generated files (codegen/, listed in codegen/src/outputs.rs),
# written anew from schema/ferrule.schema.json; make test fails while any is stale.
generate:
	$(CARGO) run --release -q -p ferrule-codegen

# Writes schema/ferrule.schema.json anew from the Rust types (make test fails
# while the committed one differs).
schema:
	FERRULE_BLESS=1 $(CARGO) test --release --test it schema_file

# The committed header must be what cbindgen makes of the sources, it must
# compile as C11 and C++17 with every warning an error, and a program built
# against it must refer to its ABI's symbol (so that it links only with a
# library of that ABI).
test-header: header-check
	@mkdir -p $(BUILD)
	printf '#include "ferrule.h"\nint main(void) { return ferrule_abi_version() == FERRULE_ABI_VERSION ? 0 : 1; }\n' > $(BUILD)/header_c.c
	$(CC) -std=c11 -Wall -Wextra -Werror -pedantic -Iinclude -c $(BUILD)/header_c.c -o $(BUILD)/header_c.o
	nm $(BUILD)/header_c.o | grep -q ' U ferrule_abi_$(ABI_VERSION)$$' || \
		{ echo "a program built against the header must refer to ferrule_abi_$(ABI_VERSION)"; exit 1; }
	cp $(BUILD)/header_c.c $(BUILD)/header_cpp.cpp
	c++ -std=c++17 -Wall -Wextra -Werror -pedantic -Iinclude -c $(BUILD)/header_cpp.cpp -o $(BUILD)/header_cpp.o

# The header, and its copy inside the Go module (a Go module holds only its own
# directory's files).
GO_HEADER = bindings/go/ferrule.h
header:
	$(CBINDGEN) --quiet --config cbindgen.toml --crate ferrule --output include/ferrule.h
	cp include/ferrule.h $(GO_HEADER)

header-check:
	@$(CBINDGEN) --version | grep -q " $(CBINDGEN_VERSION)$$" || { echo "cbindgen $(CBINDGEN_VERSION) is required (cargo install cbindgen --version $(CBINDGEN_VERSION) --locked)"; exit 1; }
	@mkdir -p $(BUILD)
	$(CBINDGEN) --quiet --config cbindgen.toml --crate ferrule --output $(BUILD)/ferrule.h
	@diff -u include/ferrule.h $(BUILD)/ferrule.h || { echo "include/ferrule.h is stale: run make header and commit it"; exit 1; }
	@cmp -s include/ferrule.h $(GO_HEADER) || { echo "$(GO_HEADER) differs from include/ferrule.h: run make header and commit it"; exit 1; }

# The one judge of the conformance observations every runner writes
# (tests/conformance/README.md), built with the MCP test server the MCP
# scenarios start by name from PATH.
JUDGE = target/release/ferrule-conformance
MCP_TEST_PATH = $(CURDIR)/target/release:$$PATH
judge:
	$(CARGO) build --release -p ferrule-conformance

# C tests: each linked once against the shared and once against the static
# library, under AddressSanitizer with leak detection.
test-c: lib judge
	cmake -S tests/c -B $(BUILD)/c -G Ninja -DCMAKE_BUILD_TYPE=Debug -DFERRULE_ROOT=$(CURDIR) > /dev/null
	cmake --build $(BUILD)/c -j 2
	cd $(BUILD)/c && ctest --output-on-failure
	$(MAKE) --no-print-directory install PREFIX=$(CURDIR)/$(BUILD)/prefix
	rm -rf $(BUILD)/cmake-consumer $(BUILD)/cmake-consumer-newer
	cmake -S tests/cmake-consumer -B $(BUILD)/cmake-consumer -G Ninja -DCMAKE_PREFIX_PATH=$(CURDIR)/$(BUILD)/prefix > /dev/null
	cmake --build $(BUILD)/cmake-consumer
	$(BUILD)/cmake-consumer/agent_shared && $(BUILD)/cmake-consumer/agent_static
	! cmake -S tests/cmake-consumer -B $(BUILD)/cmake-consumer-newer -DCMAKE_PREFIX_PATH=$(CURDIR)/$(BUILD)/prefix \
		-DFERRULE_WANTED=1.0 > /dev/null 2>&1

# In a checkout the Go binding links target/release/libferrule.a (the build tag
# ferrule_local; bindings/go/ffi.go). Its conformance runner hands its
# observations to the judge.
GO_LOCAL = -tags ferrule_local
# Go's build cache knows a cgo package by its sources and flags, not by the
# library it links: after the library was rebuilt, a test, example or benchmark
# would still link the old one. A flag naming the library's time and size
# changes what the cache knows the package by whenever the library changes
# (a make started by this one inherits the flag: it is replaced, not repeated).
GO_CFLAGS_GIVEN := $(filter-out -DFERRULE_LIBRARY_BUILT=%,$(CGO_CFLAGS))
export CGO_CFLAGS = $(or $(GO_CFLAGS_GIVEN),-O2 -g) \
	-DFERRULE_LIBRARY_BUILT=$(shell stat -c %Y-%s target/release/libferrule.a 2>/dev/null)
test-go: lib judge
	test -z "$$(gofmt -l bindings/go examples/go bench/go tests/packages)" || { gofmt -l bindings/go examples/go bench/go tests/packages; echo "gofmt: the files above are not formatted"; exit 1; }
	cd bindings/go && go vet $(GO_LOCAL) ./... && PATH=$(MCP_TEST_PATH) FERRULE_OBSERVATIONS=$(CURDIR)/$(BUILD)/conformance/go go test $(GO_LOCAL) -race -count=1 ./...
	cd examples/go && go vet $(GO_LOCAL) ./...
	out=$$(cd examples/go && go run $(GO_LOCAL) ./hostmodel) || { echo "$$out"; exit 1; }; echo "$$out" && \
		echo "$$out" | grep -q "answer: C-100 is on the Gold plan."
	cd bench/go && go vet $(GO_LOCAL) ./...
	$(MAKE) --no-print-directory install PREFIX=$(CURDIR)/$(BUILD)/prefix
	readelf -d $(BUILD)/prefix/lib/libferrule.so | grep -q 'SONAME.*libferrule.so.$(ABI_VERSION)'
	cd bindings/go && PKG_CONFIG_PATH=$(CURDIR)/$(BUILD)/prefix/lib/pkgconfig \
		LD_LIBRARY_PATH=$(CURDIR)/$(BUILD)/prefix/lib FERRULE_OBSERVATIONS=$(CURDIR)/$(BUILD)/conformance/go-system PATH=$(MCP_TEST_PATH) \
		go test -tags ferrule_system -count=1 -run Conformance ./...

# Durable runs on Temporal (bindings/go/temporal, a Go module of its own): its
# tests against a real Temporal server in a process of their own (the
# testserver module: go.temporal.io/server's temporaltest, on 127.0.0.1, which
# needs a newer Go than the machine's, fetched once as a toolchain module),
# under the race detector, and the example against the same server.
TEMPORAL_SERVER = $(BUILD)/temporal-test-server
TEMPORAL_GO = go1.27.3
temporal-server:
	cd bindings/go/temporal/testserver && GOTOOLCHAIN=$(TEMPORAL_GO) go build -o $(CURDIR)/$(TEMPORAL_SERVER) .
test-temporal: lib temporal-server
	cd bindings/go/temporal && go vet $(GO_LOCAL) ./... && \
		FERRULE_TEMPORAL_SERVER=$(CURDIR)/$(TEMPORAL_SERVER) go test $(GO_LOCAL) -race -count=1 ./...
	cd examples/go/temporal && go vet $(GO_LOCAL) ./...
	out=$$(cd examples/go/temporal && $(CURDIR)/scripts/temporal-dev.sh $(CURDIR)/$(TEMPORAL_SERVER) go run $(GO_LOCAL) . demo) || { echo "$$out"; exit 1; }; \
		echo "$$out" && echo "$$out" | grep -q "answer: C-100 is on the Gold plan; I emailed them."

# The Temporal example's demo beside a throwaway server (README, "Durable runs
# on Temporal").
demo-temporal: lib temporal-server
	cd examples/go/temporal && $(CURDIR)/scripts/temporal-dev.sh $(CURDIR)/$(TEMPORAL_SERVER) go run $(GO_LOCAL) . demo

# The Swift binding, built and tested inside a Debian trixie root (scripts/swift.sh):
# swift-format's lint (bindings/swift/.swift-format), its tests, the same under
# the thread sanitizer (a build directory of its own; FERRULE_TSAN makes hand-offs
# through ferrule visible to it), and the examples (lookup, and the same on a
# model written in Swift).
SWIFT = bash scripts/swift.sh swift
test-swift: lib judge
	$(SWIFT) format lint --strict --recursive --configuration /ferrule/bindings/swift/.swift-format \
		/ferrule/bindings/swift/Sources /ferrule/bindings/swift/Tests /ferrule/Package.swift \
		/ferrule/examples/swift /ferrule/bench/swift/workloads
	$(SWIFT) test
	$(SWIFT) test --sanitize=thread -Xswiftc -DFERRULE_TSAN --scratch-path .build/tsan
	for example in Lookup HostModelExample; do \
		out=$$($(SWIFT) run --package-path /ferrule/examples/swift/lookup $$example) && echo "$$out" && \
		echo "$$out" | grep -q "answer: C-100 is on the Gold plan." || exit 1; \
	done

# The Kotlin/JVM binding (Maven with the Kotlin plugin on JDK 17): ktlint
# (bindings/kotlin/.editorconfig), its JUnit
# tests (JNA finds the library through jna.library.path, set to target/release by
# the pom), then the JAR with the library bundled goes into the local Maven
# repository; the examples (lookup, and the same on a model written in Kotlin)
# run on that JAR alone (jna.library.path pointing nowhere), and the quick start
# of docs/kotlin.md compiles beside them against the public API.
KOTLIN_MVN = mvn -q -B -Dstyle.color=never
KOTLIN_README = examples/kotlin/target/readme/QuickStart.kt
test-kotlin: kotlin-native judge
	cd bindings/kotlin && PATH=$(MCP_TEST_PATH) $(KOTLIN_MVN) install
	@mkdir -p $(dir $(KOTLIN_README))
	{ echo 'package readme'; awk '/^# Kotlin quick start$$/ { found = 1 } found && /^```kotlin/ { code = 1; next } \
		code && /^```/ { exit } code' docs/kotlin.md; } > $(KOTLIN_README)
	for main in LookupKt HostModelKt; do \
		out=$$(cd examples/kotlin && $(KOTLIN_MVN) compile exec:java -Dexec.mainClass=$$main \
			-Dferrule.library.path=$(CURDIR)/$(BUILD)/no-library) || { echo "$$out"; exit 1; }; \
		echo "$$out" && echo "$$out" | grep -q "answer: C-100 is on the Gold plan." || exit 1; \
	done

# The lookup example (a real model when its key is set).
demo-kotlin: kotlin-jar
	cd examples/kotlin && $(KOTLIN_MVN) compile exec:java

# W1 and W2 with the tool in Kotlin (docs/performance.md).
bench-kotlin: kotlin-jar
	cd bench/kotlin && $(KOTLIN_MVN) compile exec:java

# The Kotlin JAR with libferrule (stripped) bundled for this platform, where JNA
# finds it on the class path without jna.library.path:
# bindings/kotlin/target/ferrule-0.1.0.jar, also installed into the local Maven
# repository.
kotlin-jar: kotlin-native
	cd bindings/kotlin && $(KOTLIN_MVN) install -DskipTests

JNA_PLATFORM = linux-$(subst _,-,$(shell uname -m))
kotlin-native: lib
	mkdir -p bindings/kotlin/target/native/$(JNA_PLATFORM)
	strip -o bindings/kotlin/target/native/$(JNA_PLATFORM)/libferrule.so $(LIBDIR)/libferrule.so

# The lookup example as a Swift executable (a real model when its key is set).
demo-swift: lib
	$(SWIFT) run --package-path /ferrule/examples/swift/lookup Lookup

# W1 and W2 with the tool in Swift (docs/performance.md).
bench-swift: lib
	$(SWIFT) run -c release --package-path /ferrule/bench/swift/workloads

# An XCFramework of the static library (dist profile) and the header for Apple
# platforms, with the slices macos-arm64_x86_64, ios-arm64 and
# ios-arm64_x86_64-simulator, zipped for a binary target with its checksum
# (macOS with Xcode only: docs/swift.md, "Swift on Apple platforms").
XCFRAMEWORK_TARGETS = aarch64-apple-darwin x86_64-apple-darwin aarch64-apple-ios aarch64-apple-ios-sim x86_64-apple-ios
xcframework:
	@[ "$$(uname)" = Darwin ] || { echo "make xcframework needs macOS with Xcode" >&2; exit 1; }
	for target in $(XCFRAMEWORK_TARGETS); do ./scripts/dist.sh $$target || exit 1; done
	@mkdir -p $(BUILD)/xcframework/macos $(BUILD)/xcframework/simulator $(BUILD)/xcframework/headers
	lipo -create target/aarch64-apple-darwin/dist/libferrule.a target/x86_64-apple-darwin/dist/libferrule.a \
		-output $(BUILD)/xcframework/macos/libferrule.a
	lipo -create target/aarch64-apple-ios-sim/dist/libferrule.a target/x86_64-apple-ios/dist/libferrule.a \
		-output $(BUILD)/xcframework/simulator/libferrule.a
	cp include/ferrule.h bindings/swift/Sources/CFerrule/module.modulemap $(BUILD)/xcframework/headers/
	sed -i '' 's/header "ferrule_shim.h"/header "ferrule.h"/' $(BUILD)/xcframework/headers/module.modulemap
	rm -rf $(BUILD)/Ferrule.xcframework $(BUILD)/Ferrule.xcframework.zip
	xcodebuild -create-xcframework \
		-library $(BUILD)/xcframework/macos/libferrule.a -headers $(BUILD)/xcframework/headers \
		-library target/aarch64-apple-ios/dist/libferrule.a -headers $(BUILD)/xcframework/headers \
		-library $(BUILD)/xcframework/simulator/libferrule.a -headers $(BUILD)/xcframework/headers \
		-output $(BUILD)/Ferrule.xcframework
	cd $(BUILD) && zip -qry Ferrule.xcframework.zip Ferrule.xcframework
	swift package compute-checksum $(BUILD)/Ferrule.xcframework.zip

# Packages and releases (docs/packages.md). The libraries as they ship are
# built with the Cargo profile dist for each Linux target, against glibc 2.28
# (scripts/dist.sh, with cargo-zigbuild), into target/TARGET/dist.
RELEASE_TARGETS = x86_64-unknown-linux-gnu aarch64-unknown-linux-gnu
RELEASE = $(BUILD)/release
ZIG_PATH = PATH=$(CURDIR)/build/zig-python/bin:$$PATH
dist_of = target/$(1)-unknown-linux-gnu/dist
tarball = ferrule-$(VERSION)-$(1)-linux-gnu
# JNA's and Go's names of the platforms.
jna_platform = linux-$(subst _,-,$(1))
go_platform = $(or $(if $(filter x86_64,$(1)),linux-amd64),$(if $(filter aarch64,$(1)),linux-arm64),$(error no Go platform for $(1)))
RELEASE_ARCHS = $(patsubst %-unknown-linux-gnu,%,$(RELEASE_TARGETS))
# Each Go platform's static library, as scripts/release-go.sh takes them.
GO_LIBRARIES = $(foreach arch,$(RELEASE_ARCHS),$(call go_platform,$(arch))=$(call dist_of,$(arch))/libferrule.a)

setup-packages:
	./scripts/setup.sh packages

# THIRD-PARTY-NOTICES: the licences of the crates the library links, written by
# cargo-about (about.toml, scripts/notices/notices.hbs) from the crates' own
# files; every package carries it, and a release fails while it is stale.
NOTICES = cargo about generate --offline --locked -m Cargo.toml scripts/notices/notices.hbs
notices:
	$(NOTICES) -o THIRD-PARTY-NOTICES

notices-check: setup-packages
	@mkdir -p $(BUILD)
	$(NOTICES) -o $(BUILD)/THIRD-PARTY-NOTICES 2>/dev/null
	@cmp -s THIRD-PARTY-NOTICES $(BUILD)/THIRD-PARTY-NOTICES || \
		{ echo "THIRD-PARTY-NOTICES is stale: run make notices and commit it"; exit 1; }

release-libs: setup-packages
	for target in $(RELEASE_TARGETS); do $(ZIG_PATH) ./scripts/dist.sh $$target || exit 1; done

# Every artifact this machine can build, in build/release, with SHA256SUMS: per
# Linux target a tarball for C and C++ (include/, lib/ with both libraries,
# pkg-config's and CMake's files, relocatable), and the Kotlin/JVM artifacts
# (the JAR with every platform's library, the POM, sources and javadoc JARs) in
# a Maven repository (build/release/maven). The Go modules are a commit of their
# own: make release-go.
release: release-libs notices-check
	rm -rf $(RELEASE)
	$(foreach arch,$(RELEASE_ARCHS),$(MAKE) --no-print-directory install-files LIBDIR=$(call dist_of,$(arch)) PREFIX= \
		DESTDIR=$(RELEASE)/stage/$(call tarball,$(arch)) PC_PREFIX='$$$${pcfiledir}/../..' > /dev/null &&) true
	$(foreach arch,$(RELEASE_ARCHS),tar -C $(RELEASE)/stage --sort=name --owner=0 --group=0 --numeric-owner \
		-czf $(RELEASE)/$(call tarball,$(arch)).tar.gz $(call tarball,$(arch)) &&) true
	$(foreach arch,$(RELEASE_ARCHS),install -D -m 755 $(call dist_of,$(arch))/libferrule.so \
		$(RELEASE)/stage/native/$(call jna_platform,$(arch))/libferrule.so &&) true
	cd bindings/kotlin && $(KOTLIN_MVN) -Prelease clean deploy -DskipTests -Dferrule.native.dir=$(CURDIR)/$(RELEASE)/stage/native \
		-DaltDeploymentRepository=release::file://$(CURDIR)/$(RELEASE)/maven
	rm -rf $(RELEASE)/stage
	cd $(RELEASE) && find . -type f ! -name SHA256SUMS ! -name '*.md5' ! -name '*.sha1' ! -name 'maven-metadata*' \
		| sort | xargs sha256sum > SHA256SUMS
	@cat $(RELEASE)/SHA256SUMS
	@echo "release: the Go modules' release commit is written by make release-go"

# The Android library of the Kotlin binding (scripts/aar.sh; needs the NDK).
aar:
	./scripts/aar.sh

# The Go modules' release commit and tags (scripts/release-go.sh), for this
# version, with the static libraries of release-libs; push the tags to publish.
release-go: release-libs
	./scripts/release-go.sh . v$(VERSION) $(GO_LIBRARIES)

# The packages as users get them (tests/packages): the Go modules from a
# file-based proxy, the Kotlin artifacts from a Maven repository, the C
# tarballs through CMake and pkg-config, the Swift package against a tarball;
# arm64 under qemu.
test-packages: release
	./tests/packages/go.sh $(VERSION) $(GO_LIBRARIES)
	./tests/packages/c.sh $(RELEASE) $(VERSION)
	./tests/packages/kotlin.sh $(RELEASE)/maven $(VERSION)
	./tests/packages/swift.sh $(RELEASE) $(VERSION)

demo-go: lib
	cd examples/go && go run $(GO_LOCAL) .

# One MCP tool call over stdio and HTTP, ferrule's client beside the OpenAI
# Agents SDK's against the same servers (docs/performance.md).
bench-mcp: judge
	./scripts/setup.sh bench
	$(CARGO) bench --bench mcp
	$(BUILD)/bench-python/bin/python bench/mcp/peer.py $(CURDIR)/target/release/ferrule-mcp-test-server \
		$(CURDIR)/$(BUILD)/mcp-python/bin/python $(CURDIR)/tests/mcp/http_server.py

# Agents called as tools: ferrule beside the OpenAI Agents SDK's Agent.as_tool,
# each workload of the peer in a process of its own (docs/performance.md).
bench-agents:
	./scripts/setup.sh bench
	$(CARGO) bench --bench agents
	$(BUILD)/bench-python/bin/python bench/agents/peer.py a1
	$(BUILD)/bench-python/bin/python bench/agents/peer.py a2

# W1-W3 with the tool in Go: ferrule's Go binding beside eino. W1 and W2 in one
# process; each W3 in a process of its own, since its peak resident set is the
# process's (memory an earlier benchmark left with malloc would count), built
# with its own library's code alone (the build tags ferrule_only and eino_only),
# as a host's program would be: the other's code would count too. A binary just
# written by the linker, mapped from the page cache as it was written, counted
# 7 MiB more resident code than the same binary read back from disk (23.3
# against 15.6): each is written out and dropped from the cache before it runs.
GO_W3 = eino:EinoW3 ferrule:FerruleW3 ferrule:FerruleW3Inline
bench-go: lib
	@mkdir -p $(BUILD)
	cd bench/go && go test $(GO_LOCAL) -c -o $(CURDIR)/$(BUILD)/bench_go
	cd bench/go && for only in eino ferrule; do go test $(GO_LOCAL),$${only}_only -c -o $(CURDIR)/$(BUILD)/bench_go_$$only || exit 1; done
	for b in bench_go bench_go_eino bench_go_ferrule; do \
		dd of=$(BUILD)/$$b oflag=nocache conv=notrunc,fdatasync count=0 status=none && \
		dd if=$(BUILD)/$$b iflag=nocache count=0 status=none || exit 1; done
	cd bench/go && $(CURDIR)/$(BUILD)/bench_go -test.run '^$$' -test.bench 'W[12]' -test.benchtime 9x
	cd bench/go && for w in $(GO_W3); do $(CURDIR)/$(BUILD)/bench_go_$${w%%:*} -test.run '^$$' -test.bench "^Benchmark$${w#*:}\$$" -test.benchtime 5x || exit 1; done

# The soak (bench/soak.rs; docs/performance.md, "The soak"): FERRULE_SOAK_RUNS
# (10,000,000) runs of mixed workloads through the C ABI with the resident set,
# descriptors and threads sampled every second into build/soak.csv, then
# FERRULE_SOAK_CEILING (100,000) concurrent runs. Not part of make test.
soak:
	$(CARGO) bench --bench soak

# The nightly toolchain of the fuzzer and miri, pinned.
NIGHTLY = nightly-2026-05-20

# Every fuzz target for FUZZ_SECONDS (60) each (scripts/fuzz.sh;
# docs/testing.md, "Fuzzing"); FUZZ_TARGETS names some only.
fuzz:
	FUZZ_TOOLCHAIN=$(NIGHTLY) ./scripts/fuzz.sh $(FUZZ_TARGETS)

# The C ABI driven as a C host drives it, the handle table, the JSON reader and
# the SSE parser under miri, which fails on undefined behaviour, with strict
# provenance; ferrule's runtime threads live as long as the process, so they
# are not leaks (docs/testing.md, "Miri").
MIRI_TESTS = ffi:: json:: provider::http::sse
test-miri:
	rustup toolchain list | grep -q '^$(NIGHTLY)' || rustup toolchain install $(NIGHTLY) --profile minimal
	rustup component add miri rust-src --toolchain $(NIGHTLY)
	MIRIFLAGS="-Zmiri-strict-provenance -Zmiri-ignore-leaks" $(CARGO) +$(NIGHTLY) miri test --lib -- $(MIRI_TESTS)

# Sources whose concurrency loom can express, compiled in loom/ against its
# primitives and checked in every interleaving (docs/testing.md, "Loom").
test-loom:
	cd loom && $(CARGO) test --release --locked

clean:
	rm -rf $(BUILD)
	$(CARGO) clean

# Benchmarks (DESIGN section 7): W1 and W2 with the tool in Rust and in C; the
# built-ins' matching bound.
bench: setup lib
	@mkdir -p $(BUILD)
	$(CC) -std=c11 -O2 -Wall -Wextra -Werror -pedantic -Iinclude bench/ffi.c -o $(BUILD)/bench_ffi \
		-L$(LIBDIR) -lferrule -lcjson -lpthread -Wl,-rpath,$(CURDIR)/$(LIBDIR)
	$(CARGO) bench --bench loop --bench providers --bench http_rounds --bench builtins --bench tracing
	./$(BUILD)/bench_ffi bench/workloads.json
	$(MAKE) --no-print-directory bench-go
	$(MAKE) --no-print-directory bench-swift
	$(MAKE) --no-print-directory bench-kotlin
	$(MAKE) --no-print-directory bench-mcp
	$(MAKE) --no-print-directory bench-agents
