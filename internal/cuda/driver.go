package cuda

import (
	"fmt"
	"math"
	"reflect"
	"runtime"
	"strings"
	"unsafe"

	"github.com/ebitengine/purego"
)

// CUdevice_attribute values (cuda.h).
const (
	attrClockRate                        = 13
	attrMultiprocessorCount              = 16
	attrMemoryClockRate                  = 36
	attrGlobalMemoryBusWidth             = 37
	attrL2CacheSize                      = 38
	attrComputeCapabilityMajor           = 75
	attrComputeCapabilityMinor           = 76
	attrMaxSharedMemoryPerMultiprocessor = 81
	attrMaxSharedMemoryPerBlockOptin     = 97
	funcAttrMaxThreadsPerBlock           = 0
	funcAttrSharedSizeBytes              = 1
	funcAttrLocalSizeBytes               = 3
	funcAttrNumRegs                      = 4
	funcAttrMaxDynamicSharedSizeBytes    = 8
	streamNonBlocking                    = 1
	captureModeThreadLocal               = 1
	eventDefault                         = 0
)

// api holds the driver entry points. CUresult is returned as int32; handles
// (CUcontext, CUstream, ...) are pointers, CUdeviceptr is 64 bits.
type api struct {
	cuInit                      func(flags uint32) int32
	cuDriverGetVersion          func(v *int32) int32
	cuDeviceGetCount            func(n *int32) int32
	cuDeviceGet                 func(dev *int32, ordinal int32) int32
	cuDeviceGetName             func(name *byte, n int32, dev int32) int32
	cuDeviceGetAttribute        func(v *int32, attr int32, dev int32) int32
	cuDeviceTotalMem            func(bytes *uintptr, dev int32) int32 `sym:"cuDeviceTotalMem_v2"`
	cuDevicePrimaryCtxRetain    func(ctx *uintptr, dev int32) int32
	cuDevicePrimaryCtxRelease   func(dev int32) int32 `sym:"cuDevicePrimaryCtxRelease_v2,cuDevicePrimaryCtxRelease"`
	cuCtxSetCurrent             func(ctx uintptr) int32
	cuMemGetInfo                func(free, total *uintptr) int32                                 `sym:"cuMemGetInfo_v2"`
	cuMemAlloc                  func(p *uint64, n uintptr) int32                                 `sym:"cuMemAlloc_v2"`
	cuMemFree                   func(p uint64) int32                                             `sym:"cuMemFree_v2"`
	cuMemcpyHtoDAsync           func(dst uint64, src unsafe.Pointer, n uintptr, s uintptr) int32 `sym:"cuMemcpyHtoDAsync_v2"`
	cuMemcpyDtoHAsync           func(dst unsafe.Pointer, src uint64, n uintptr, s uintptr) int32 `sym:"cuMemcpyDtoHAsync_v2"`
	cuMemcpyDtoDAsync           func(dst, src uint64, n uintptr, s uintptr) int32                `sym:"cuMemcpyDtoDAsync_v2"`
	cuMemsetD32Async            func(p uint64, v uint32, n uintptr, s uintptr) int32
	cuMemsetD8Async             func(p uint64, v uint8, n uintptr, s uintptr) int32
	cuModuleLoadData            func(m *uintptr, image unsafe.Pointer) int32
	cuModuleUnload              func(m uintptr) int32
	cuModuleGetFunction         func(f *uintptr, m uintptr, name string) int32
	cuFuncGetAttribute          func(v *int32, attr int32, f uintptr) int32
	cuFuncSetAttribute          func(f uintptr, attr int32, v int32) int32
	cuLaunchKernel              func(f uintptr, gx, gy, gz, bx, by, bz, shared uint32, s uintptr, params, extra unsafe.Pointer) int32
	cuStreamCreate              func(s *uintptr, flags uint32) int32
	cuStreamSynchronize         func(s uintptr) int32
	cuStreamDestroy             func(s uintptr) int32 `sym:"cuStreamDestroy_v2,cuStreamDestroy"`
	cuEventCreate               func(e *uintptr, flags uint32) int32
	cuEventRecord               func(e, s uintptr) int32
	cuEventSynchronize          func(e uintptr) int32
	cuEventElapsedTime          func(ms *float32, start, end uintptr) int32 `sym:"cuEventElapsedTime_v2,cuEventElapsedTime"`
	cuEventDestroy              func(e uintptr) int32                       `sym:"cuEventDestroy_v2,cuEventDestroy"`
	cuStreamBeginCapture        func(s uintptr, mode int32) int32           `sym:"cuStreamBeginCapture_v2,cuStreamBeginCapture"`
	cuStreamEndCapture          func(s uintptr, g *uintptr) int32
	cuGraphInstantiateWithFlags func(exec *uintptr, g uintptr, flags uint64) int32
	cuGraphLaunch               func(exec, s uintptr) int32
	cuGraphExecDestroy          func(exec uintptr) int32
	cuGraphDestroy              func(g uintptr) int32
	cuGetErrorName              func(r int32, s **byte) int32
	cuGetErrorString            func(r int32, s **byte) int32
	// cuLaunchKernelEx is optional (CUDA 12): launches with attributes.
	cuLaunchKernelEx func(cfg unsafe.Pointer, f uintptr, params, extra unsafe.Pointer) int32 `bind:"optional"`
	// cuOccupancyMaxActiveBlocksPerMultiprocessor (occupancy.go) is optional too.
	cuOccupancyMaxActiveBlocksPerMultiprocessor func(n *int32, f uintptr, block int32, shared uintptr) int32 `bind:"optional"`
}

