// Package llamacpp drives the pinned llama.cpp (npm @node-llama-cpp/linux-x64@3.21.1,
// llama.cpp tag v0.4.0, commit 5b4ebc5) as the project's independent oracle and
// baseline. The prebuilt shared libraries are loaded at run time through purego,
// so nothing here needs cgo and every binary builds and runs without them; calls
// that need them return ErrNotInstalled.
//
// The Go mirrors of llama.cpp's C structs (struct_layout.go) match that commit's
// headers byte for byte; layout_test.go checks their offsets against the values
// gcc reported for those headers and the defaults the loaded library returns.
package llamacpp

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
)

// Pinned identifies the llama.cpp build the package expects.
const (
	PinnedPackage = "@node-llama-cpp/linux-x64@3.21.1"
	PinnedTag     = "v0.4.0"
	PinnedCommit  = "5b4ebc5"
)

// ErrNotInstalled reports that the pinned llama.cpp libraries are absent.
var ErrNotInstalled = errors.New("llama.cpp baseline not installed: run make baseline")

// DirEnv overrides the directory holding libllama and the ggml libraries.
const DirEnv = "DAMASCUS_LLAMACPP_DIR"

// VariantEnv names the ggml CPU variant to load (for example "sapphirerapids"
// or "icelake") instead of letting ggml pick the best-scoring one.
const VariantEnv = "DAMASCUS_LLAMACPP_CPU"

// LogEnv, when set to a non-empty value, copies llama.cpp's log to stderr.
const LogEnv = "DAMASCUS_LLAMACPP_LOG"

// relLibDir is where `make baseline` installs the libraries, from the repository root.
const relLibDir = "baseline/llama.cpp/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64"

const (
	libLlama = "libllama.v0.4.0.so"
	libGGML  = "libggml.v0.4.0.so"
	libBase  = "libggml-base.so"
)

