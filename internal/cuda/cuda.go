// Package cuda binds the CUDA driver API (libcuda.so.1) and the run-time
// compiler NVRTC (libnvrtc) through purego, so nothing in the project needs
// cgo and every binary builds and runs where neither library exists.
//
// One device is used: ordinal 0 (DAMASCUS_CUDA_DEVICE picks another), through
// its primary context (cuDevicePrimaryCtxRetain and cuCtxSetCurrent, never
// cuCtxCreate, whose ABI changed in CUDA 13). Every driver call runs on one
// OS thread that the package locks for good and that serves closures sent to
// it ([Device.Do]); the [Thread] handed to those closures is the only way to
// make a driver call, so no call can run on another thread by mistake.
//
// [Open] returns the process's device, or one error saying why there is none
// (no libcuda.so.1, no device, a driver older than [MinDriver]); it wraps
// [ErrNoDevice] so callers can test for it with errors.Is. Nothing touches
// the driver before Open is called, so CPU-only paths never load it.
//
// Driver errors are *Error values naming the call and CUDA's own error name
// and text ("cuMemAlloc_v2: CUDA_ERROR_OUT_OF_MEMORY (2): out of memory").
package cuda

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"github.com/ebitengine/purego"

	"github.com/damascus-llm/damascus/internal/dl"
)

// ErrNoDevice is wrapped by every error that means "no usable CUDA device
// here": the library is missing, it finds no device, the driver is too old.
var ErrNoDevice = errors.New("no CUDA device")

// MinDriver is the oldest driver API version accepted, as cuDriverGetVersion
// reports it (1000·major + 10·minor): CUDA 12.0, the first whose driver API
// has every call bound here with the signatures used (the _v2 entry points,
// cuGraphInstantiateWithFlags) and that runs Hopper code.
const MinDriver = 12000

// Environment variables.
const (
	// LibEnv is the path of the driver library to load instead of
	// libcuda.so.1 from the loader's search path.
	LibEnv = "DAMASCUS_LIBCUDA"
	// DeviceEnv is the ordinal of the device to use (default 0).
	DeviceEnv = "DAMASCUS_CUDA_DEVICE"
)

// An Error is a failed driver call.
type Error struct {
	Call string // the driver function, e.g. "cuMemAlloc_v2"
	Code int    // the CUresult
	Name string // CUDA's name for it, e.g. "CUDA_ERROR_OUT_OF_MEMORY"
	Text string // CUDA's description
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s: %s (%d): %s", e.Call, e.Name, e.Code, e.Text)
}

// Info describes the opened device.
type Info struct {
	Ordinal       int
	Name          string
	Major, Minor  int    // compute capability
	SMs           int    // multiprocessors
	Memory        uint64 // bytes of device memory
	L2            int    // bytes of L2 cache
	SharedPerSM   int    // bytes of shared memory per multiprocessor
	SharedOptin   int    // bytes of shared memory a block may opt in to
	ClockKHz      int    // peak SM clock
	MemClockKHz   int    // peak memory clock
	BusWidth      int    // memory bus width in bits
	DriverVersion int    // 1000·major + 10·minor
}

// String is a one-line summary for logs.
func (i Info) String() string {
	return fmt.Sprintf("%s (sm_%d%d, %d SMs, %.1f GiB, L2 %d MiB), driver API %d.%d",
		i.Name, i.Major, i.Minor, i.SMs, float64(i.Memory)/(1<<30), i.L2>>20, i.DriverVersion/1000, i.DriverVersion%1000/10)
}

// Arch is the device's compute capability as NVRTC and nvcc name it: "sm_90".
func (i Info) Arch() string { return fmt.Sprintf("sm_%d%d", i.Major, i.Minor) }

// A Device is the opened GPU and the locked thread that owns its context.
type Device struct {
	Info
	work chan func()
	t    *Thread
}

// openOnce opens the device on its first call and returns that result
// (device or error) ever after.
var openOnce = sync.OnceValues(open)

// Open returns the process's device, opening it on the first call. The
// result (device or error) is cached: a machine without a GPU pays for one
// failed dlopen.
func Open() (*Device, error) { return openOnce() }

// Available reports nil when Open succeeds, else its error.
func Available() error {
	_, err := Open()
	return err
}

func open() (*Device, error) {
	path := "libcuda.so.1"
	if p := os.Getenv(LibEnv); p != "" {
		path = p
	}
	ordinal := 0
	if s := os.Getenv(DeviceEnv); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("%w: %s=%q is not a device ordinal", ErrNoDevice, DeviceEnv, s)
		}
		ordinal = n
	}
	d := &Device{work: make(chan func())}
	started := make(chan error)
	go d.serve(path, ordinal, started)
	if err := <-started; err != nil {
		return nil, err
	}
	return d, nil
}

