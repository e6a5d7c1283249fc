package cuda

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"time"

	cu "github.com/damascus-llm/damascus/internal/cuda"
	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/quant"
)

// The persistent decode kernel (persistent.cu): a single token's layers in
// one launch whose blocks, one per multiprocessor, walk each layer's steps
// and meet at grid barriers between the dependent ones. It is an engine
// configuration, not an op variant: no ledger signature takes a layer
// (weights, norms, a KV cache, a position), so model/llama switches it on
// (DAMASCUS_CUDA_DECODE=persistent) and its agreement test holds it to the
// launch-per-op path. Its matvec alone fits the contract and is registered
// as cuda-persist, so that the gate checks its arithmetic on its own.

// lazyFile is a kernel file compiled and loaded on first use, not with the
// other kernel files (sourceFiles): NVRTC takes about as long over
// persistent.cu as over all the others, and only DAMASCUS_CUDA_DECODE and
// cuda-persist / cuda-mega need it.
type lazyFile struct {
	name          string
	kernels, uses []string
	defines       []string
}

var (
	persistentFile = lazyFile{"persistent.cu", []string{"persistent_decode", "pmv"}, []string{"quantize.cu"}, nil}
	// mega.cu runs persistent.cu's steps: its device functions only.
	megaFile = lazyFile{"mega.cu", []string{"mega_decode", "mmv", "mmv2"}, []string{"quantize.cu", "persistent.cu"},
		[]string{"-DPERSISTENT_DEVICE_ONLY"}}
)

// loadPersistent and loadMega load their files once.
func (r *gpu) loadPersistent(t *cu.Thread) error { return r.loadLazy(t, persistentFile) }
func (r *gpu) loadMega(t *cu.Thread) error       { return r.loadLazy(t, megaFile) }

// loadLazy compiles and loads f once (on the device thread, for the
// architecture the other files were compiled for).
func (r *gpu) loadLazy(t *cu.Thread, f lazyFile) error {
	if r.fns[f.kernels[0]] != 0 {
		return nil
	}
	src, err := Source(f.name, f.uses...)
	if err != nil {
		return err
	}
	c, err := cu.Compile(src, f.name, append(CompileOptions(r.arch), f.defines...)...)
	if err != nil {
		return fmt.Errorf("cuda kernels: %w", err)
	}
	if dir := os.Getenv(DumpEnv); dir != "" {
		if err := dump(dir, map[string]cu.Compiled{f.name: c}); err != nil {
			return err
		}
	}
	return r.loadModule(t, f.name, c, f.kernels)
}

// persistThreads is PT in persistent.cu.
const persistThreads = 256

// persistMaxGroup is PMAXG: query heads per KV head the kernel takes.
const persistMaxGroup = 4

// PersistentLayer is one layer's device data.
type PersistentLayer struct {
	Q, K, V, O, Gate, Up, Down Weights
	AttnNorm, FFNNorm          cu.Ptr
	KC, VC                     cu.Ptr // the layer's cache, [KV head][position][headDim] as DecodeAttention's
}

// PersistentShape is the model's shape and the kernel's options.
type PersistentShape struct {
	Dim, Heads, KVHeads, HeadDim, FFN, NCtx int
	Eps, Scale                              float32
	NeoX                                    bool
	// Prefetch has each warp ask L2 for its rows of the next step's matrix
	// before each barrier (the weights do not depend on it).
	Prefetch bool
	// Blocks is the grid (0: one block per multiprocessor); more than the
	// device holds at once is refused.
	Blocks int
	// Timeout is how long a barrier waits before the watchdog gives up (0:
	// one second).
	Timeout time.Duration
	// WatchdogTest has block 0 skip the first barrier, so that the others
	// wait out Timeout and the step fails (for the watchdog's own test).
	WatchdogTest bool
	// Mega runs mega.cu's kernel instead: the same steps, every block's
	// weight rows streamed through a ring in its shared memory ahead of
	// the steps that read them. Ring caps the ring's bytes (0: what the
	// device allows beside the activations), though never below three of
	// its largest rounds (Ring 1: the smallest ring, for the tests).
	Mega bool
	Ring int
	// Timing has block 0 note the time at the end of each step and of each
	// barrier (PhaseTimes reads them): where a layer's time goes.
	Timing bool
}

