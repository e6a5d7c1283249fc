//go:build !noasm

package avx512

import (
	"fmt"

	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/quant"
	"github.com/damascus-llm/damascus/variants/internal/freelist"
	"github.com/damascus-llm/damascus/variants/internal/q8pack"
)

// The Q8_0 and Q4_0 GEMM (matmul/q8_0 and matmul/q4_0: avx512-vnni-gemm;
// gemm80_amd64.s). Their prefill used to loop the matvec: each token read
// every weight again. Here a 16-row panel of the weights is unpacked once
// per call and runs against every block of 12 tokens held in registers.
const (
	gemmTokens     = 12
	gemmPanelBlock = 576 // per 32-value block: 8 k-quads × 16 rows × 4 bytes, then 16 float32 d_w
	gemmActBlock   = 512 // per block and 12 tokens: 12 × 32 quants, 12 int32 offsets, 12 float32 d_x, padding
)

type gemmPackArgs struct {
	panel, w *byte
	nb       int
	mask     uint64
	idx      [16]int32
}

type gemmArgs struct {
	panel, x *byte
	dst      *float32
	lddBytes int
	nb, ntok int
	mask     uint64
}

//go:noescape
func gemmPackQ80(a *gemmPackArgs)

//go:noescape
func gemmPackQ40(a *gemmPackArgs)

//go:noescape
func gemmKernel(a *gemmArgs)

// A gemmFormat is a weight type of the GEMM: its block bytes, its panel
// packer and the offset c its unsigned bytes carry (u = w + c).
type gemmFormat struct {
	typ    quant.Type
	block  int
	pack   func(*gemmPackArgs)
	offset int32
	// packR16, for a format over an interleaved layout of 16 rows a group
	// (block: its bytes a row and block), packs the group at g instead.
	packR16 func(panel, g []byte, nb int)
}

var (
	gemmQ80      = gemmFormat{quant.Q8_0, q80Block, gemmPackQ80, 128, nil}
	gemmQ40      = gemmFormat{quant.Q4_0, q40Block, gemmPackQ40, 8, nil}
	gemmQ40R16   = gemmFormat{quant.Q4_0, Q40R16Bytes / Q40R16Rows, nil, 8, gemmPackQ40R16A}
	gemmQ40R16Go = gemmFormat{quant.Q4_0, Q40R16Bytes / Q40R16Rows, nil, 8, gemmPackQ40R16}
)

// gemmScratch is one call's panel and activation pack, kept between calls
// in gemmFree (see package freelist).
type gemmScratch struct{ panel, act []byte }

var gemmFree freelist.List[gemmScratch]

// matMul is the GEMM of format f (ledger.MatMul contract).
func (f gemmFormat) matMul(dst []float32, ldd int, w []byte, rows int, xq []byte, n, k int) {
	if rows <= 0 || n <= 0 {
		return
	}
	nb := k / 32
	if k%32 != 0 || len(w) < rows*nb*f.block || len(xq) < n*nb*q80Block || ldd < rows || len(dst) < (n-1)*ldd+rows {
		panic(fmt.Sprintf("avx512 %s gemm: bad operands: rows=%d k=%d n=%d ldd=%d len(w)=%d len(xq)=%d len(dst)=%d",
			f.typ, rows, k, n, ldd, len(w), len(xq), len(dst)))
	}
	if nb == 0 {
		for j := 0; j < n; j++ {
			clear(dst[j*ldd : j*ldd+rows])
		}
		return
	}
	s := gemmFree.Get()
	defer gemmFree.Put(s)
	blocks := (n + gemmTokens - 1) / gemmTokens
	s.act = q8pack.Grow(s.act, blocks*nb*gemmActBlock)
	q8pack.Layout{Tokens: gemmTokens, BlockBytes: gemmActBlock, OffsetAt: 384, DAt: 432, Offset: f.offset}.Pack(s.act, xq, n, nb)
	s.panel = q8pack.Grow(s.panel, nb*gemmPanelBlock)
	pa := gemmPackArgs{panel: &s.panel[0], nb: nb}
	for r := range pa.idx {
		pa.idx[r] = int32(r * nb * f.block)
	}
	for r0 := 0; r0 < rows; r0 += 16 {
		rr := min(16, rows-r0)
		if f.packR16 != nil {
			f.packR16(s.panel, w[r0*nb*f.block:], nb) // r0 is a multiple of 16: its group
		} else {
			pa.w, pa.mask = &w[r0*nb*f.block], 1<<rr-1
			f.pack(&pa)
		}
		for tb := 0; tb < blocks; tb++ {
			a := gemmArgs{panel: &s.panel[0], x: &s.act[tb*nb*gemmActBlock], dst: &dst[tb*gemmTokens*ldd+r0],
				lddBytes: 4 * ldd, nb: nb, ntok: min(gemmTokens, n-tb*gemmTokens), mask: 1<<rr - 1}
			gemmKernel(&a)
		}
	}
}

func init() {
	features := []string{"avx512f", "avx512bw", "avx512vl", "avx512vnni", "f16c"}
	for _, f := range []gemmFormat{gemmQ80, gemmQ40} {
		ledger.Register(ledger.Variant{Op: ledger.MatMulOp(f.typ), Name: "avx512-vnni-gemm", Family: ledger.FamilyAVX512VNNI, Features: features,
			Impl: ledger.MatMul(f.matMul),
			Notes: fmt.Sprintf("16 rows × 12 tokens in registers: per call each 16-row panel unpacked once by gathers into unsigned bytes (w+%d) as k-quads, "+
				"then per 32-value block 8 VPDPBUSD a token against its broadcast activation dword, the int32 sums started at −%d·Σx, d_w·d_x into float lanes", f.offset, f.offset)})
	}
}
