package cuda

import (
	"embed"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	cu "github.com/damascus-llm/damascus/internal/cuda"
)

// The kernels' CUDA C sources, compiled at run time by NVRTC.
//
//go:embed kernels/*.cu kernels/*.cuh
var kernelFS embed.FS

// DumpEnv names a folder to write each compiled file's PTX and cubin into
// (for cuobjdump --dump-sass and --dump-resource-usage on the device).
const DumpEnv = "DAMASCUS_CUDA_DUMP"

// SkipEnv names kernels (comma-separated) whose launches are left out, to
// measure each one's share of a step (ablation): what the step computes is
// then wrong, so it is for timing only. An unknown name is an error.
const SkipEnv = "DAMASCUS_CUDA_SKIP"

// sourceFiles are the kernel files, each compiled into its own module, and
// the kernels each defines.
var sourceFiles = []struct {
	name    string
	kernels []string
	uses    []string // files whose device functions it calls, compiled in before it
}{
	{"matvec.cu", []string{"q4k_mv", "q4k_mv_u2", "q4k_mv_u4", "q4k_mm8", "q6k_mv", "q6k_mv_u2", "q6k_mv_u4", "q6k_mm8",
		"q80_mv", "q80_mv_u2", "q80_mv_u4", "q80_mm8", "mv_multi", "mv_xs1", "mv_xs2", "mv_xs4",
		"q4k_mv_e", "q6k_mv_e", "mv_multi_e", "q4k_mv_e2", "q6k_mv_e2", "mv_multi_e2"}, nil},
	{"ops.cu", []string{"rmsnorm_f32", "silu_mul_f32", "softmax_f32", "rope_f32"}, nil},
	{"quantize.cu", []string{"quantize_q8_0", "quantize_q8_k"}, nil},
	{"attention.cu", []string{"attn_split", "attn_combine"}, nil},
	{"mma.cu", []string{"q4k_mma", "q6k_mma", "q4k_mmai", "q6k_mmai"}, nil},
	{"mma_pipe.cu", pipeKernelNames(), nil},
	{"engine.cu", []string{"embed_q4k", "embed_q6k", "embed_q80", "add_rmsnorm", "silu_mul_q",
		"rope_store", "eattn_split", "eattn_combine", "argmax_f32", "dattn_split", "dattn_wv_split", "mv_norm"}, []string{"quantize.cu", "matvec.cu"}},
	{"fattn.cu", []string{"fattn_d64", "fattn_d128"}, nil},
	{"dattn.cu", foldKernelNames(), nil},
	{"mvp.cu", []string{"mv_pro1", "mv_pro2"}, []string{"quantize.cu", "matvec.cu"}},
}

// Source returns file's text as NVRTC compiles it: common.cuh, the files
// it uses, then the file, each after a #line directive so that messages
// name the files' own lines.
func Source(file string, uses ...string) (string, error) {
	var b strings.Builder
	for _, f := range append(append([]string{"common.cuh"}, uses...), file) {
		text, err := kernelFS.ReadFile("kernels/" + f)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "#line 1 %q\n%s\n", f, text)
	}
	return b.String(), nil
}

// CompileOptions are the NVRTC options for arch ("sm_90" for machine code,
// "compute_90" for PTX only). Nothing is approximated: IEEE division and
// square root, no fast math, so the kernels round as the float reference
// paths do up to reassociation and fused multiply-adds. No -lineinfo: with
// it NVRTC 11.8 crashes (SIGSEGV) compiling matvec.cu for sm_90.
//
// DefinesEnv adds macros to every file's compilation, for timing
// experiments on the device (PREFETCH, PDL_LAUNCH_FIRST; common.cuh says
// what each does): comma-separated names.
func CompileOptions(arch string) []string {
	opts := []string{"--gpu-architecture=" + arch, "--std=c++17"}
	for _, d := range strings.Split(os.Getenv(DefinesEnv), ",") {
		if d = strings.TrimSpace(d); d != "" {
			opts = append(opts, "-D"+d)
		}
	}
	return opts
}

