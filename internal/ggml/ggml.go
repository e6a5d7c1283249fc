//go:build linux && amd64

package ggml

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"

	"github.com/damascus-llm/damascus/internal/dl"
	"github.com/damascus-llm/damascus/internal/textfile"
)

// LibDir returns the directory holding the pinned libraries: $DAMASCUS_LLAMACPP_DIR,
// or the baseline install under the repository root, found from the working
// directory, the executable's location or this source file, whichever holds it.
func LibDir() (string, error) {
	if d := os.Getenv(DirEnv); d != "" {
		if !dl.FileExists(filepath.Join(d, LibLlama)) {
			return "", fmt.Errorf("%s=%s has no %s: %w", DirEnv, d, LibLlama, ErrNotInstalled)
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
	if d := dl.FindUp(starts, relLibDir, LibLlama); d != "" {
		return d, nil
	}
	return "", ErrNotInstalled
}

// lib holds the loaded libraries and bound functions, set up once per
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

	// libggml-cpu-<variant>
	ggmlGetTypeTraitsCPU func(t uint32) *typeTraitsCPU
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

// Loaded loads the libraries if needed and returns the directory they were
// loaded from and the path of the CPU variant library in use.
func Loaded() (dir, cpuVariantPath string, err error) {
	l, err := get()
	if err != nil {
		return "", "", err
	}
	return l.dir, l.variantPath, nil
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
	hBase, err := dl.Open(filepath.Join(dir, LibBase))
	if err != nil {
		return nil, fmt.Errorf("load ggml-base: %w", err)
	}
	hGGML, err := dl.Open(filepath.Join(dir, LibGGML))
	if err != nil {
		return nil, fmt.Errorf("load ggml: %w", err)
	}

	b := dl.Binder{}
	var logSet func(cb uintptr, user unsafe.Pointer)
	b.Bind(hBase, "ggml_log_set", &logSet)
	b.Bind(hBase, "ggml_blck_size", &l.ggmlBlckSize)
	b.Bind(hBase, "ggml_type_size", &l.ggmlTypeSize)
	b.Bind(hBase, "ggml_type_name", &l.ggmlTypeName)
	b.Bind(hBase, "ggml_get_type_traits", &l.ggmlGetTypeTraits)
	b.Bind(hBase, "ggml_quantize_chunk", &l.ggmlQuantizeChunk)
	b.Bind(hBase, "ggml_quantize_requires_imatrix", &l.ggmlQuantizeNeedIM)
	b.Bind(hBase, "ggml_validate_row_data", &l.ggmlValidateRow)
	var (
		backendLoad        func(path string) uintptr
		backendLoadAllFrom func(dir string)
	)
	b.Bind(hGGML, "ggml_backend_load", &backendLoad)
	b.Bind(hGGML, "ggml_backend_load_all_from_path", &backendLoadAllFrom)
	if b.Err != nil {
		return nil, fmt.Errorf("pinned ggml at %s: %w", dir, b.Err)
	}

	// Silence (and capture) the log before anything prints.
	logSet(LogCallback(), nil)

	mark := LogMark()
	if variant != "" {
		p := filepath.Join(dir, "libggml-cpu-"+variant+".so")
		if !dl.FileExists(p) {
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
			return nil, fmt.Errorf("llama.cpp CPU variant %q failed to load (CPU lacks its instructions?): %s", variant, LogSince(mark, 2))
		}
	} else {
		backendLoadAllFrom(dir)
	}
	l.variantPath = loadedCPUVariant()
	if l.variantPath == "" {
		return nil, fmt.Errorf("llama.cpp loaded no ggml CPU backend from %s: %s", dir, LogSince(mark, 2))
	}
	hCPU, err := dl.Open(l.variantPath)
	if err != nil {
		return nil, fmt.Errorf("reopen %s: %w", l.variantPath, err)
	}
	var cpuInit func()
	b.Bind(hCPU, "ggml_get_type_traits_cpu", &l.ggmlGetTypeTraitsCPU)
	b.Bind(hCPU, "ggml_cpu_init", &cpuInit)
	if b.Err != nil {
		return nil, fmt.Errorf("pinned llama.cpp CPU backend %s: %w", l.variantPath, b.Err)
	}
	cpuInit()
	return l, nil
}

// loadedCPUVariant returns the path of the libggml-cpu-*.so mapped into this
// process: ggml picks it by score and does not report which it chose.
func loadedCPUVariant() string {
	return textfile.Find("/proc/self/maps", func(line string) (string, bool) {
		fields := strings.Fields(line)
		if len(fields) < 6 {
			return "", false
		}
		p := fields[len(fields)-1]
		return p, strings.HasPrefix(filepath.Base(p), "libggml-cpu-") && strings.HasSuffix(p, ".so")
	})
}

// CPUVariant returns the name of the ggml CPU variant library in use
// (e.g. "sapphirerapids"), loading the libraries if needed.
func CPUVariant() (string, error) {
	l, err := get()
	if err != nil {
		return "", err
	}
	return VariantName(l.variantPath), nil
}

// CPUVariants lists the ggml CPU variant libraries installed, with the score
// ggml gives each on this CPU, highest first. Scoring loads each library
// briefly, as ggml_backend_load_all does; a bench runs a variant only when
// its score is positive.
func CPUVariants() ([]CPUVariantInfo, error) {
	dir, err := LibDir()
	if err != nil {
		return nil, err
	}
	paths, err := filepath.Glob(filepath.Join(dir, "libggml-cpu-*.so"))
	if err != nil {
		return nil, err
	}
	var out []CPUVariantInfo
	for _, p := range paths {
		score, err := variantScore(p)
		if err != nil {
			return nil, err
		}
		out = append(out, CPUVariantInfo{Name: VariantName(p), Path: p, Score: score})
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Score != out[j].Score {
			return out[i].Score > out[j].Score
		}
		return out[i].Name < out[j].Name
	})
	return out, nil
}

func variantScore(path string) (int, error) {
	h, err := purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		return 0, fmt.Errorf("load %s: %w", path, err)
	}
	defer purego.Dlclose(h)
	sym, err := purego.Dlsym(h, "ggml_backend_score")
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	var score func() int32
	purego.RegisterFunc(&score, sym)
	return int(score()), nil
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

// LogCallback is the ggml_log_callback that ggml (and libllama, through
// llama_log_set) log into: lines kept for LogSince, and copied to stderr
// under $DAMASCUS_LLAMACPP_LOG.
func LogCallback() uintptr {
	logCBOnce.Do(func() {
		logCBPtr = purego.NewCallback(func(level int32, text *byte, _ unsafe.Pointer) {
			s := dl.GoString(text)
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

// LogMark returns a position in the log for LogSince.
func LogMark() int {
	logMu.Lock()
	defer logMu.Unlock()
	return logLines
}

// LogSince returns the last n lines llama.cpp logged after mark, on one line,
// to explain a failed call.
func LogSince(mark, n int) string {
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
