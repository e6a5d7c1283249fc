package cuda

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/ebitengine/purego"
)

// needDevice skips t on a machine without a usable GPU, saying why.
func needDevice(t testing.TB) *Device {
	t.Helper()
	d, err := Open()
	if err != nil {
		t.Skip(err)
	}
	return d
}

func TestMissingDriverIsOneClearError(t *testing.T) {
	t.Setenv(LibEnv, "/nonexistent/libcuda.so.1")
	d, err := open()
	if err == nil || d != nil {
		t.Fatalf("open with no driver library: device %v, error %v", d, err)
	}
	if !errors.Is(err, ErrNoDevice) {
		t.Errorf("error %q does not wrap ErrNoDevice", err)
	}
	if !strings.Contains(err.Error(), "/nonexistent/libcuda.so.1 not found") {
		t.Errorf("error %q does not name the missing library", err)
	}
}

func TestBadOrdinal(t *testing.T) {
	t.Setenv(DeviceEnv, "x")
	if _, err := open(); err == nil || !errors.Is(err, ErrNoDevice) || !strings.Contains(err.Error(), DeviceEnv) {
		t.Fatalf("bad %s: error %v", DeviceEnv, err)
	}
}

// TestFailedStartReleasesPin opens a device that is not there (ordinal 99)
// a few times: where the driver library loads, the thread fails after it
// pinned its argument arena (at cuInit without a GPU, at the ordinal with
// one), and a failed start must unpin it, or the runtime's finalizer for
// the dropped Pinner panics at the next collection and kills the process.
// Without a driver library the failure comes before the pin.
func TestFailedStartReleasesPin(t *testing.T) {
	t.Setenv(DeviceEnv, "99")
	for range 3 {
		if d, err := open(); err == nil || d != nil {
			t.Fatalf("open of device 99: device %v, error %v", d, err)
		}
	}
	for range 3 {
		runtime.GC()
		time.Sleep(20 * time.Millisecond) // the finalizers run meanwhile
	}
}

func TestOpenHere(t *testing.T) {
	d, err := Open()
	if err != nil {
		if !errors.Is(err, ErrNoDevice) {
			t.Fatalf("Open failed with an error that is not ErrNoDevice: %v", err)
		}
		t.Skip(err)
	}
	t.Logf("device: %s", d.Info)
	if d.Major < 1 || d.SMs < 1 || d.Memory == 0 || d.Name == "" {
		t.Fatalf("implausible device info %+v", d.Info)
	}
	if _, err2 := Open(); err2 != nil {
		t.Fatalf("second Open: %v", err2)
	}
}

func TestDriverErrorNamesCallAndCode(t *testing.T) {
	d := needDevice(t)
	err := d.Do(func(th *Thread) error {
		_, err := th.Alloc(1 << 62) // more than any device has
		return err
	})
	var ce *Error
	if !errors.As(err, &ce) || ce.Call != "cuMemAlloc_v2" || ce.Code == 0 || !strings.HasPrefix(ce.Name, "CUDA_ERROR_") {
		t.Fatalf("huge allocation: error %v, want a *cuda.Error naming cuMemAlloc_v2 and a CUDA_ERROR_ name", err)
	}
}

const testKernel = `
extern "C" __global__ void axpb(float* y, const float* x, float a, float b, int n) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) y[i] = a * x[i] + b;
}`

func needNVRTC(t testing.TB) {
	t.Helper()
	if _, _, _, err := NVRTC(); err != nil {
		t.Skipf("no NVRTC: %v", err)
	}
}

func TestNVRTCCompiles(t *testing.T) {
	needNVRTC(t)
	path, maj, min, _ := NVRTC()
	t.Logf("NVRTC %d.%d at %s", maj, min, path)
	c, err := Compile(testKernel, "axpb.cu", "--gpu-architecture=compute_80")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(c.PTX), ".entry axpb") {
		t.Fatalf("PTX lacks the kernel:\n%s", c.PTX)
	}
	if _, err := Compile("this is not C++", "bad.cu", "--gpu-architecture=compute_80"); err == nil || !strings.Contains(err.Error(), "bad.cu") {
		t.Fatalf("a broken source compiled, or its error does not name it: %v", err)
	}
}

