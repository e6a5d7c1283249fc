package cuda

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
)

// NVRTCEnv is the path of the libnvrtc to load instead of searching for one.
const NVRTCEnv = "DAMASCUS_NVRTC"

// ErrNoNVRTC is wrapped by the error of a machine without a loadable NVRTC.
var ErrNoNVRTC = errors.New("no NVRTC")

// nvrtcSearch are the places libnvrtc is looked for, in order, after
// $DAMASCUS_NVRTC: the toolkit's usual folders, Python's wheel of it, then
// the loader's own search path by soname.
var nvrtcSearch = []string{
	"/usr/local/cuda/lib64/libnvrtc.so*",
	"/usr/local/cuda/targets/x86_64-linux/lib/libnvrtc.so*",
	"/usr/local/cuda-*/lib64/libnvrtc.so*",
	"/usr/lib/x86_64-linux-gnu/libnvrtc.so*",
	"/opt/*/.venv/lib/python3*/site-packages/nvidia/cu*/lib/libnvrtc.so*",
	"/opt/*/.venv/lib/python3*/site-packages/nvidia/cuda_nvrtc/lib/libnvrtc.so*",
	"/usr/local/lib/python3*/dist-packages/nvidia/cuda_nvrtc/lib/libnvrtc.so*",
}

var nvrtcSonames = []string{"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2"}

// nvrtcAPI holds libnvrtc's entry points, each bound by its field's name
// (bindFuncs).
type nvrtcAPI struct {
	path                   string
	major, minor           int
	nvrtcVersion           func(major, minor *int32) int32
	nvrtcCreateProgram     func(p *uintptr, src, name string, nHeaders int32, headers, names unsafe.Pointer) int32
	nvrtcDestroyProgram    func(p *uintptr) int32
	nvrtcCompileProgram    func(p uintptr, nOpts int32, opts unsafe.Pointer) int32
	nvrtcGetPTXSize        func(p uintptr, n *uintptr) int32
	nvrtcGetPTX            func(p uintptr, out *byte) int32
	nvrtcGetCUBINSize      func(p uintptr, n *uintptr) int32
	nvrtcGetCUBIN          func(p uintptr, out *byte) int32
	nvrtcGetProgramLogSize func(p uintptr, n *uintptr) int32
	nvrtcGetProgramLog     func(p uintptr, out *byte) int32
	nvrtcGetErrorString    func(r int32) *byte
}

var (
	nvrtcOnce sync.Once
	nvrtcLib  *nvrtcAPI
	nvrtcErr  error
	nvrtcMu   sync.Mutex // NVRTC programs are compiled one at a time
)

// NVRTC reports where the loaded libnvrtc is and its version, loading it on
// first use; the error wraps ErrNoNVRTC when there is none.
func NVRTC() (path string, major, minor int, err error) {
	l, err := loadNVRTC()
	if err != nil {
		return "", 0, 0, err
	}
	return l.path, l.major, l.minor, nil
}

func nvrtcCandidates() []string {
	var c []string
	if p := os.Getenv(NVRTCEnv); p != "" {
		return []string{p}
	}
	for _, g := range nvrtcSearch {
		m, _ := filepath.Glob(g)
		// Newest first: libnvrtc.so.13.0.88 sorts after libnvrtc.so.13.
		sort.Sort(sort.Reverse(sort.StringSlice(m)))
		c = append(c, m...)
	}
	return append(c, nvrtcSonames...)
}

func loadNVRTC() (*nvrtcAPI, error) {
	nvrtcOnce.Do(func() {
		var tried []string
		for _, p := range nvrtcCandidates() {
			if strings.Contains(p, "/") {
				// The builtins library sits beside libnvrtc; loading it
				// first lets NVRTC's own dlopen of it succeed without
				// LD_LIBRARY_PATH.
				if b, _ := filepath.Glob(filepath.Join(filepath.Dir(p), "libnvrtc-builtins.so*")); len(b) > 0 {
					sort.Strings(b)
					purego.Dlopen(b[len(b)-1], purego.RTLD_NOW|purego.RTLD_GLOBAL) //nolint:errcheck // best effort
				}
			}
			h, err := purego.Dlopen(p, purego.RTLD_NOW|purego.RTLD_GLOBAL)
			if err != nil {
				tried = append(tried, p)
				continue
			}
			nvrtcLib, nvrtcErr = bindNVRTC(h, p)
			return
		}
		nvrtcErr = fmt.Errorf("%w: libnvrtc not found (set %s; tried %s)", ErrNoNVRTC, NVRTCEnv, strings.Join(tried, ", "))
	})
	return nvrtcLib, nvrtcErr
}

