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
	bbuf     *byte    // 4 KiB: a super-block's B tiles
	cbuf     *byte    // its sub-blocks' C tiles (8 KiB Q4_K, 16 KiB Q6_K)
	cfg      *byte    // the 64-byte tile configuration for n tokens
	flags    uint64   // flagAMX: tile products on AMX, else VPDPBUSD
	sbuf     *byte    // Q6_K: 1 KiB, d·sc of a super-block's sub-blocks
	tiles    int      // r16swKernel: whole tiles of 16 tokens
	save     [3]int   // r16swKernel's spill slots
	// The pipelined kernels' (r16spKernel, r16sp6Kernel) alternating
	// buffers: B tiles and C tiles of two super-blocks, Q6_K's d·sc of four.
	bslot [2]*byte
	cslot [2]*byte
	sslot [4]*byte
}

// r16sKernel runs the groups of a.w for a.n tokens (short_amd64.s).
//
//go:noescape
func r16sKernel(a *shortArgs)

// r16s6Kernel is r16sKernel for the interleaved Q6_K layout.
//
//go:noescape
func r16s6Kernel(a *shortArgs)

// r16spKernel is r16sKernel pipelined: each iteration unpacks super-block
// s+1, runs the products of s and the epilogue of s−1 (short_amd64.s).
//
//go:noescape
func r16spKernel(a *shortArgs)

// r16sp6Kernel is r16spKernel for the interleaved Q6_K layout.
//
//go:noescape
func r16sp6Kernel(a *shortArgs)

// r16swKernel is r16sKernel over a.tiles whole tiles of 16 tokens, each
// super-block unpacked once for all of them, the sums accumulated in dst.
//
//go:noescape
func r16swKernel(a *shortArgs)

// shortFormat is a weight type's short-step kernel and geometry.
type shortFormat struct {
	name   string
	kernel func(a *shortArgs)
	lay    *ledger.WeightLayout
	// subK is a sub-block's values: an A tile's bytes a row, four times a
	// B tile's rows.
	subK int
	// wide, when set, takes all the whole tiles of 16 tokens in one call.
	wide func(a *shortArgs)
}

var (
	shortQ4K = shortFormat{"q4_k", r16sKernel, avx512.Q4KR16Layout, 32, nil}
	shortQ6K = shortFormat{"q6_k", r16s6Kernel, avx512.Q6KR16Layout, 16, nil}
	// shortQ4KWide takes the whole tiles of 16 tokens in one pass over the
	// weights (r16swKernel), the rest through r16sKernel.
	shortQ4KWide = shortFormat{"q4_k", r16sKernel, avx512.Q4KR16Layout, 32, r16swKernel}
	// shortQ4KPipe and shortQ6KPipe are the pipelined kernels.
	shortQ4KPipe = shortFormat{"q4_k", r16spKernel, avx512.Q4KR16Layout, 32, nil}
	shortQ6KPipe = shortFormat{"q6_k", r16sp6Kernel, avx512.Q6KR16Layout, 16, nil}
)

// shortScratch is one call's buffers, 64-byte aligned.
type shortScratch struct {
	buf  []byte
	args shortArgs
}

var shortPool = sync.Pool{New: func() any {
	s := &shortScratch{buf: make([]byte, shortScratchBytes+64)}
	off := (64 - int(uintptr(unsafe.Pointer(&s.buf[0]))%64)) % 64
	s.buf = s.buf[off : off+shortScratchBytes]
	return s
}}

// setBuffers points a's buffers into buf (a shortScratch's): bbuf, cbuf
// and sbuf are the first of the pipelined kernels' slots.
func (a *shortArgs) setBuffers(buf []byte) {
	for i := range a.bslot {
		a.bslot[i] = &buf[i*shortBBuf]
		a.cslot[i] = &buf[2*shortBBuf+i*shortCBuf]
	}
	for i := range a.sslot {
		a.sslot[i] = &buf[2*shortBBuf+2*shortCBuf+i*shortSBuf]
	}
	a.bbuf, a.cbuf, a.sbuf = a.bslot[0], a.cslot[0], a.sslot[0]
}

