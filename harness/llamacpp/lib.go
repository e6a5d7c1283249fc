// Package llamacpp drives the pinned llama.cpp (npm @node-llama-cpp/linux-x64@3.21.1,
// llama.cpp tag v0.4.0, commit 5b4ebc5) as the project's independent oracle and
// baseline. The prebuilt shared libraries are loaded at run time through purego,
// so nothing here needs cgo and every binary builds and runs without them; calls
// that need them return ErrNotInstalled. The ggml libraries underneath
// (type table, quantizers, vec_dot, the CPU backend) are bound by
// internal/ggml, which this package loads first and re-exports; this package
// adds libllama (models, contexts, vocabularies, quantizing files).
//
// The Go mirrors of llama.cpp's C structs (struct_layout.go) match that commit's
// headers byte for byte; layout_test.go checks their offsets against the values
// gcc reported for those headers and the defaults the loaded library returns.
package llamacpp

import (
	"fmt"
	"path/filepath"
	"sync"

	"github.com/damascus-llm/damascus/quant"

	"github.com/damascus-llm/damascus/internal/dl"
	"github.com/damascus-llm/damascus/internal/ggml"
)

// Pinned identifies the llama.cpp build the package expects.
const (
	PinnedPackage = "@node-llama-cpp/linux-x64@3.21.1"
	PinnedTag     = "v0.4.0"
	PinnedCommit  = "5b4ebc5"
)

// ErrNotInstalled reports that the pinned llama.cpp libraries are absent.
var ErrNotInstalled = ggml.ErrNotInstalled

// DirEnv overrides the directory holding libllama and the ggml libraries.
const DirEnv = ggml.DirEnv

// VariantEnv names the ggml CPU variant to load (for example "sapphirerapids"
// or "icelake") instead of letting ggml pick the best-scoring one.
const VariantEnv = ggml.VariantEnv

// LogEnv, when set to a non-empty value, copies llama.cpp's log to stderr.
const LogEnv = ggml.LogEnv

// LibDir returns the directory holding the pinned libraries: $DAMASCUS_LLAMACPP_DIR,
// or the baseline install under the repository root, found from the working
// directory, the executable's location or this source file, whichever holds it.
func LibDir() (string, error) { return ggml.LibDir() }

// UseCPUVariant asks for a specific ggml CPU variant library (the part of
// libggml-cpu-NAME.so after "libggml-cpu-", e.g. "sapphirerapids"). It must be
// called before anything loads the libraries; "" means ggml's own best choice
// (or $DAMASCUS_LLAMACPP_CPU when set).
func UseCPUVariant(name string) error { return ggml.UseCPUVariant(name) }

// CPUVariant returns the name of the ggml CPU variant library in use
// (e.g. "sapphirerapids"), loading the libraries if needed.
func CPUVariant() (string, error) { return ggml.CPUVariant() }

// CPUVariantInfo is one ggml CPU backend library of the pinned build.
type CPUVariantInfo = ggml.CPUVariantInfo

// CPUVariants lists the ggml CPU variant libraries installed, with the score
// ggml gives each on this CPU, highest first (see ggml.CPUVariants).
func CPUVariants() ([]CPUVariantInfo, error) { return ggml.CPUVariants() }

// TypeTraits is what ggml's type table says about one tensor type.
type TypeTraits = ggml.TypeTraits

// Traits returns ggml's facts about type t (see ggml.Traits).
func Traits(t quant.Type) (TypeTraits, error) { return ggml.Traits(t) }

// Dequantize converts n values of type t stored in src into float32 with
// ggml's own to_float (see ggml.Dequantize).
func Dequantize(t quant.Type, src []byte, n int) ([]float32, error) {
	return ggml.Dequantize(t, src, n)
}

// Quantize converts nrows rows of nPerRow float32 values with ggml's
// reference quantizer for t (see ggml.Quantize).
func Quantize(t quant.Type, src []float32, nrows, nPerRow int) ([]byte, error) {
	return ggml.Quantize(t, src, nrows, nPerRow)
}

// QuantizeRowCPU converts src with the CPU backend's from_float for t (see
// ggml.QuantizeRowCPU).
func QuantizeRowCPU(t quant.Type, src []float32) ([]byte, error) { return ggml.QuantizeRowCPU(t, src) }

// VecDot returns the CPU backend's dot product of n values (see ggml.VecDot).
func VecDot(t quant.Type, n int, x, y []byte) (float32, error) { return ggml.VecDot(t, n, x, y) }

// ValidRowData runs ggml_validate_row_data on data (see ggml.ValidRowData).
func ValidRowData(t quant.Type, data []byte) (bool, error) { return ggml.ValidRowData(t, data) }

// logMark and logSince read the log ggml and libllama write into (see
// ggml.LogMark, ggml.LogSince).
func logMark() int                { return ggml.LogMark() }
func logSince(mark, n int) string { return ggml.LogSince(mark, n) }

// lib holds the loaded libraries and bound functions. It is set up once per
// process by load, after internal/ggml has loaded the ggml libraries.
type lib struct {
	dir         string
	variantPath string // the libggml-cpu-*.so in use

	// libggml-base
	ggmlThreadpoolParamsInit func(p *threadpoolParams, nThreads int32)

	// libggml-cpu-<variant>
	ggmlThreadpoolNew  func(p *threadpoolParams) uintptr
	ggmlThreadpoolFree func(tp uintptr)

	// libllama
	llama llamaFuncs
}

var (
	loadOnce sync.Once
	loaded   *lib
	loadErr  error
)

// Available loads the libraries if needed and reports whether they are usable.
// Its error wraps ErrNotInstalled when the baseline is missing.
func Available() error {
	_, err := get()
	return err
}

func get() (*lib, error) {
	loadOnce.Do(func() { loaded, loadErr = load() })
	return loaded, loadErr
}

func load() (*lib, error) {
	dir, variantPath, err := ggml.Loaded()
	if err != nil {
		return nil, err
	}
	l := &lib{dir: dir, variantPath: variantPath}
	// The ggml libraries are loaded already: these opens return their handles.
	hLlama, err := dl.Open(filepath.Join(dir, ggml.LibLlama))
	if err != nil {
		return nil, fmt.Errorf("load llama.cpp: %w", err)
	}
	hBase, err := dl.Open(filepath.Join(dir, ggml.LibBase))
	if err != nil {
		return nil, fmt.Errorf("load ggml-base: %w", err)
	}
	hCPU, err := dl.Open(variantPath)
	if err != nil {
		return nil, fmt.Errorf("reopen %s: %w", variantPath, err)
	}
	b := dl.Binder{}
	b.Bind(hBase, "ggml_threadpool_params_init", &l.ggmlThreadpoolParamsInit)
	b.Bind(hCPU, "ggml_threadpool_new", &l.ggmlThreadpoolNew)
	b.Bind(hCPU, "ggml_threadpool_free", &l.ggmlThreadpoolFree)
	l.llama.bind(&b, hLlama)
	if b.Err != nil {
		return nil, fmt.Errorf("pinned llama.cpp at %s: %w", dir, b.Err)
	}
	// libllama logs into the same callback as ggml, silenced and captured.
	l.llama.logSet(ggml.LogCallback(), nil)
	l.llama.backendInit()
	return l, nil
}