// DefinesEnv names the macros CompileOptions adds.
const DefinesEnv = "DAMASCUS_CUDA_DEFINES"

// Compile compiles every kernel file for arch with NVRTC (no GPU needed).
func Compile(arch string) (map[string]cu.Compiled, error) {
	out := map[string]cu.Compiled{}
	for _, f := range sourceFiles {
		src, err := Source(f.name, f.uses...)
		if err != nil {
			return nil, err
		}
		c, err := cu.Compile(src, f.name, CompileOptions(arch)...)
		if err != nil {
			return nil, err
		}
		out[f.name] = c
	}
	return out, nil
}

// gpu is the process's device with the kernels loaded and the scratch
// buffers the host-slice variants copy through. Only the device thread
// touches it after setup.
type gpu struct {
	dev  *cu.Device
	fns  map[string]cu.Function
	info map[string]cu.FuncInfo
	arch string // what the modules were compiled for
	bufs map[string]devBuf
}

type devBuf struct {
	p    cu.Ptr
	size int
}

// device opens the GPU and compiles and loads the kernels on its first
// call, and returns that result ever after.
var device = sync.OnceValues(setup)

// Available reports nil when the cuda variants can run here: a device opens
// and its kernels compile and load.
func Available() error {
	_, err := device()
	return err
}

func setup() (*gpu, error) {
	d, err := cu.Open()
	if err != nil {
		return nil, err
	}
	r := &gpu{dev: d, fns: map[string]cu.Function{}, info: map[string]cu.FuncInfo{}, bufs: map[string]devBuf{}}
	// Machine code for the device's own architecture; where this NVRTC
	// does not know it (a newer GPU), PTX for the driver to compile.
	r.arch = d.Arch()
	comp, err := Compile(r.arch)
	if err != nil {
		virt := fmt.Sprintf("compute_%d%d", d.Major, d.Minor)
		var err2 error
		if comp, err2 = Compile(virt); err2 != nil {
			return nil, fmt.Errorf("cuda kernels: %w", err)
		}
		r.arch = virt
	}
	if dir := os.Getenv(DumpEnv); dir != "" {
		if err := dump(dir, comp); err != nil {
			return nil, err
		}
	}
	err = d.Do(func(t *cu.Thread) error {
		for _, f := range sourceFiles {
			if err := r.loadModule(t, f.name, comp[f.name], f.kernels); err != nil {
				return err
			}
		}
		return skipKernels(t, r.fns, os.Getenv(SkipEnv))
	})
	if err != nil {
		return nil, fmt.Errorf("cuda kernels: %w", err)
	}
	return r, nil
}

// loadModule loads file's compiled module and looks its kernels up into
// r.fns and r.info (setup's files and the lazily loaded ones alike),
// raising a kernel's shared memory limit to what it is launched with
// (dynamicShared) where that is over 48 KiB. A kernel is in r.fns only
// once its resources are known.
func (r *gpu) loadModule(t *cu.Thread, file string, c cu.Compiled, kernels []string) error {
	m, err := t.LoadModule(c.Image())
	if err != nil {
		return fmt.Errorf("load %s (%s): %w", file, r.arch, err)
	}
	for _, k := range kernels {
		fn, err := t.Function(m, k)
		if err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		if r.info[k], err = t.FuncInfo(fn); err != nil {
			return err
		}
		r.fns[k] = fn
		if n := dynamicShared(k); n > 48<<10 {
			if err := t.SetMaxDynamicShared(fn, n); err != nil {
				return fmt.Errorf("%s: %d bytes of shared memory: %w", k, n, err)
			}
		}
	}
	return nil
}

// skipKernels sets t.Skip to the kernels named in list (SkipEnv's value).
func skipKernels(t *cu.Thread, fns map[string]cu.Function, list string) error {
	if list == "" {
		return nil
	}
	t.Skip = map[cu.Function]bool{}
	for _, name := range strings.Split(list, ",") {
		fn, ok := fns[strings.TrimSpace(name)]
		if !ok {
			return fmt.Errorf("%s: no kernel named %q", SkipEnv, name)
		}
		t.Skip[fn] = true
	}
	return nil
}

