package cuda

import (
	"fmt"

	cu "github.com/damascus-llm/damascus/internal/cuda"
	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/quant"
)

// A PipeTile is one instance of mma_pipe.cu's kernels (cuda-mma-pipe):
// cuda-mma-int's arithmetic with the weight and activation tiles streamed
// into shared memory by cp.async, Stages super-blocks in flight, blocks of
// 128 weight rows × BN tokens.
type PipeTile struct {
	Variant string // the ledger variant
	BN      int    // tokens a block
	Threads int    // 4·BN: warps of 32 rows × 32 tokens, 4 along the rows
	// MinBlocks is the blocks an SM the kernels are built for
	// (__launch_bounds__): 65536/(Threads·MinBlocks) registers a thread.
	MinBlocks int
	stages    map[quant.Type]int // super-blocks in flight, by weight format
	kernels   map[quant.Type]string
	note      string
	// spills marks an instance ptxas spills for (TestMMAPipeNoSpills
	// logs its bytes instead of failing): measured as it is, never the
	// default while it spills.
	spills bool
}

// pipeBM is the weight rows of a block; pipeXS, pipeRow the bytes of a
// token's and a weight row's slot in shared memory (mma_pipe.cu's MP_XS,
// MP_Q4S, MP_Q6S).
const (
	pipeBM = 128
	pipeXS = 304
)

var pipeRow = map[quant.Type]int{quant.Q4_K: 144, quant.Q6_K: 240}

// PipeTiles are the instances, by variant.
var PipeTiles = []*PipeTile{
	{Variant: "cuda-mma-pipe", BN: 64, Threads: 256, MinBlocks: 1,
		stages:  map[quant.Type]int{quant.Q4_K: 3, quant.Q6_K: 3},
		kernels: map[quant.Type]string{quant.Q4_K: "q4k_mmap", quant.Q6_K: "q6k_mmap"}},
	// Two blocks an SM (16 warps to hide the unpacking's latency behind
	// each other's tensor-core work) at 128 registers a thread, and Q6_K
	// with two stages so that two blocks' shared memory fits.
	{Variant: "cuda-mma-pipe2", BN: 64, Threads: 256, MinBlocks: 2,
		stages:  map[quant.Type]int{quant.Q4_K: 3, quant.Q6_K: 2},
		kernels: map[quant.Type]string{quant.Q4_K: "q4k_mmap2", quant.Q6_K: "q6k_mmap2"},
		note:    "; two blocks an SM (128 registers a thread: ptxas spills 72 bytes for Q4_K, 80 for Q6_K)", spills: true},
}

// PipeTileNamed returns the instance of variant name, or nil.
func PipeTileNamed(name string) *PipeTile {
	for _, p := range PipeTiles {
		if p.Variant == name {
			return p
		}
	}
	return nil
}

// Shared is the dynamic shared memory a block of p takes for weights of wt.
func (p *PipeTile) Shared(wt quant.Type) int {
	return p.stages[wt] * (pipeBM*pipeRow[wt] + p.BN*pipeXS)
}

// pipeKernelNames lists mma_pipe.cu's kernels (module.go compiles them).
func pipeKernelNames() []string {
	var ks []string
	for _, p := range PipeTiles {
		for _, wt := range []quant.Type{quant.Q4_K, quant.Q6_K} {
			ks = append(ks, p.kernels[wt])
		}
	}
	return ks
}

// dynamicShared is the dynamic shared memory kernel is launched with (0 for
// those that take none); module.go raises the kernel's limit to it.
func dynamicShared(kernel string) int {
	if n := fattnDynamicShared(kernel); n > 0 {
		return n
	}
	for _, p := range PipeTiles {
		for wt, k := range p.kernels {
			if k == kernel {
				return p.Shared(wt)
			}
		}
	}
	return 0
}

// matMulPipe enqueues dst[j*ldd+r] = W[r]·X[j] on p's kernel for f.
func (r *gpu) matMulPipe(t *cu.Thread, s cu.Stream, f *format, p *PipeTile, dst cu.Ptr, ldd int, w cu.Ptr, rows int, x cu.Ptr, n, k int) error {
	name := p.kernels[f.wt]
	if name == "" {
		return fmt.Errorf("matmul: no %s kernel for %s", p.Variant, f.wt)
	}
	if (n+p.BN-1)/p.BN > 65535 {
		return fmt.Errorf("matmul: %d activation rows, at most %d", n, 65535*p.BN)
	}
	return t.Launch(r.fns[name], cu.D2((rows+pipeBM-1)/pipeBM, (n+p.BN-1)/p.BN), cu.D1(p.Threads), p.Shared(f.wt), s,
		dst.Arg(), cu.I32(ldd), w.Arg(), cu.I32(rows), x.Arg(), cu.I32(n), cu.I32(k))
}

// hostMatMulPipe is the ledger.MatMul of f on p: as hostMatMul, dst goes up
// and comes back whole.
func hostMatMulPipe(f *format, p *PipeTile) ledger.MatMul {
	return hostLaunchMatMul(f, func(r *gpu, t *cu.Thread, s cu.Stream, f *format, dst cu.Ptr, ldd int, w cu.Ptr, rows int, x cu.Ptr, n, k int) error {
		return r.matMulPipe(t, s, f, p, dst, ldd, w, rows, x, n, k)
	})
}

// registerPipe registers the instances for Q4_K and Q6_K (from register.go's
// init, after the cuda feature).
func registerPipe() {
	for _, wt := range []quant.Type{quant.Q4_K, quant.Q6_K} {
		f := formats[wt]
		for _, p := range PipeTiles {
			ledger.Register(ledger.Variant{Op: ledger.MatMulOp(wt), Name: p.Variant, Family: ledger.FamilyCUDA, Features: []string{Feature},
				Impl: hostMatMulPipe(f, p),
				Notes: fmt.Sprintf("cuda-mma-int's arithmetic (bit-identical outputs) with cp.async: %d super-blocks of raw weight blocks and Q8_K blocks in flight in shared memory, "+
					"128 rows × %d tokens a block (%d warps, each 32×32), ldmatrix fragments, quants unpacked in registers, Q4_K min sums on the tensor cores%s",
					p.stages[wt], p.BN, p.Threads/32, p.note) + hostNote})
		}
	}
}