// serve is the device thread: it opens the driver, makes the primary
// context current and then runs the closures sent to it, for good.
func (d *Device) serve(path string, ordinal int, started chan<- error) {
	runtime.LockOSThread() // never unlocked: the context is current here only
	t, info, err := initThread(path, ordinal)
	if err != nil {
		started <- err
		runtime.UnlockOSThread()
		return
	}
	d.Info, d.t = info, t
	started <- nil
	for f := range d.work {
		f()
	}
}

func initThread(path string, ordinal int) (_ *Thread, info Info, err error) {
	h, err := purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		return nil, info, fmt.Errorf("%w: %s not found or not loadable (%v); the cuda variants need an NVIDIA GPU and its driver", ErrNoDevice, path, err)
	}
	api, err := bindDriver(h)
	if err != nil {
		return nil, info, fmt.Errorf("%w: %s: %v", ErrNoDevice, path, err)
	}
	t := &Thread{api: api, args: new(argArena)}
	t.pin.Pin(t.args)
	defer func() {
		// A thread that failed to start is dropped: its pin must not
		// outlive it (the runtime panics on a collected, pinned Pinner).
		if err != nil {
			t.pin.Unpin()
		}
	}()
	if err := t.check("cuInit", api.cuInit(0)); err != nil {
		return nil, info, fmt.Errorf("%w: %v", ErrNoDevice, err)
	}
	var ver int32
	if err := t.check("cuDriverGetVersion", api.cuDriverGetVersion(&ver)); err != nil {
		return nil, info, fmt.Errorf("%w: %v", ErrNoDevice, err)
	}
	info.DriverVersion = int(ver)
	if ver < MinDriver {
		return nil, info, fmt.Errorf("%w: the driver supports CUDA %d.%d, the cuda variants need %d.%d or newer",
			ErrNoDevice, ver/1000, ver%1000/10, MinDriver/1000, MinDriver%1000/10)
	}
	var count int32
	if err := t.check("cuDeviceGetCount", api.cuDeviceGetCount(&count)); err != nil {
		return nil, info, fmt.Errorf("%w: %v", ErrNoDevice, err)
	}
	if int(count) <= ordinal {
		return nil, info, fmt.Errorf("%w: the driver reports %d device(s), device %d asked for", ErrNoDevice, count, ordinal)
	}
	if err := t.check("cuDeviceGet", api.cuDeviceGet(&t.dev, int32(ordinal))); err != nil {
		return nil, info, fmt.Errorf("%w: %v", ErrNoDevice, err)
	}
	info.Ordinal = ordinal
	name := make([]byte, 256)
	if err := t.check("cuDeviceGetName", api.cuDeviceGetName(&name[0], int32(len(name)), t.dev)); err != nil {
		return nil, info, err
	}
	info.Name = cString(name)
	var mem uintptr
	if err := t.check("cuDeviceTotalMem_v2", api.cuDeviceTotalMem(&mem, t.dev)); err != nil {
		return nil, info, err
	}
	info.Memory = uint64(mem)
	for _, a := range []struct {
		attr int32
		dst  *int
	}{
		{attrComputeCapabilityMajor, &info.Major}, {attrComputeCapabilityMinor, &info.Minor},
		{attrMultiprocessorCount, &info.SMs}, {attrL2CacheSize, &info.L2},
		{attrMaxSharedMemoryPerMultiprocessor, &info.SharedPerSM}, {attrMaxSharedMemoryPerBlockOptin, &info.SharedOptin},
		{attrClockRate, &info.ClockKHz}, {attrMemoryClockRate, &info.MemClockKHz}, {attrGlobalMemoryBusWidth, &info.BusWidth},
	} {
		v, err := t.Attribute(a.attr)
		if err != nil && (a.attr == attrComputeCapabilityMajor || a.attr == attrComputeCapabilityMinor || a.attr == attrMultiprocessorCount) {
			return nil, info, err
		}
		*a.dst = v // the others are informative: 0 where a driver dropped one
	}
	if err := t.check("cuDevicePrimaryCtxRetain", api.cuDevicePrimaryCtxRetain(&t.ctx, t.dev)); err != nil {
		return nil, info, fmt.Errorf("%w: %v", ErrNoDevice, err)
	}
	if err := t.check("cuCtxSetCurrent", api.cuCtxSetCurrent(t.ctx)); err != nil {
		return nil, info, err
	}
	return t, info, nil
}

// Do runs f on the device thread and returns its error. Calls from several
// goroutines are served one at a time, in arrival order. f must not call Do.
func (d *Device) Do(f func(t *Thread) error) error {
	done := make(chan error, 1)
	d.work <- func() {
		defer func() {
			if p := recover(); p != nil {
				done <- fmt.Errorf("cuda: panic on the device thread: %v", p)
			}
		}()
		done <- f(d.t)
	}
	return <-done
}

// cString returns the bytes of b up to its first NUL.
func cString(b []byte) string {
	if i := strings.IndexByte(string(b), 0); i >= 0 {
		return string(b[:i])
	}
	return string(b)
}

// goString copies the NUL-terminated C string at p.
func goString(p *byte) string { return dl.GoString(p) }