// shortTokens is the most tokens one kernel call takes: a tile's rows.
const shortTokens = 16

// wideTiles is the most tiles of 16 tokens one r16swKernel call takes.
const wideTiles = 8

// The scratch: two B slots, two C slots (room for Q6_K's sixteen C tiles
// each), four scale slots (the pipelined kernels alternate between them,
// the others use the first of each), then cfg.
const (
	shortBBuf         = 4096
	shortCBuf         = 16 * 1024
	shortSBuf         = 1024
	shortScratchBytes = 2*shortBBuf + 2*shortCBuf + 4*shortSBuf + 64
)

// shortConfig sets cfg to the kernel's tiles for n tokens and sub-blocks
// of subK values: C tiles 0-3 n rows of 16 int32, A tiles 4-5 n rows of
// one sub-block's activations, B tiles 6-7 its subK/4 k-quad rows of
// 16 × 4 weights.
func shortConfig(cfg []byte, n, subK int) {
	c := iamx.NewConfig()
	for t := range 4 {
		c.SetTile(t, n, 64)
	}
	for t := 4; t < 6; t++ {
		c.SetTile(t, n, subK)
		c.SetTile(t+2, subK/4, 64)
	}
	copy(cfg, c[:])
}

// Q4KR16MatMulShort is the batched decode product (matvec_batch) over the
// interleaved Q4_K layout through r16sKernel: sixteen tokens a call, one
// TDPBSUD a sub-block on AMX (amx true) or its VPDPBUSD twin. Each token's
// results do not depend on the others.
func Q4KR16MatMulShort(amx bool) ledger.MatMul { return shortMatMul(shortQ4K, amx) }

// Q6KR16MatMulShort is Q4KR16MatMulShort over the interleaved Q6_K layout
// (r16s6Kernel).
func Q6KR16MatMulShort(amx bool) ledger.MatMul { return shortMatMul(shortQ6K, amx) }

// Q4KR16MatMulShortWide is Q4KR16MatMulShort with every whole tile of 16
// tokens in one pass over the weights (r16swKernel): a super-block is
// unpacked once for all the tiles, not once a tile.
func Q4KR16MatMulShortWide(amx bool) ledger.MatMul { return shortMatMul(shortQ4KWide, amx) }

// fewRows is the fewest tokens the -f8 hybrids send to AMX: fewer go
// through avx512-vnni-r16-f8, whose arithmetic is the short kernels' (the
// same bits, TestShortF8Hybrid), so a token's results still do not depend
// on how many others share its call. In L2 at 8 tokens the two are level
// (BenchmarkShortInCache, Intel dev VM, session 39: Q4_K 0.45 against 0.46
// TOPS); with fewer, the AMX kernel's per-super-block unpacking and tile
// stores are shared by too few tokens (the 1B's batched decode of 2 and 4
// streams lost 13 % through -r16sw against the shipped -r16-m4).
const fewRows = 8

// withF8 sends calls of fewer than fewRows tokens to f8, the rest to amx.
func withF8(amx, f8 ledger.MatMul) ledger.MatMul {
	return func(dst []float32, ldd int, w []byte, rows int, xr []byte, n, k int) {
		if n < fewRows {
			f8(dst, ldd, w, rows, xr, n, k)
			return
		}
		amx(dst, ldd, w, rows, xr, n, k)
	}
}

// Q4KR16MatMulShortPipe is Q4KR16MatMulShort through the pipelined kernel
// (r16spKernel): the same bits.
func Q4KR16MatMulShortPipe(amx bool) ledger.MatMul { return shortMatMul(shortQ4KPipe, amx) }

// Q6KR16MatMulShortPipe is Q6KR16MatMulShort through r16sp6Kernel.
func Q6KR16MatMulShortPipe(amx bool) ledger.MatMul { return shortMatMul(shortQ6KPipe, amx) }