// bindDriver resolves every entry point (bindFuncs: each field's name, or
// its sym tag's symbols in order, the _v2 ABI first where cuda.h maps the
// plain name to it).
func bindDriver(h uintptr) (*api, error) {
	a := &api{}
	if sym, err := bindFuncs(h, a); err != nil {
		return nil, fmt.Errorf("the driver has no %s (too old?): %v", sym, err)
	}
	return a, nil
}

// bindFuncs registers the entry points of the library h into the func
// fields of the struct lib points to (purego.RegisterFunc). A field's
// symbol is its name, or the first of its `sym` tag's comma-separated
// names that h has; a field tagged `bind:"optional"` stays nil where h has
// none. A required symbol missing is the error, with its (first) name.
func bindFuncs(h uintptr, lib any) (missing string, err error) {
	v := reflect.ValueOf(lib).Elem()
	for i := range v.NumField() {
		f := v.Type().Field(i)
		if f.Type.Kind() != reflect.Func {
			continue
		}
		syms := []string{f.Name}
		if tag, ok := f.Tag.Lookup("sym"); ok {
			syms = strings.Split(tag, ",")
		}
		var sym uintptr
		for _, name := range syms {
			if sym, err = purego.Dlsym(h, name); err == nil {
				break
			}
		}
		if err != nil {
			if f.Tag.Get("bind") == "optional" {
				err = nil
				continue
			}
			return syms[0], err
		}
		// The fields are unexported: RegisterFunc gets a pointer to one
		// through its address, as reflect will not hand it out.
		purego.RegisterFunc(reflect.NewAt(f.Type, unsafe.Pointer(v.Field(i).UnsafeAddr())).Interface(), sym)
	}
	return "", nil
}

// Ptr is a device address (CUdeviceptr).
type Ptr uint64

// Add returns p advanced by n bytes.
func (p Ptr) Add(n int) Ptr { return p + Ptr(n) }

// Arg is p as a kernel argument.
func (p Ptr) Arg() Arg { return Arg(p) }

// An Arg is one kernel argument's bits: a device pointer, an int or a float,
// in the low bytes of 64 (the driver reads as many as the parameter has).
type Arg uint64

// I32 is an int parameter.
func I32(v int) Arg { return Arg(uint32(int32(v))) }

// F32 is a float parameter.
func F32(v float32) Arg { return Arg(math.Float32bits(v)) }

// Dim3 is a grid or block size.
type Dim3 struct{ X, Y, Z int }

// D1 is a one-dimensional size.
func D1(x int) Dim3 { return Dim3{x, 1, 1} }

// D2 is a two-dimensional size.
func D2(x, y int) Dim3 { return Dim3{x, y, 1} }