// Persistent is the kernel set up for one model and context.
type Persistent struct {
	sh             PersistentShape
	kernel         string // persistent_decode or mega_decode
	layers         int
	blocks, shared int
	ringAt, ring   int // mega_decode's ring in the dynamic shared memory
	params         cu.Ptr
	bar, errp      cu.Ptr // the barrier's counter and the watchdog's flag, adjacent
	times          cu.Ptr // Timing's marks: phaseMarks a layer
	allocs         []cu.Ptr
	flag           []uint32
}

// Blocks is the grid the kernel launches with; Shared its dynamic shared
// memory a block.
func (p *Persistent) Blocks() int { return p.blocks }

// Shared is the dynamic shared memory a block.
func (p *Persistent) Shared() int { return p.shared }

// Resources is what the driver says of the kernel (registers, local bytes:
// ptxas of the device's NVRTC may allocate otherwise than the 11.8 that
// TestPersistentNoSpills runs here) and the architecture compiled for.
func (p *Persistent) Resources() (cu.FuncInfo, string) {
	r, err := device()
	if err != nil {
		return cu.FuncInfo{}, ""
	}
	return r.info[p.kernel], r.arch
}

// Ring is mega_decode's ring: its bytes a block (0 for persistent_decode).
func (p *Persistent) Ring() int { return p.ring }

// NewPersistent checks that the kernel takes the model, uploads its
// parameters and scratch, and sizes the grid so that every block is
// resident at once (the occupancy API). x (Dim floats) is the residual
// stream, q (Heads·HeadDim) the queries, po and pml DecodeAttention's
// scratch, posp the token's position, cosT and sinT the rope tables.
func (l *Launcher) NewPersistent(sh PersistentShape, layers []PersistentLayer, x, q, po, pml, posp, cosT, sinT cu.Ptr) (*Persistent, error) {
	if err := checkPersistent(sh, layers); err != nil {
		return nil, fmt.Errorf("persistent decode: %w", err)
	}
	kernel, load := "persistent_decode", l.r.loadPersistent
	if sh.Mega {
		if sh.NeoX {
			return nil, fmt.Errorf("persistent decode: mega takes the rope's adjacent pairs only, not NeoX's")
		}
		kernel, load = "mega_decode", l.r.loadMega
	}
	if err := load(l.T); err != nil {
		return nil, err
	}
	fn := l.r.fns[kernel]
	xqMax := 0
	for _, L := range layers {
		for _, w := range []Weights{L.Q, L.O, L.Gate, L.Down} {
			xqMax = max(xqMax, actBytes(w))
		}
	}
	shared := 4*max(sh.Dim, sh.FFN) + xqMax + 16
	static := l.r.info[kernel].StaticShared
	ringAt, ring := 0, 0
	if sh.Mega {
		ringAt = (shared + 15) &^ 15
		ring = (l.r.dev.SharedOptin - static - ringAt) &^ 15
		need := 3 * megaLargestRound(sh, layers)
		if sh.Ring > 0 {
			ring = min(ring, max(need, (sh.Ring+15)&^15))
		}
		if ring < need {
			return nil, fmt.Errorf("persistent decode: mega's ring needs %d bytes of shared memory a block (three of its largest rounds), %d left", need, ring)
		}
		shared = ringAt + ring
	}
	if opt := l.r.dev.SharedOptin; opt > 0 && shared+static > opt {
		return nil, fmt.Errorf("persistent decode: %d bytes of shared memory a block, the device allows %d", shared+static, opt)
	}
	if shared+static > 48<<10 {
		if err := l.T.SetMaxDynamicShared(fn, shared); err != nil {
			return nil, fmt.Errorf("persistent decode: %w", err)
		}
	}
	occ, err := l.T.MaxActiveBlocks(fn, persistThreads, shared)
	if err != nil {
		return nil, fmt.Errorf("persistent decode: %w", err)
	}
	if occ < 1 {
		return nil, fmt.Errorf("persistent decode: no block of %d threads and %d bytes of shared memory fits a multiprocessor", persistThreads, shared)
	}
	blocks := l.r.dev.SMs
	if sh.Blocks > 0 {
		if sh.Blocks > occ*l.r.dev.SMs {
			return nil, fmt.Errorf("persistent decode: %d blocks asked for, %d fit at once (%d a multiprocessor)", sh.Blocks, occ*l.r.dev.SMs, occ)
		}
		blocks = sh.Blocks
	}
	p := &Persistent{sh: sh, kernel: kernel, layers: len(layers), blocks: blocks, shared: shared, ringAt: ringAt, ring: ring, flag: make([]uint32, 1)}
	alloc := func(n int) (cu.Ptr, error) {
		ptr, err := l.Alloc(n)
		if err == nil {
			p.allocs = append(p.allocs, ptr)
		}
		return ptr, err
	}
	fail := func(err error) (*Persistent, error) {
		p.Free(l)
		return nil, fmt.Errorf("persistent decode: %w", err)
	}
	h, err := alloc(4 * sh.FFN)
	if err != nil {
		return fail(err)
	}
	xqa, err := alloc(actBytes(layers[0].O))
	if err != nil {
		return fail(err)
	}
	if p.bar, err = alloc(8); err != nil {
		return fail(err)
	}
	p.errp = p.bar.Add(4)
	lay := make([]uint64, 0, len(layers)*layerWords)
	for _, L := range layers {
		ws := []Weights{L.Q, L.K, L.V, L.O, L.Gate, L.Up, L.Down}
		for _, w := range ws {
			lay = append(lay, uint64(w.P))
		}
		for _, w := range ws {
			lay = append(lay, uint64(fmtCode[w.Type]))
		}
		for _, w := range []Weights{L.Q, L.O, L.Gate, L.Down} {
			qt, _ := qtCode(ledger.ActivationType(w.Type))
			lay = append(lay, uint64(qt))
		}
		lay = append(lay, uint64(L.AttnNorm), uint64(L.FFNNorm), uint64(L.KC), uint64(L.VC))
	}
	layP, err := alloc(8 * len(lay))
	if err != nil {
		return fail(err)
	}
	flags := uint64(0)
	if sh.Prefetch {
		flags |= 1
	}
	if sh.NeoX {
		flags |= 2
	}
	if sh.WatchdogTest {
		flags |= 4
	}
	if sh.Timing {
		flags |= 8
		if p.times, err = alloc(8 * phaseMarks * len(layers)); err != nil {
			return fail(err)
		}
		// Marks a kernel never writes (mega's steps have no prologue
		// marks) read 0.
		if err = l.T.MemsetD32Async(p.times, 0, 2*phaseMarks*len(layers), l.S); err != nil {
			return fail(err)
		}
	}
	if sh.Timeout <= 0 {
		sh.Timeout = time.Second
	}
	p.sh = sh
	params := []uint64{uint64(x), uint64(q), uint64(h), uint64(po), uint64(pml), uint64(xqa), uint64(posp), uint64(cosT), uint64(sinT),
		uint64(p.bar), uint64(p.errp), uint64(layP),
		uint64(sh.Dim), uint64(sh.Heads), uint64(sh.KVHeads), uint64(sh.HeadDim), uint64(sh.NCtx), uint64(sh.FFN),
		uint64(blockFor(sh.Dim)), flags, uint64(sh.Timeout.Nanoseconds()),
		uint64(math.Float32bits(sh.Eps)) | uint64(math.Float32bits(sh.Scale))<<32, uint64(p.times),
		uint64(ring)} // MDecode's last word; persistent_decode reads the PDecode before it
	if len(params) != paramWords+1 {
		panic("persistent decode: the parameter block does not match persistent.cu's PDecode")
	}
	if p.params, err = alloc(8 * len(params)); err != nil {
		return fail(err)
	}
	if err := cu.HtoD(l.T, layP, words(lay)); err != nil {
		return fail(err)
	}
	if err := cu.HtoD(l.T, p.params, words(params)); err != nil {
		return fail(err)
	}
	if err := p.Reset(l); err != nil {
		return fail(err)
	}
	return p, nil
}