// LibDir returns the directory holding the pinned libraries: $DAMASCUS_LLAMACPP_DIR,
// or the baseline install under the repository root, found from the working
// directory, the executable's location or this source file, whichever holds it.
func LibDir() (string, error) {
	if d := os.Getenv(DirEnv); d != "" {
		if !fileExists(filepath.Join(d, libLlama)) {
			return "", fmt.Errorf("%s=%s has no %s: %w", DirEnv, d, libLlama, ErrNotInstalled)
		}
		return d, nil
	}
	var starts []string
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	if exe, err := os.Executable(); err == nil {
		starts = append(starts, filepath.Dir(exe))
	}
	if _, file, _, ok := runtime.Caller(0); ok {
		starts = append(starts, filepath.Dir(file))
	}
	for _, s := range starts {
		for dir := s; ; dir = filepath.Dir(dir) {
			if cand := filepath.Join(dir, relLibDir); fileExists(filepath.Join(cand, libLlama)) {
				return cand, nil
			}
			if filepath.Dir(dir) == dir {
				break
			}
		}
	}
	return "", ErrNotInstalled
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

// lib holds the loaded libraries and bound functions. It is set up once per
// process by load.
type lib struct {
	dir         string
	variantPath string // the libggml-cpu-*.so in use

	// libggml-base
	ggmlBlckSize       func(t uint32) int64
	ggmlTypeSize       func(t uint32) uintptr
	ggmlTypeName       func(t uint32) string
	ggmlGetTypeTraits  func(t uint32) *typeTraits
	ggmlQuantizeChunk  func(t uint32, src *float32, dst unsafe.Pointer, start, nrows, nPerRow int64, imatrix *float32) uintptr
	ggmlQuantizeNeedIM func(t uint32) bool
	ggmlValidateRow    func(t uint32, data unsafe.Pointer, nbytes uintptr) bool

	ggmlThreadpoolParamsInit func(p *threadpoolParams, nThreads int32)

	// libggml-cpu-<variant>
	ggmlGetTypeTraitsCPU func(t uint32) *typeTraitsCPU
	ggmlThreadpoolNew    func(p *threadpoolParams) uintptr
	ggmlThreadpoolFree   func(tp uintptr)

	// libllama
	llama llamaFuncs
}

var (
	loadOnce sync.Once
	loaded   *lib
	loadErr  error

	// requestedVariant is set by UseCPUVariant before the first load.
	variantMu        sync.Mutex
	requestedVariant string
	variantFrozen    bool
)

// UseCPUVariant asks for a specific ggml CPU variant library (the part of
// libggml-cpu-NAME.so after "libggml-cpu-", e.g. "sapphirerapids"). It must be
// called before anything loads the libraries; "" means ggml's own best choice
// (or $DAMASCUS_LLAMACPP_CPU when set).
func UseCPUVariant(name string) error {
	variantMu.Lock()
	defer variantMu.Unlock()
	if variantFrozen && name != requestedVariant {
		return fmt.Errorf("llama.cpp CPU variant %q requested after the libraries were loaded (with %q)", name, requestedVariant)
	}
	requestedVariant = name
	return nil
}

// Available loads the libraries if needed and reports whether they are usable.
// Its error wraps ErrNotInstalled when the baseline is missing.
func Available() error {
	_, err := get()
	return err
}

func get() (*lib, error) {
	loadOnce.Do(func() {
		variantMu.Lock()
		variantFrozen = true
		v := requestedVariant
		if v == "" {
			v = os.Getenv(VariantEnv)
			requestedVariant = v
		}
		variantMu.Unlock()
		loaded, loadErr = load(v)
	})
	return loaded, loadErr
}

func load(variant string) (*lib, error) {
	dir, err := LibDir()
	if err != nil {
		return nil, err
	}
	l := &lib{dir: dir}
	hLlama, err := purego.Dlopen(filepath.Join(dir, libLlama), purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		return nil, fmt.Errorf("load llama.cpp: %w", err)
	}
	hGGML, err := purego.Dlopen(filepath.Join(dir, libGGML), purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		return nil, fmt.Errorf("load ggml: %w", err)
	}
	hBase, err := purego.Dlopen(filepath.Join(dir, libBase), purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		return nil, fmt.Errorf("load ggml-base: %w", err)
	}

	b := binder{}
	b.bind(hBase, "ggml_blck_size", &l.ggmlBlckSize)
	b.bind(hBase, "ggml_type_size", &l.ggmlTypeSize)
	b.bind(hBase, "ggml_type_name", &l.ggmlTypeName)
	b.bind(hBase, "ggml_get_type_traits", &l.ggmlGetTypeTraits)
	b.bind(hBase, "ggml_quantize_chunk", &l.ggmlQuantizeChunk)
	b.bind(hBase, "ggml_quantize_requires_imatrix", &l.ggmlQuantizeNeedIM)
	b.bind(hBase, "ggml_validate_row_data", &l.ggmlValidateRow)
	b.bind(hBase, "ggml_threadpool_params_init", &l.ggmlThreadpoolParamsInit)
	var (
		backendLoad        func(path string) uintptr
		backendLoadAllFrom func(dir string)
	)
	b.bind(hGGML, "ggml_backend_load", &backendLoad)
	b.bind(hGGML, "ggml_backend_load_all_from_path", &backendLoadAllFrom)
	l.llama.bind(&b, hLlama)
	if b.err != nil {
		return nil, fmt.Errorf("pinned llama.cpp at %s: %w", dir, b.err)
	}

	// Silence (and capture) the log before anything prints.
	l.llama.logSet(logCallback(), nil)
	l.llama.backendInit()

	mark := logMark()
	if variant != "" {
		p := filepath.Join(dir, "libggml-cpu-"+variant+".so")
		if !fileExists(p) {
			return nil, fmt.Errorf("llama.cpp CPU variant %q: no %s", variant, p)
		}
		// ggml_backend_load does not check the CPU: a variant built for
		// instructions this CPU lacks would die of SIGILL later.
		if score, err := variantScore(p); err != nil {
			return nil, err
		} else if score <= 0 {
			return nil, fmt.Errorf("llama.cpp CPU variant %q cannot run on this CPU (ggml scores it 0)", variant)
		}
		if backendLoad(p) == 0 {
			return nil, fmt.Errorf("llama.cpp CPU variant %q failed to load (CPU lacks its instructions?): %s", variant, logSince(mark, 2))
		}
	} else {
		backendLoadAllFrom(dir)
	}
	l.variantPath = loadedCPUVariant()
	if l.variantPath == "" {
		return nil, fmt.Errorf("llama.cpp loaded no ggml CPU backend from %s: %s", dir, logSince(mark, 2))
	}
	hCPU, err := purego.Dlopen(l.variantPath, purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		return nil, fmt.Errorf("reopen %s: %w", l.variantPath, err)
	}
	var cpuInit func()
	b.bind(hCPU, "ggml_get_type_traits_cpu", &l.ggmlGetTypeTraitsCPU)
	b.bind(hCPU, "ggml_cpu_init", &cpuInit)
	b.bind(hCPU, "ggml_threadpool_new", &l.ggmlThreadpoolNew)
	b.bind(hCPU, "ggml_threadpool_free", &l.ggmlThreadpoolFree)
	if b.err != nil {
		return nil, fmt.Errorf("pinned llama.cpp CPU backend %s: %w", l.variantPath, b.err)
	}
	cpuInit()
	return l, nil
}

// loadedCPUVariant returns the path of the libggml-cpu-*.so mapped into this
// process: ggml picks it by score and does not report which it chose.
func loadedCPUVariant() string {
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 {
			continue
		}
		p := fields[len(fields)-1]
		if strings.HasPrefix(filepath.Base(p), "libggml-cpu-") && strings.HasSuffix(p, ".so") {
			return p
		}
	}
	return ""
}