type (
	// Stream is a CUstream.
	Stream uintptr
	// Event is a CUevent.
	Event uintptr
	// Module is a loaded CUmodule.
	Module uintptr
	// Function is a kernel of a module (CUfunction).
	Function uintptr
)

// maxArgs bounds a kernel's parameters.
const maxArgs = 32

// argArena holds the parameters of one launch: the driver reads
// kernelParams[i] → value i. It lives as long as the thread and is pinned.
type argArena struct {
	vals [maxArgs]uint64
	ptrs [maxArgs]unsafe.Pointer
	cfg  launchConfig
	attr launchAttr
}

// launchConfig and launchAttr are CUlaunchConfig and CUlaunchAttribute
// (cuda.h, CUDA 12 and later), field for field.
type launchConfig struct {
	gx, gy, gz, bx, by, bz, shared uint32
	_                              uint32
	stream                         uintptr
	attrs                          *launchAttr
	nattrs                         uint32
	_                              uint32
}

type launchAttr struct {
	id  uint32
	_   [4]byte
	val [64]byte
}

// attrProgrammaticSerialization is CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION.
const attrProgrammaticSerialization = 6

// A Thread is the device thread's handle on the driver: its methods are the
// driver calls, valid only inside a closure passed to Device.Do.
type Thread struct {
	api    *api
	dev    int32
	ctx    uintptr
	stream Stream // created on first use
	args   *argArena
	pin    runtime.Pinner
	// PDL launches kernels with programmatic dependent launch: each may
	// start while the one before it on the stream finishes, and must wait
	// for it (griddepcontrol.wait) before reading what it wrote. Ignored
	// where the driver has no cuLaunchKernelEx.
	PDL bool

	// Skip leaves launches of these functions out, for measuring: the time
	// a step loses without a kernel is that kernel's share of it. What the
	// step computes is then wrong.
	Skip map[Function]bool
}

// check turns a CUresult into nil or an *Error.
func (t *Thread) check(call string, r int32) error {
	if r == 0 {
		return nil
	}
	e := &Error{Call: call, Code: int(r), Name: fmt.Sprintf("CUresult %d", r), Text: "unknown error"}
	var s *byte
	if t.api.cuGetErrorName(r, &s) == 0 && s != nil {
		e.Name = goString(s)
	}
	s = nil
	if t.api.cuGetErrorString(r, &s) == 0 && s != nil {
		e.Text = goString(s)
	}
	return e
}

// Attribute returns a device attribute (CUdevice_attribute).
func (t *Thread) Attribute(attr int32) (int, error) {
	var v int32
	err := t.check("cuDeviceGetAttribute", t.api.cuDeviceGetAttribute(&v, attr, t.dev))
	return int(v), err
}

// MemInfo returns the free and total device memory in bytes.
func (t *Thread) MemInfo() (free, total uint64, err error) {
	var f, tot uintptr
	err = t.check("cuMemGetInfo_v2", t.api.cuMemGetInfo(&f, &tot))
	return uint64(f), uint64(tot), err
}

// Alloc allocates n bytes of device memory (at least 256-byte aligned).
func (t *Thread) Alloc(n int) (Ptr, error) {
	if n <= 0 {
		n = 1
	}
	var p uint64
	if err := t.check("cuMemAlloc_v2", t.api.cuMemAlloc(&p, uintptr(n))); err != nil {
		return 0, fmt.Errorf("%w (%d bytes)", err, n)
	}
	return Ptr(p), nil
}

// Free releases memory from Alloc.
func (t *Thread) Free(p Ptr) error {
	if p == 0 {
		return nil
	}
	return t.check("cuMemFree_v2", t.api.cuMemFree(uint64(p)))
}

func sliceBytes[T any](s []T) (unsafe.Pointer, int) {
	if len(s) == 0 {
		return nil, 0
	}
	var z T
	return unsafe.Pointer(&s[0]), len(s) * int(unsafe.Sizeof(z))
}

