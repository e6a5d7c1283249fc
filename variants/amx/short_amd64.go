//go:build !noasm

package amx

import (
	"fmt"
	"sync"
	"unsafe"

	iamx "github.com/damascus-llm/damascus/internal/amx"
	"github.com/damascus-llm/damascus/internal/cpufeat"
	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/quant"
	"github.com/damascus-llm/damascus/variants/avx512"
)

// shortArgs is r16sKernel's argument block; the offsets are mirrored by
// the SA_ defines of short_amd64.s.
type shortArgs struct {
	w        *byte    // the first group's weights (avx512.Q4KR16Layout)
	x        *byte    // token 0's activations (avx512.PrepareQ4KR16)
	xstride  int      // bytes from one token's activations to the next
	dst      *float32 // the first group's row 0 of token 0
	lddBytes int      // dst bytes from one token to the next
	nb       int      // super-blocks a row
	groups   int      // groups of 16 rows
	n        int      // tokens, 1..16
	bbuf     *byte    // 4 KiB: a super-block's eight B tiles
	cbuf     *byte    // 8 KiB: eight sub-blocks' C tiles
	cfg      *byte    // the 64-byte tile configuration for n tokens
	flags    uint64   // flagAMX: tile products on AMX, else VPDPBUSD
}

// r16sKernel runs the groups of a.w for a.n tokens (short_amd64.s).
//
//go:noescape
func r16sKernel(a *shortArgs)

// shortScratch is one call's buffers, 64-byte aligned.
type shortScratch struct {
	buf  []byte
	args shortArgs
}

var shortPool = sync.Pool{New: func() any {
	s := &shortScratch{buf: make([]byte, 4096+8192+64+64)}
	off := (64 - int(uintptr(unsafe.Pointer(&s.buf[0]))%64)) % 64
	s.buf = s.buf[off : off+4096+8192+64]
	return s
}}

// shortTokens is the most tokens one kernel call takes: a tile's rows.
const shortTokens = 16

// shortConfig sets cfg to the kernel's tiles for n tokens: C tiles 0-3 n
// rows of 16 int32, A tiles 4-5 n rows of one sub-block's 32 activations,
// B tiles 6-7 the sub-block's eight k-quad rows of 16 × 4 weights.
func shortConfig(cfg []byte, n int) {
	c := iamx.NewConfig()
	for t := range 4 {
		c.SetTile(t, n, 64)
	}
	c.SetTile(4, n, 32)
	c.SetTile(5, n, 32)
	c.SetTile(6, 8, 64)
	c.SetTile(7, 8, 64)
	copy(cfg, c[:])
}

// Q4KR16MatMulShort is the batched decode product (matvec_batch) over the
// interleaved Q4_K layout through r16sKernel: sixteen tokens a call, one
// TDPBSUD a sub-block on AMX (amx true) or its VPDPBUSD twin. Each token's
// results do not depend on the others.
func Q4KR16MatMulShort(amx bool) ledger.MatMul {
	var flags uint64
	if amx {
		flags = flagAMX
	}
	return func(dst []float32, ldd int, w []byte, rows int, xr []byte, n, k int) {
		if rows == 0 || n == 0 {
			return
		}
		if amx {
			if err := cpufeat.AMX(); err != nil {
				panic(fmt.Sprintf("amx matvec_batch/q4_k amx-int8-r16s called without AMX: %v", err))
			}
		}
		nb := k / quant.QK_K
		act, gbytes := nb*avx512.Q4KR16ActBytes, nb*avx512.Q4KR16Bytes
		groups := rows / avx512.Q4KR16Rows
		s := shortPool.Get().(*shortScratch)
		defer shortPool.Put(s)
		bbuf, cbuf, cfg := s.buf[:4096], s.buf[4096:4096+8192], s.buf[4096+8192:]
		a := &s.args
		for j0 := 0; j0 < n; j0 += shortTokens {
			nt := min(shortTokens, n-j0)
			shortConfig(cfg, nt)
			*a = shortArgs{w: &w[0], x: &xr[j0*act], xstride: act, dst: &dst[j0*ldd], lddBytes: 4 * ldd,
				nb: nb, groups: groups, n: nt, bbuf: &bbuf[0], cbuf: &cbuf[0], cfg: &cfg[0], flags: flags}
			if groups > 0 {
				r16sKernel(a)
			}
			if full := groups * avx512.Q4KR16Rows; full < rows {
				// The last group, padded with zero rows in the layout,
				// through a buffer of 16 rows a token.
				var tail [shortTokens * avx512.Q4KR16Rows]float32
				a.w, a.dst, a.lddBytes, a.groups = &w[groups*gbytes], &tail[0], 4*avx512.Q4KR16Rows, 1
				r16sKernel(a)
				for j := range nt {
					copy(dst[(j0+j)*ldd+full:(j0+j)*ldd+rows], tail[j*avx512.Q4KR16Rows:])
				}
			}
		}
	}
}

func init() {
	const notes = "issue 19 item 4, short prompts on AMX without unpacking into two digits: a layout line's nibbles are, masked, the B-tile rows of two k-quads, " +
		"so each Q4_K sub-block is one TDPBSUD (K = 32) of up to 16 tokens' activations read in place (TILELOADD, the tokens' stride) into exact int32 sums, " +
		"the scales applied in float a token at a time (as avx512-vnni-r16-f8); over avx512.Q4KR16Layout, so no weights beyond the decode's"
	ledger.Register(ledger.Variant{Op: ledger.MatVecBatchOp(quant.Q4_K), Name: "amx-int8-r16s", Family: ledger.FamilyFusedDequantAMX,
		Features: amxFeatures, Layout: avx512.Q4KR16Layout, Impl: Q4KR16MatMulShort(true),
		Notes: notes + ". Written and gated on a machine without AMX through its twin; its tile program is checked on AMX by the suite (scripts/device-suite.sh)"})
	ledger.Register(ledger.Variant{Op: ledger.MatVecBatchOp(quant.Q4_K), Name: "avx512-vnni-r16s", Family: ledger.FamilyAVX512VNNI,
		Features: vnniFeatures, Layout: avx512.Q4KR16Layout, Impl: Q4KR16MatMulShort(false),
		Notes: "the twin of matvec_batch/q4_k:amx-int8-r16s: the same unpacking and epilogue with each C row made by eight VPDPBUSDs, so the driver and the float epilogue are tested without AMX; not a rival (it unpacks and stores what -r16-f8 keeps in registers)"})
}