// megaUnits is MUNITS in mega.cu: the units of a round, one a warp.
const megaUnits = 8

// megaLargestRound is the bytes of mega_decode's largest round: 8 units of
// a product (a unit is two Q/K/V or O rows, gate's row with up's, or a
// down row).
func megaLargestRound(sh PersistentShape, layers []PersistentLayer) int {
	rb := func(w Weights) int { return w.f.devRow(w.Cols) }
	big := 0
	for _, L := range layers {
		big = max(big, 2*rb(L.Q), 2*rb(L.K), 2*rb(L.V), 2*rb(L.O), rb(L.Gate)+rb(L.Up), rb(L.Down))
	}
	return megaUnits * big
}

// layerWords and paramWords are PLAYER_WORDS and PDECODE_WORDS.
const (
	layerWords = 22
	paramWords = 23
	// phaseMarks is PMARKS: Timing's marks a layer: a step's end (odd) and
	// the barrier after it (even), from the layer's start (0), 0 to 11;
	// persistent.cu's prologues' ends (the norm and quantization before
	// Q/K/V, the copy before O, the norm before gate/up, h's quantization
	// before down) 12 to 15.
	phaseMarks = 16
)

// words is v as little-endian bytes (what the device reads).
func words(v []uint64) []byte {
	b := make([]byte, 8*len(v))
	for i, w := range v {
		binary.LittleEndian.PutUint64(b[8*i:], w)
	}
	return b
}