// HtoD copies src to device memory at dst on the thread's stream and waits
// for it (and for the work enqueued before it). The driver's plain
// cuMemcpyHtoD would run on the legacy default stream, which the
// thread's non-blocking stream does not wait for; a pageable copy may even
// return before the data has landed.
func HtoD[T any](t *Thread, dst Ptr, src []T) error {
	err := t.waitCopy(func(s Stream) error { return HtoDAsync(t, dst, src, s) })
	runtime.KeepAlive(src)
	return err
}

// DtoH copies device memory at src into dst on the thread's stream, after
// the work enqueued there before it, and waits for it.
func DtoH[T any](t *Thread, dst []T, src Ptr) error {
	err := t.waitCopy(func(s Stream) error { return DtoHAsync(t, dst, src, s) })
	runtime.KeepAlive(dst)
	return err
}

// waitCopy is HtoD's and DtoH's common part: enqueue a copy on the
// thread's stream and wait for the stream.
func (t *Thread) waitCopy(enqueue func(Stream) error) error {
	s, err := t.Stream()
	if err != nil {
		return err
	}
	if err := enqueue(s); err != nil {
		return err
	}
	return t.Sync(s)
}

// HtoDAsync enqueues a copy of src to dst on s. src must stay untouched
// until s is synchronized.
func HtoDAsync[T any](t *Thread, dst Ptr, src []T, s Stream) error {
	p, n := sliceBytes(src)
	if n == 0 {
		return nil
	}
	err := t.check("cuMemcpyHtoDAsync_v2", t.api.cuMemcpyHtoDAsync(uint64(dst), p, uintptr(n), uintptr(s)))
	runtime.KeepAlive(src)
	return err
}

// DtoHAsync enqueues a copy of device memory at src into dst on s; dst is
// valid once s is synchronized.
func DtoHAsync[T any](t *Thread, dst []T, src Ptr, s Stream) error {
	p, n := sliceBytes(dst)
	if n == 0 {
		return nil
	}
	err := t.check("cuMemcpyDtoHAsync_v2", t.api.cuMemcpyDtoHAsync(p, uint64(src), uintptr(n), uintptr(s)))
	runtime.KeepAlive(dst)
	return err
}

// DtoDAsync enqueues a copy of n bytes between device buffers on s.
func (t *Thread) DtoDAsync(dst, src Ptr, n int, s Stream) error {
	return t.check("cuMemcpyDtoDAsync_v2", t.api.cuMemcpyDtoDAsync(uint64(dst), uint64(src), uintptr(n), uintptr(s)))
}

// MemsetD32Async enqueues setting n 32-bit words at p (4-byte aligned) to
// v on s.
func (t *Thread) MemsetD32Async(p Ptr, v uint32, n int, s Stream) error {
	return t.check("cuMemsetD32Async", t.api.cuMemsetD32Async(uint64(p), v, uintptr(n), uintptr(s)))
}

// MemsetD8Async enqueues setting n bytes at p to v on s.
func (t *Thread) MemsetD8Async(p Ptr, v uint8, n int, s Stream) error {
	return t.check("cuMemsetD8Async", t.api.cuMemsetD8Async(uint64(p), v, uintptr(n), uintptr(s)))
}

// LoadModule loads a cubin, fatbin or NUL-terminated PTX image.
func (t *Thread) LoadModule(image []byte) (Module, error) {
	img := append(append([]byte(nil), image...), 0) // PTX must end in NUL; harmless for ELF
	var m uintptr
	err := t.check("cuModuleLoadData", t.api.cuModuleLoadData(&m, unsafe.Pointer(&img[0])))
	runtime.KeepAlive(img)
	return Module(m), err
}

// UnloadModule unloads m.
func (t *Thread) UnloadModule(m Module) error {
	return t.check("cuModuleUnload", t.api.cuModuleUnload(uintptr(m)))
}

// Function returns the kernel called name (its extern "C" name) of m.
func (t *Thread) Function(m Module, name string) (Function, error) {
	var f uintptr
	if err := t.check("cuModuleGetFunction", t.api.cuModuleGetFunction(&f, uintptr(m), name)); err != nil {
		return 0, fmt.Errorf("%w (kernel %s)", err, name)
	}
	return Function(f), nil
}

// FuncInfo is what the driver says about a kernel's resources.
type FuncInfo struct {
	Registers, LocalBytes, StaticShared, MaxThreads int
}