func dump(dir string, comp map[string]cu.Compiled) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for name, c := range comp {
		base := filepath.Join(dir, strings.TrimSuffix(name, ".cu"))
		if len(c.PTX) > 0 {
			if err := os.WriteFile(base+".ptx", c.PTX, 0o644); err != nil {
				return err
			}
		}
		if len(c.CUBIN) > 0 {
			if err := os.WriteFile(base+".cubin", c.CUBIN, 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}

// KernelInfo returns what the driver reports about each loaded kernel's
// resources (registers, local bytes), and the architecture compiled for.
func KernelInfo() (map[string]cu.FuncInfo, string, error) {
	r, err := device()
	if err != nil {
		return nil, "", err
	}
	return r.info, r.arch, nil
}

// bufPad is the slack past every scratch buffer: the Q8_0 activation
// reader loads whole aligned words and may read 2 bytes past the end.
const bufPad = 64

// buf returns scratch buffer name with room for n bytes, growing it.
func (r *gpu) buf(t *cu.Thread, name string, n int) (cu.Ptr, error) {
	b := r.bufs[name]
	if b.size >= n && b.p != 0 {
		return b.p, nil
	}
	if err := t.Free(b.p); err != nil {
		return 0, err
	}
	delete(r.bufs, name)
	size := max(n, 2*b.size) + bufPad
	p, err := t.Alloc(size)
	if err != nil {
		return 0, fmt.Errorf("scratch %s: %w", name, err)
	}
	r.bufs[name] = devBuf{p, size - bufPad}
	return p, nil
}

// upload copies src into scratch buffer name on s.
func upload[T any](r *gpu, t *cu.Thread, s cu.Stream, name string, src []T) (cu.Ptr, error) {
	var z T
	n := len(src) * sizeOf(z)
	p, err := r.buf(t, name, n)
	if err != nil {
		return 0, err
	}
	return p, cu.HtoDAsync(t, p, src, s)
}

// poisoned returns scratch buffer name with room for n floats, each set to
// poison on s: a host-slice variant's output, which so comes back NaN
// wherever the kernel leaves it unwritten.
func (r *gpu) poisoned(t *cu.Thread, s cu.Stream, name string, n int) (cu.Ptr, error) {
	p, err := r.buf(t, name, 4*n)
	if err != nil {
		return 0, err
	}
	return p, t.MemsetD32Async(p, poison, n, s)
}

// uploadXWAux copies a launch's three float inputs (an attention's q, k
// and v; rope's x and its tables) into the x, w and aux scratch buffers on
// s, in that order.
func uploadXWAux(r *gpu, t *cu.Thread, s cu.Stream, a, b, c []float32) (pa, pb, pc cu.Ptr, err error) {
	if pa, err = upload(r, t, s, "x", a); err != nil {
		return 0, 0, 0, err
	}
	if pb, err = upload(r, t, s, "w", b); err != nil {
		return 0, 0, 0, err
	}
	if pc, err = upload(r, t, s, "aux", c); err != nil {
		return 0, 0, 0, err
	}
	return pa, pb, pc, nil
}

// host runs f on the device thread with the runtime's stream and waits for
// the stream. The ledger's kernel signatures return nothing, so a failure
// panics with the driver's error (the gate reports a panic as the
// variant's failure); the variants need the "cuda" feature, so nothing
// calls them where no device opened.
func host(f func(r *gpu, t *cu.Thread, s cu.Stream) error) {
	r, err := device()
	if err != nil {
		panic(fmt.Sprintf("cuda variant called without a usable device: %v", err))
	}
	err = r.dev.Do(func(t *cu.Thread) error {
		s, err := t.Stream()
		if err != nil {
			return err
		}
		if err := f(r, t, s); err != nil {
			return err
		}
		return t.Sync(s)
	})
	if err != nil {
		panic(fmt.Sprintf("cuda variant: %v", err))
	}
}