// actBytes is the bytes of one activation row that w's matvec reads.
func actBytes(w Weights) int { return actRowBytes(w.Type, w.Cols) }

// checkPersistent says why the kernel cannot take the model, if it cannot.
func checkPersistent(sh PersistentShape, layers []PersistentLayer) error {
	hd, qd, kvd := sh.HeadDim, sh.Heads*sh.HeadDim, sh.KVHeads*sh.HeadDim
	switch {
	case len(layers) == 0:
		return fmt.Errorf("no layers")
	case sh.KVHeads <= 0 || sh.Heads%sh.KVHeads != 0 || sh.Heads/sh.KVHeads > persistMaxGroup:
		return fmt.Errorf("%d query heads over %d KV heads (at most %d a KV head)", sh.Heads, sh.KVHeads, persistMaxGroup)
	case hd < 32 || hd > 128 || hd%32 != 0:
		return fmt.Errorf("heads of %d (32, 64, 96 or 128 take it)", hd)
	case sh.Dim%2 != 0 || sh.FFN%2 != 0 || sh.Dim > 1<<20:
		return fmt.Errorf("odd dimensions %d, %d", sh.Dim, sh.FFN)
	}
	for i, L := range layers {
		for _, c := range []struct {
			name       string
			w          Weights
			rows, cols int
		}{{"q", L.Q, qd, sh.Dim}, {"k", L.K, kvd, sh.Dim}, {"v", L.V, kvd, sh.Dim}, {"o", L.O, sh.Dim, qd},
			{"gate", L.Gate, sh.FFN, sh.Dim}, {"up", L.Up, sh.FFN, sh.Dim}, {"down", L.Down, sh.Dim, sh.FFN}} {
			if c.w.f == nil {
				return fmt.Errorf("layer %d %s: %s weights have no kernels", i, c.name, c.w.Type)
			}
			if c.w.Rows != c.rows || c.w.Cols != c.cols {
				return fmt.Errorf("layer %d %s: %d×%d, want %d×%d", i, c.name, c.w.Rows, c.w.Cols, c.rows, c.cols)
			}
		}
		at := ledger.ActivationType(L.Q.Type)
		if ledger.ActivationType(L.K.Type) != at || ledger.ActivationType(L.V.Type) != at {
			return fmt.Errorf("layer %d: q, k and v read different activation types", i)
		}
		if L.Gate.Type != L.Up.Type {
			return fmt.Errorf("layer %d: gate (%s) and up (%s) differ in format", i, L.Gate.Type, L.Up.Type)
		}
		if ledger.ActivationType(L.O.Type) == quant.Q8_K && 256%hd != 0 {
			return fmt.Errorf("layer %d: heads of %d do not tile O's 256-value activation blocks", i, hd)
		}
	}
	return nil
}

// Reset zeroes the barrier and the watchdog's flag (after a failed step).
func (p *Persistent) Reset(l *Launcher) error {
	if err := l.T.MemsetD32Async(p.bar, 0, 2, l.S); err != nil {
		return err
	}
	return l.T.Sync(l.S)
}

// Run enqueues layers [l0, l1) of a decode step: x holds the token's
// embedding (or the residual after layer l0-1), and holds the residual
// after layer l1-1 when it is done; the layers' caches get the position's
// keys and values. Launched without programmatic dependent launch: the
// barrier needs the whole grid resident, not sharing the machine with a
// kernel still waiting.
func (p *Persistent) Run(l *Launcher, l0, l1 int) error {
	if l0 < 0 || l1 > p.layers || l0 >= l1 {
		return fmt.Errorf("persistent decode: layers [%d, %d) of %d", l0, l1, p.layers)
	}
	pdl := l.T.PDL
	l.T.PDL = false
	defer func() { l.T.PDL = pdl }()
	if p.ring > 0 {
		return l.T.Launch(l.r.fns[p.kernel], cu.D1(p.blocks), cu.D1(persistThreads), p.shared, l.S,
			p.params.Arg(), cu.I32(l0), cu.I32(l1), cu.I32(p.ringAt))
	}
	return l.T.Launch(l.r.fns[p.kernel], cu.D1(p.blocks), cu.D1(persistThreads), p.shared, l.S,
		p.params.Arg(), cu.I32(l0), cu.I32(l1))
}