// FuncInfo returns f's register count, local (spill/stack) bytes per
// thread, static shared memory and the largest block it can launch with.
func (t *Thread) FuncInfo(f Function) (FuncInfo, error) {
	var fi FuncInfo
	for _, a := range []struct {
		attr int32
		dst  *int
	}{{funcAttrNumRegs, &fi.Registers}, {funcAttrLocalSizeBytes, &fi.LocalBytes},
		{funcAttrSharedSizeBytes, &fi.StaticShared}, {funcAttrMaxThreadsPerBlock, &fi.MaxThreads}} {
		var v int32
		if err := t.check("cuFuncGetAttribute", t.api.cuFuncGetAttribute(&v, a.attr, uintptr(f))); err != nil {
			return fi, err
		}
		*a.dst = int(v)
	}
	return fi, nil
}

// SetMaxDynamicShared lets f launch with up to n bytes of dynamic shared
// memory (needed above 48 KiB).
func (t *Thread) SetMaxDynamicShared(f Function, n int) error {
	return t.check("cuFuncSetAttribute", t.api.cuFuncSetAttribute(uintptr(f), funcAttrMaxDynamicSharedSizeBytes, int32(n)))
}

// Launch enqueues kernel f on s with the given grid, block, dynamic shared
// memory and arguments (in the kernel's parameter order).
func (t *Thread) Launch(f Function, grid, block Dim3, shared int, s Stream, args ...Arg) error {
	if len(args) > maxArgs {
		return fmt.Errorf("cuLaunchKernel: %d arguments, at most %d", len(args), maxArgs)
	}
	if t.Skip[f] {
		return nil
	}
	a := t.args
	for i, v := range args {
		a.vals[i] = uint64(v)
		a.ptrs[i] = unsafe.Pointer(&a.vals[i])
	}
	var params unsafe.Pointer
	if len(args) > 0 {
		params = unsafe.Pointer(&a.ptrs[0])
	}
	if t.PDL && t.api.cuLaunchKernelEx != nil {
		a.attr = launchAttr{id: attrProgrammaticSerialization}
		a.attr.val[0] = 1
		a.cfg = launchConfig{gx: uint32(grid.X), gy: uint32(grid.Y), gz: uint32(grid.Z), bx: uint32(block.X), by: uint32(block.Y), bz: uint32(block.Z),
			shared: uint32(shared), stream: uintptr(s), attrs: &a.attr, nattrs: 1}
		if err := t.check("cuLaunchKernelEx", t.api.cuLaunchKernelEx(unsafe.Pointer(&a.cfg), uintptr(f), params, nil)); err != nil {
			return fmt.Errorf("%w (grid %v, block %v, shared %d, dependent launch)", err, grid, block, shared)
		}
		return nil
	}
	r := t.api.cuLaunchKernel(uintptr(f), uint32(grid.X), uint32(grid.Y), uint32(grid.Z),
		uint32(block.X), uint32(block.Y), uint32(block.Z), uint32(shared), uintptr(s), params, nil)
	if err := t.check("cuLaunchKernel", r); err != nil {
		return fmt.Errorf("%w (grid %v, block %v, shared %d)", err, grid, block, shared)
	}
	return nil
}

// Stream returns the thread's own stream (non-blocking: it never waits for
// the legacy default stream), creating it on first use.
func (t *Thread) Stream() (Stream, error) {
	if t.stream == 0 {
		s, err := t.NewStream()
		if err != nil {
			return 0, err
		}
		t.stream = s
	}
	return t.stream, nil
}

// NewStream creates a non-blocking stream.
func (t *Thread) NewStream() (Stream, error) {
	var s uintptr
	err := t.check("cuStreamCreate", t.api.cuStreamCreate(&s, streamNonBlocking))
	return Stream(s), err
}

// DestroyStream destroys s.
func (t *Thread) DestroyStream(s Stream) error {
	return t.check("cuStreamDestroy_v2", t.api.cuStreamDestroy(uintptr(s)))
}

// Sync waits for everything enqueued on s; a kernel's fault shows here.
func (t *Thread) Sync(s Stream) error {
	return t.check("cuStreamSynchronize", t.api.cuStreamSynchronize(uintptr(s)))
}