// bindFuncs takes a field's name as its symbol, tries a sym tag's names in
// order, leaves an optional one nil and names a required one missing
// (against libnvrtc, the one library every test machine has).
func TestBindFuncs(t *testing.T) {
	needNVRTC(t)
	path, _, _, _ := NVRTC()
	h, err := purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		t.Fatal(err)
	}
	var lib struct {
		name             string // not a func: left alone
		nvrtcVersion     func(major, minor *int32) int32
		version          func(major, minor *int32) int32 `sym:"nvrtcVersion_v9,nvrtcVersion"`
		nvrtcNoSuchEntry func() int32                    `bind:"optional"`
	}
	if missing, err := bindFuncs(h, &lib); err != nil {
		t.Fatalf("%s: %v", missing, err)
	}
	var a, b, c, d int32
	if lib.nvrtcVersion(&a, &b) != 0 || lib.version(&c, &d) != 0 || a != c || b != d || a < 11 {
		t.Fatalf("nvrtcVersion bound by name %d.%d, by tag %d.%d", a, b, c, d)
	}
	if lib.nvrtcNoSuchEntry != nil {
		t.Fatal("an optional symbol the library lacks was bound")
	}
	var req struct {
		nvrtcNoSuchEntry func() int32 `sym:"nvrtcNoSuchEntry_v2,nvrtcNoSuchEntry"`
	}
	if missing, err := bindFuncs(h, &req); err == nil || missing != "nvrtcNoSuchEntry_v2" {
		t.Fatalf("a required symbol the library lacks: missing %q, err %v", missing, err)
	}
}

func TestLaunchCopyGraph(t *testing.T) {
	d := needDevice(t)
	needNVRTC(t)
	c, err := Compile(testKernel, "axpb.cu", "--gpu-architecture="+d.Arch())
	if err != nil {
		t.Fatal(err)
	}
	const n = 1000
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(i) - 300.5
	}
	got := make([]float32, n)
	err = d.Do(func(th *Thread) error {
		m, err := th.LoadModule(c.Image())
		if err != nil {
			return err
		}
		defer th.UnloadModule(m)
		f, err := th.Function(m, "axpb")
		if err != nil {
			return err
		}
		fi, err := th.FuncInfo(f)
		if err != nil {
			return err
		}
		t.Logf("axpb: %+v", fi)
		s, err := th.Stream()
		if err != nil {
			return err
		}
		px, err := th.Alloc(4 * n)
		if err != nil {
			return err
		}
		defer th.Free(px)
		py, err := th.Alloc(4 * n)
		if err != nil {
			return err
		}
		defer th.Free(py)
		if err := HtoD(th, px, x); err != nil {
			return err
		}
		if err := th.MemsetD32Async(py, math.Float32bits(float32(math.NaN())), n, s); err != nil {
			return err
		}
		launch := func(a, b float32) error {
			return th.Launch(f, D1((n+127)/128), D1(128), 0, s, py.Arg(), px.Arg(), F32(a), F32(b), I32(n))
		}
		if err := launch(2, 1); err != nil {
			return err
		}
		if err := DtoHAsync(th, got, py, s); err != nil {
			return err
		}
		if err := th.Sync(s); err != nil {
			return err
		}
		for i, v := range got {
			if v != 2*x[i]+1 {
				return fmt.Errorf("launch: y[%d] = %v, want %v", i, v, 2*x[i]+1)
			}
		}
		// The same kernel captured into a graph, replayed with events.
		g, err := th.Capture(s, func() error { return launch(-3, 0.5) })
		if err != nil {
			return err
		}
		defer th.DestroyGraph(g)
		e0, e1, err := th.NewEvents()
		if err != nil {
			return err
		}
		ms, err := th.Time(s, e0, e1, func() error {
			for range 10 {
				if err := th.LaunchGraph(g, s); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		t.Logf("10 graph replays: %.3f ms", ms)
		if err := DtoH(th, got, py); err != nil {
			return err
		}
		for i, v := range got {
			if v != -3*x[i]+0.5 {
				return fmt.Errorf("graph: y[%d] = %v, want %v", i, v, -3*x[i]+0.5)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
