// Package ggml binds the pinned llama.cpp's ggml libraries (libggml-base,
// libggml and the best-scoring libggml-cpu-*.so, npm
// @node-llama-cpp/linux-x64@3.21.1, commit 5b4ebc5) through purego: ggml's
// type table, its reference quantizers and dequantizers, the CPU backend's
// activation quantizers and vec_dot. It is the ground floor that both the
// llama.cpp harness (harness/llamacpp, which adds libllama on top) and the
// kernel gate's ggml cross-check (ledger/gate, ledger/ledgertest) load, so
// the ledger does not import the harness. Nothing here needs cgo: without
// the libraries every call returns an error wrapping ErrNotInstalled. The
// pinned build is linux/amd64 only: elsewhere (arm64 tests under qemu
// user-mode emulation, which cannot load a dynamic linker) the package is
// a stub that never links purego and reports ErrNotInstalled.
package ggml

import (
	"errors"
	"path/filepath"
	"strings"

	"github.com/damascus-llm/damascus/quant"
)

// ErrNotInstalled reports that the pinned llama.cpp libraries are absent.
var ErrNotInstalled = errors.New("llama.cpp baseline not installed: run make baseline")

// Environment variables.
const (
	// DirEnv overrides the directory holding libllama and the ggml libraries.
	DirEnv = "DAMASCUS_LLAMACPP_DIR"
	// VariantEnv names the ggml CPU variant to load (for example
	// "sapphirerapids" or "icelake") instead of letting ggml pick the
	// best-scoring one.
	VariantEnv = "DAMASCUS_LLAMACPP_CPU"
	// LogEnv, when set to a non-empty value, copies llama.cpp's log to stderr.
	LogEnv = "DAMASCUS_LLAMACPP_LOG"
)

// relLibDir is where `make baseline` installs the libraries, from the repository root.
const relLibDir = "baseline/llama.cpp/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64"

// The libraries' file names.
const (
	LibLlama = "libllama.v0.4.0.so"
	LibGGML  = "libggml.v0.4.0.so"
	LibBase  = "libggml-base.so"
)

// VariantName is the CPU variant a libggml-cpu-NAME.so path names.
func VariantName(path string) string {
	return strings.TrimSuffix(strings.TrimPrefix(filepath.Base(path), "libggml-cpu-"), ".so")
}

// CPUVariantInfo is one ggml CPU backend library of the pinned build.
type CPUVariantInfo struct {
	Name  string // e.g. "sapphirerapids"
	Path  string
	Score int // ggml_backend_score(): 0 if this CPU lacks its instructions; ggml loads the highest
}

// TypeCount is GGML_TYPE_COUNT at commit 5b4ebc5. ggml asserts (aborting
// the process) on larger ids, so they are rejected before any call.
const TypeCount = 43

// TypeTraits is what ggml's type table says about one tensor type.
type TypeTraits struct {
	Name          string
	BlockSize     int  // values per block
	TypeSize      int  // bytes per block
	Quantized     bool // ggml's is_quantized
	CanDequantize bool // ggml has a to_float for it
	CanQuantize   bool // ggml_quantize_chunk works without an importance matrix
	// VecDotType is the type the CPU backend quantizes the other operand to
	// for a dot product with this type (for example Q8_K for Q4_K); ok is
	// false when the loaded CPU backend has no vec_dot for the type.
	VecDotType quant.Type
	HasVecDot  bool
}