// NewEvent creates a timing event.
func (t *Thread) NewEvent() (Event, error) {
	var e uintptr
	err := t.check("cuEventCreate", t.api.cuEventCreate(&e, eventDefault))
	return Event(e), err
}

// NewEvents creates the start and end events Time takes (the first is
// destroyed again where the second fails).
func (t *Thread) NewEvents() (start, end Event, err error) {
	if start, err = t.NewEvent(); err != nil {
		return 0, 0, err
	}
	if end, err = t.NewEvent(); err != nil {
		t.DestroyEvent(start)
		return 0, 0, err
	}
	return start, end, nil
}

// Record enqueues e on s.
func (t *Thread) Record(e Event, s Stream) error {
	return t.check("cuEventRecord", t.api.cuEventRecord(uintptr(e), uintptr(s)))
}

// EventSync waits for e.
func (t *Thread) EventSync(e Event) error {
	return t.check("cuEventSynchronize", t.api.cuEventSynchronize(uintptr(e)))
}

// Elapsed returns the milliseconds between two completed events.
func (t *Thread) Elapsed(start, end Event) (float32, error) {
	var ms float32
	err := t.check("cuEventElapsedTime", t.api.cuEventElapsedTime(&ms, uintptr(start), uintptr(end)))
	return ms, err
}

// Time records start on s, runs enqueue (which enqueues work on s),
// records end, waits for it and returns Elapsed: the milliseconds of device
// time the enqueued work took.
func (t *Thread) Time(s Stream, start, end Event, enqueue func() error) (float32, error) {
	if err := t.Record(start, s); err != nil {
		return 0, err
	}
	if err := enqueue(); err != nil {
		return 0, err
	}
	if err := t.Record(end, s); err != nil {
		return 0, err
	}
	if err := t.EventSync(end); err != nil {
		return 0, err
	}
	return t.Elapsed(start, end)
}

// DestroyEvent destroys e.
func (t *Thread) DestroyEvent(e Event) error {
	return t.check("cuEventDestroy_v2", t.api.cuEventDestroy(uintptr(e)))
}

// A Graph is an instantiated CUDA graph, replayed with Launch.
type Graph struct {
	graph, exec uintptr
}

// Capture records the work f enqueues on s (which must be a stream of this
// thread, not the legacy default stream) into a graph and instantiates it.
// Nothing f enqueues runs until the graph is launched.
func (t *Thread) Capture(s Stream, f func() error) (*Graph, error) {
	if err := t.check("cuStreamBeginCapture_v2", t.api.cuStreamBeginCapture(uintptr(s), captureModeThreadLocal)); err != nil {
		return nil, err
	}
	ferr := f()
	var g uintptr
	if err := t.check("cuStreamEndCapture", t.api.cuStreamEndCapture(uintptr(s), &g)); err != nil {
		if ferr != nil {
			return nil, fmt.Errorf("capture: %w (ending it: %v)", ferr, err)
		}
		return nil, err
	}
	if ferr != nil {
		t.api.cuGraphDestroy(g)
		return nil, fmt.Errorf("capture: %w", ferr)
	}
	var exec uintptr
	if err := t.check("cuGraphInstantiateWithFlags", t.api.cuGraphInstantiateWithFlags(&exec, g, 0)); err != nil {
		t.api.cuGraphDestroy(g)
		return nil, err
	}
	return &Graph{graph: g, exec: exec}, nil
}

// LaunchGraph enqueues a replay of g on s.
func (t *Thread) LaunchGraph(g *Graph, s Stream) error {
	return t.check("cuGraphLaunch", t.api.cuGraphLaunch(g.exec, uintptr(s)))
}

// DestroyGraph frees g.
func (t *Thread) DestroyGraph(g *Graph) error {
	if g == nil {
		return nil
	}
	err := t.check("cuGraphExecDestroy", t.api.cuGraphExecDestroy(g.exec))
	if e2 := t.check("cuGraphDestroy", t.api.cuGraphDestroy(g.graph)); err == nil {
		err = e2
	}
	return err
}