func shortMatMul(f shortFormat, amx bool) ledger.MatMul {
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
				panic(fmt.Sprintf("amx matvec_batch/%s short-step kernel called without AMX: %v", f.name, err))
			}
		}
		nb := k / quant.QK_K
		act, gbytes := f.lay.ActBytes(k), f.lay.GroupBytes(k)
		groups := rows / avx512.Q4KR16Rows
		s := shortPool.Get().(*shortScratch)
		defer shortPool.Put(s)
		a, cfg := &s.args, s.buf[shortScratchBytes-64:]
		j0 := 0
		// The wide kernel takes the whole tiles of 16 tokens when the rows
		// are whole groups (every model's are; the rest go below).
		if tiles := n / shortTokens; f.wide != nil && tiles > 0 && groups > 0 && groups*avx512.Q4KR16Rows == rows {
			shortConfig(cfg, shortTokens, f.subK)
			// Blocks of wideTiles tiles: their activations (a 3072-wide
			// row's 8 tiles: 442 KiB) stay in L2 beside the call's weights
			// while its groups stream past.
			for t0 := 0; t0 < tiles; t0 += wideTiles {
				j := t0 * shortTokens
				*a = shortArgs{w: &w[0], x: &xr[j*act], xstride: act, dst: &dst[j*ldd], lddBytes: 4 * ldd,
					nb: nb, groups: groups, n: shortTokens, cfg: &cfg[0], flags: flags,
					tiles: min(wideTiles, tiles-t0)}
				a.setBuffers(s.buf)
				f.wide(a)
			}
			j0 = tiles * shortTokens
		}
		for ; j0 < n; j0 += shortTokens {
			nt := min(shortTokens, n-j0)
			shortConfig(cfg, nt, f.subK)
			*a = shortArgs{w: &w[0], x: &xr[j0*act], xstride: act, dst: &dst[j0*ldd], lddBytes: 4 * ldd,
				nb: nb, groups: groups, n: nt, cfg: &cfg[0], flags: flags}
			a.setBuffers(s.buf)
			if groups > 0 {
				f.kernel(a)
			}
			if full := groups * avx512.Q4KR16Rows; full < rows {
				// The last group, padded with zero rows in the layout,
				// through a buffer of 16 rows a token.
				var tail [shortTokens * avx512.Q4KR16Rows]float32
				a.w, a.dst, a.lddBytes, a.groups = &w[groups*gbytes], &tail[0], 4*avx512.Q4KR16Rows, 1
				f.kernel(a)
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
	ledger.Register(ledger.Variant{Op: ledger.MatVecBatchOp(quant.Q4_K), Name: "amx-int8-r16sw", Family: ledger.FamilyFusedDequantAMX,
		Features: amxFeatures, Layout: avx512.Q4KR16Layout, Impl: Q4KR16MatMulShortWide(true),
		Notes: "matvec_batch/q4_k:amx-int8-r16s with every whole tile of 16 tokens in one pass (r16swKernel: a super-block unpacked once for all tiles, the sums accumulated in dst), for long prefill steps; each token's results the same bits as -r16s's. Written without AMX at hand; checked on AMX by the suite"})
	ledger.Register(ledger.Variant{Op: ledger.MatVecBatchOp(quant.Q4_K), Name: "avx512-vnni-r16sw", Family: ledger.FamilyAVX512VNNI,
		Features: vnniFeatures, Layout: avx512.Q4KR16Layout, Impl: Q4KR16MatMulShortWide(false),
		Notes: "the twin of matvec_batch/q4_k:amx-int8-r16sw (C rows by VPDPBUSDs): tests its driver and accumulation without AMX; not a rival"})
	ledger.Register(ledger.Variant{Op: ledger.MatVecBatchOp(quant.Q6_K), Name: "amx-int8-r16s", Family: ledger.FamilyFusedDequantAMX,
		Features: amxFeatures, Layout: avx512.Q6KR16Layout, Impl: Q6KR16MatMulShort(true),
		Notes: "the Q6_K twin of matvec_batch/q4_k:amx-int8-r16s: each sub-block's four k-quads of 6-bit quants built once into a 4 × 64-byte B tile, one TDPBSUD (K = 16) a sub-block, " +
			"a token's sum less 32 × its activations' sum folded in by one FMA with d·sc. Written and gated on a machine without AMX through its twin; checked on AMX by the suite"})
	ledger.Register(ledger.Variant{Op: ledger.MatVecBatchOp(quant.Q6_K), Name: "avx512-vnni-r16s", Family: ledger.FamilyAVX512VNNI,
		Features: vnniFeatures, Layout: avx512.Q6KR16Layout, Impl: Q6KR16MatMulShort(false),
		Notes: "the twin of matvec_batch/q6_k:amx-int8-r16s (each C row by four VPDPBUSDs): tests its driver and epilogue without AMX; not a rival"})
	const f8Notes = " for calls of at least 8 tokens, avx512-vnni-r16-f8 for fewer (the same arithmetic, so the same bits for a token whatever the call's size: " +
		"TestShortF8Hybrid); for the Intel short prompts (issue 19 item 4) without losing the batched decode of 2-4 streams that the AMX kernel alone loses (-13 % at 2 and 4 streams, 1B, Intel dev VM, session 39)"
	ledger.Register(ledger.Variant{Op: ledger.MatVecBatchOp(quant.Q4_K), Name: "amx-int8-r16sw-f8", Family: ledger.FamilyFusedDequantAMX,
		Features: amxFeatures, Layout: avx512.Q4KR16Layout, Impl: withF8(Q4KR16MatMulShortWide(true), avx512.Q4KR16MatMulF),
		Notes: "matvec_batch/q4_k:amx-int8-r16sw" + f8Notes})
	ledger.Register(ledger.Variant{Op: ledger.MatVecBatchOp(quant.Q6_K), Name: "amx-int8-r16s-f8", Family: ledger.FamilyFusedDequantAMX,
		Features: amxFeatures, Layout: avx512.Q6KR16Layout, Impl: withF8(Q6KR16MatMulShort(true), avx512.Q6KR16MatMulF),
		Notes: "matvec_batch/q6_k:amx-int8-r16s" + f8Notes})
	const pipeNotes = "-r16s pipelined (r16spKernel, r16sp6Kernel): each iteration unpacks super-block s+1, runs the tile products of s and the float epilogue of s−1, " +
		"the B tiles, C tiles (and Q6_K's d·sc) in alternating slots, so no phase waits for the one before it to go through memory (a tile load does not forward from the store buffer: " +
		"in -r16s each super-block's unpack, products and epilogue run one after the other); each token's results the same bits as -r16s's (TestShortPipeMatchesShort). A loser on the Intel dev VM (session 39; family 6, AMX, 2 vCPUs): in L2, one core, n=16 (BenchmarkShortInCache) Q4_K 0.65 against -r16s's 0.70 TOPS, Q6_K 0.26 against 0.33; " +
		"the 1B with both types through it (crossover 64, 20 reps, two alternations) pp16 249-253 against 270-273 tok/s, pp32 320-332 against 332-360. So the short step is not held by its phases waiting on each other through memory but by the work itself (the float epilogue and the tile stores and loads of the C and B tiles)"
	for _, t := range []struct {
		typ  quant.Type
		lay  *ledger.WeightLayout
		impl func(bool) ledger.MatMul
	}{{quant.Q4_K, avx512.Q4KR16Layout, Q4KR16MatMulShortPipe}, {quant.Q6_K, avx512.Q6KR16Layout, Q6KR16MatMulShortPipe}} {
		ledger.Register(ledger.Variant{Op: ledger.MatVecBatchOp(t.typ), Name: "amx-int8-r16sp", Family: ledger.FamilyFusedDequantAMX,
			Features: amxFeatures, Layout: t.lay, Impl: t.impl(true), Notes: "matvec_batch/" + ledger.TypeName(t.typ) + ":amx-int8" + pipeNotes})
		ledger.Register(ledger.Variant{Op: ledger.MatVecBatchOp(t.typ), Name: "avx512-vnni-r16sp", Family: ledger.FamilyAVX512VNNI,
			Features: vnniFeatures, Layout: t.lay, Impl: t.impl(false),
			Notes: "the twin of matvec_batch/" + ledger.TypeName(t.typ) + ":amx-int8-r16sp (C rows by VPDPBUSDs): tests its pipeline, slots and driver without AMX; not a rival"})
	}
}