// EnqueueCheck enqueues the copy of the watchdog's flag that Check reads
// once the stream is synchronized.
func (p *Persistent) EnqueueCheck(l *Launcher) error {
	p.flag[0] = 0
	return cu.DtoHAsync(l.T, p.flag, p.errp, l.S)
}

// Check, after EnqueueCheck and a synchronization, reports a barrier that
// timed out (its outputs are garbage then) and resets the barrier.
func (p *Persistent) Check(l *Launcher) error {
	if f := p.flag[0]; f != 0 {
		err := fmt.Errorf("persistent decode: grid barrier %d of the launch waited past %v (blocks not all resident?): the step's outputs are void",
			f-1, p.sh.Timeout)
		if rerr := p.Reset(l); rerr != nil {
			return fmt.Errorf("%w; resetting the barrier: %v", err, rerr)
		}
		return err
	}
	return nil
}

// PhaseTimes waits for the stream and returns Timing's marks of the last
// launch, in nanoseconds from layer l0's start: phaseMarks a layer, the
// unused ones 0. Nil without Timing.
func (p *Persistent) PhaseTimes(l *Launcher) ([]int64, error) {
	if p.times == 0 {
		return nil, nil
	}
	raw := make([]uint64, phaseMarks*p.layers)
	if err := cu.DtoHAsync(l.T, raw, p.times, l.S); err != nil {
		return nil, err
	}
	if err := l.T.Sync(l.S); err != nil {
		return nil, err
	}
	out := make([]int64, len(raw))
	var t0 uint64
	for i, v := range raw {
		if v != 0 && t0 == 0 {
			t0 = v
		}
		if v != 0 {
			out[i] = int64(v - t0)
		}
	}
	return out, nil
}

// Free releases the kernel's device memory.
func (p *Persistent) Free(l *Launcher) {
	for _, a := range p.allocs {
		_ = l.T.Free(a)
	}
	p.allocs = nil
}

// ---- the matvec alone: cuda-persist -------------------------------------------

// persistMatVec enqueues pmv: dst[r] = W[r]·x with the persistent kernel's
// rows (two a warp, x staged in each block's shared memory).
func (r *gpu) persistMatVec(t *cu.Thread, s cu.Stream, f *format, dst, w cu.Ptr, rows int, x cu.Ptr, k int) error {
	qt, xb, err := r.lazyMatVec(t, persistentFile, f, k)
	if err != nil {
		return err
	}
	shared := xb + 16
	if shared > 48<<10 {
		return fmt.Errorf("cuda-persist: an activation row of %d bytes does not fit 48 KiB of shared memory", xb)
	}
	warps := persistThreads / 32
	blocks := min(r.dev.SMs, ((rows+1)/2+warps-1)/warps)
	return t.Launch(r.fns["pmv"], cu.D1(blocks), cu.D1(persistThreads), shared, s,
		dst.Arg(), w.Arg(), cu.I32(rows), x.Arg(), cu.I32(k), cu.I32(fmtCode[f.wt]), cu.I32(qt))
}

// lazyMatVec is what cuda-persist's and cuda-mega's matvecs over rows of k
// values of f need first: their kernels' code for the activation type,
// file loaded (once), and the bytes of the activation row they stage in
// shared memory.
func (r *gpu) lazyMatVec(t *cu.Thread, file lazyFile, f *format, k int) (qt, xb int, err error) {
	if qt, err = qtCode(ledger.ActivationType(f.wt)); err != nil {
		return 0, 0, err
	}
	if err := r.loadLazy(t, file); err != nil {
		return 0, 0, err
	}
	return qt, actRowBytes(f.wt, k), nil
}

// hostPersistMatVec is cuda-persist's host-slice form.
func hostPersistMatVec(f *format) ledger.MatVec { return hostMatVec(f, (*gpu).persistMatVec) }

// registerPersistent registers cuda-persist (from register.go's init, after
// the cuda variants).
func registerPersistent() {
	for _, wt := range []quant.Type{quant.Q4_K, quant.Q6_K, quant.Q8_0} {
		ledger.Register(ledger.Variant{Op: ledger.MatVecOp(wt), Name: "cuda-persist", Family: ledger.FamilyCUDA, Features: []string{Feature},
			Impl:  hostPersistMatVec(formats[wt]),
			Notes: "the persistent decode kernel's matvec (persistent.cu pmv): two rows a warp with their loads in flight together, the activations staged in each block's shared memory, one block of 256 threads a multiprocessor grid-striding over the rows; the lanes' sums are cuda's" + hostNote})
	}
}