func bindNVRTC(h uintptr, path string) (*nvrtcAPI, error) {
	a := &nvrtcAPI{path: path}
	if sym, err := bindFuncs(h, a); err != nil {
		return nil, fmt.Errorf("%w: %s has no %s (NVRTC older than 11.1?): %v", ErrNoNVRTC, path, sym, err)
	}
	var maj, min int32
	if r := a.nvrtcVersion(&maj, &min); r != 0 {
		return nil, fmt.Errorf("%w: %s: nvrtcVersion: %s", ErrNoNVRTC, path, a.errText(r))
	}
	a.major, a.minor = int(maj), int(min)
	return a, nil
}

func (a *nvrtcAPI) errText(r int32) string {
	return fmt.Sprintf("%s (%d)", goString(a.nvrtcGetErrorString(r)), r)
}

// Compiled is NVRTC's output for one program.
type Compiled struct {
	CUBIN []byte // machine code, when compiled for a real architecture (sm_XY)
	PTX   []byte // the PTX, when NVRTC provides it
	Log   string // the compiler's messages (warnings too)
}

// Image is what to load: the cubin when there is one, else the PTX (which
// the driver then compiles).
func (c Compiled) Image() []byte {
	if len(c.CUBIN) > 0 {
		return c.CUBIN
	}
	return c.PTX
}

// Compile compiles one CUDA C++ source with NVRTC. It needs no GPU. name
// appears in messages; opts are NVRTC options, e.g. "--gpu-architecture=sm_90".
// A failed compilation's error holds the program log.
func Compile(src, name string, opts ...string) (Compiled, error) {
	var out Compiled
	a, err := loadNVRTC()
	if err != nil {
		return out, err
	}
	nvrtcMu.Lock()
	defer nvrtcMu.Unlock()
	var prog uintptr
	if r := a.nvrtcCreateProgram(&prog, src, name, 0, nil, nil); r != 0 {
		return out, fmt.Errorf("nvrtcCreateProgram %s: %s", name, a.errText(r))
	}
	defer a.nvrtcDestroyProgram(&prog)
	cOpts := make([][]byte, len(opts))
	ptrs := make([]*byte, len(opts)+1)
	for i, o := range opts {
		cOpts[i] = append([]byte(o), 0)
		ptrs[i] = &cOpts[i][0]
	}
	r := a.nvrtcCompileProgram(prog, int32(len(opts)), unsafe.Pointer(&ptrs[0]))
	out.Log = strings.TrimRight(string(getBytes(prog, a.nvrtcGetProgramLogSize, a.nvrtcGetProgramLog)), "\x00\n ")
	if r != 0 {
		return out, fmt.Errorf("nvrtcCompileProgram %s (%s): %s\n%s", name, strings.Join(opts, " "), a.errText(r), out.Log)
	}
	out.CUBIN = getBytes(prog, a.nvrtcGetCUBINSize, a.nvrtcGetCUBIN)
	out.PTX = getBytes(prog, a.nvrtcGetPTXSize, a.nvrtcGetPTX)
	if n := len(out.PTX); n > 0 && out.PTX[n-1] == 0 {
		out.PTX = out.PTX[:n-1]
	}
	if len(out.CUBIN) == 0 && len(out.PTX) == 0 {
		return out, fmt.Errorf("nvrtc %s: compiled, but neither a cubin nor PTX came out", name)
	}
	return out, nil
}

// getBytes reads one of a program's outputs; nil when NVRTC has none.
func getBytes(prog uintptr, size func(uintptr, *uintptr) int32, get func(uintptr, *byte) int32) []byte {
	var n uintptr
	if size(prog, &n) != 0 || n == 0 {
		return nil
	}
	b := make([]byte, n)
	if get(prog, &b[0]) != 0 {
		return nil
	}
	return b
}
