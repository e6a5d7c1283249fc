//go:build !noasm

package amx

// kernelArgs is tileKernel's argument block; the offsets are mirrored by
// the ARG_ defines of kernel_amd64.s.
type kernelArgs struct {
	w          *byte    // weight panel of the row tile at the K block
	x          *byte    // activation pack of pair 0 at the K block
	dst        *float32 // &dst[first row of the tile]
	lddBytes   int      // dst row stride in bytes
	nsb        int      // super-blocks in the K block
	n          int      // tokens
	rowMask    uint64   // valid rows of the tile
	cbuf       *int32   // 8 KiB scratch: two halves of C[token tile][digit][16][16]
	acc        *float32 // 2 KiB scratch: 32 tokens × 16 rows
	cfg        *byte    // 64-byte tile configuration
	flags      uint64
	pairStride int // bytes from one pair's pack to the next
}

const (
	flagAMX        = 1   // tile products on AMX (else VPDPBUSD)
	flagIntMin     = 2   // subtract the bsum term before scaling (one scale d)
	flagAccumulate = 4   // add to dst instead of storing
	flagLag        = 16  // each super-block's epilogue one super-block late
	flagPrefetch   = 32  // tileKernelWR: prefetch the pair after next
	flagNoEpilogue = 64  // tileKernelWR, benchmarks only: skip the epilogue (wrong results)
	flagEarly      = 128 // tileKernelIL: load the next step's first operands before the stores
)

// tileKernel runs one row tile: for each token pair, every super-block of
// the K block (acc: 32 tokens).
//
//go:noescape
func tileKernel(a *kernelArgs)

// tileKernelWR runs one row tile the other way round: for each super-block,
// every token pair, so the super-block's weight tiles stay in L1 (acc: all
// ⌈n/32⌉ pairs).
//
//go:noescape
func tileKernelWR(a *kernelArgs)

// tileKernelIL is tileKernelWR with the next step's tile products
// interleaved into this step's epilogue (AMX only).
//
//go:noescape
func tileKernelIL(a *kernelArgs)