// CPUVariant returns the name of the ggml CPU variant library in use
// (e.g. "sapphirerapids"), loading the libraries if needed.
func CPUVariant() (string, error) {
	l, err := get()
	if err != nil {
		return "", err
	}
	return variantName(l.variantPath), nil
}

func variantName(path string) string {
	return strings.TrimSuffix(strings.TrimPrefix(filepath.Base(path), "libggml-cpu-"), ".so")
}

// binder resolves symbols into Go function variables, keeping the first error.
type binder struct{ err error }

func (b *binder) bind(handle uintptr, name string, fptr any) {
	if b.err != nil {
		return
	}
	sym, err := purego.Dlsym(handle, name)
	if err != nil {
		b.err = fmt.Errorf("missing symbol %s: %w", name, err)
		return
	}
	purego.RegisterFunc(fptr, sym)
}

// The log callback keeps the most recent lines (for error messages) and
// forwards them to stderr only when $DAMASCUS_LLAMACPP_LOG is set.
var (
	logMu       sync.Mutex
	logTail     []string // the last logTailLines lines
	logLines    int      // lines logged so far; logTail ends with line logLines-1
	logToStderr = os.Getenv(LogEnv) != ""
	logCBOnce   sync.Once
	logCBPtr    uintptr
)

const logTailLines = 64

func logCallback() uintptr {
	logCBOnce.Do(func() {
		logCBPtr = purego.NewCallback(func(level int32, text *byte, _ unsafe.Pointer) {
			s := goString(text)
			logMu.Lock()
			defer logMu.Unlock()
			if logToStderr {
				fmt.Fprint(os.Stderr, s)
			}
			// llama.cpp sends a line in pieces; join continuations.
			if n := len(logTail); n > 0 && !strings.HasSuffix(logTail[n-1], "\n") {
				logTail[n-1] += s
				return
			}
			logTail = append(logTail, s)
			logLines++
			if len(logTail) > logTailLines {
				logTail = append(logTail[:0], logTail[len(logTail)-logTailLines:]...)
			}
		})
	})
	return logCBPtr
}

// logMark returns a position in the log for logSince.
func logMark() int {
	logMu.Lock()
	defer logMu.Unlock()
	return logLines
}

// logSince returns the last n lines llama.cpp logged after mark, on one line,
// to explain a failed call.
func logSince(mark, n int) string {
	logMu.Lock()
	defer logMu.Unlock()
	first := logLines - len(logTail) // line number of logTail[0]
	var lines []string
	for i, s := range logTail {
		if first+i >= mark {
			if s = strings.TrimSpace(s); s != "" {
				lines = append(lines, s)
			}
		}
	}
	if len(lines) == 0 {
		return "(llama.cpp logged nothing)"
	}
	return strings.Join(lines[max(0, len(lines)-n):], "; ")
}

// goString copies a NUL-terminated C string.
func goString(p *byte) string {
	if p == nil {
		return ""
	}
	var n int
	for *(*byte)(unsafe.Add(unsafe.Pointer(p), n)) != 0 {
		n++
	}
	return string(unsafe.Slice(p, n))
}
