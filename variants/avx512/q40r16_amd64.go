//go:build !noasm

package avx512

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/quant"
)

// q40r16Dot (PREFETCHT0) and q40r16DotN (PREFETCHNTA): groups groups of 16
// interleaved Q4_0 rows, nb blocks each, against one token's activations
// laid out by PrepareQ40R16, every weight line prefetched dist bytes ahead
// when dist > 0 (q40r16_amd64.s).
//
//go:noescape
func q40r16Dot(w, x *byte, dst *float32, nb, groups, dist int)

//go:noescape
func q40r16DotN(w, x *byte, dst *float32, nb, groups, dist int)

// gemmPackQ40R16 writes the panel gemmPackQ40 writes (k-quad j of row r at
// 64j+4r, then 16 float32 d_w) from a 16-row group of the interleaved
// layout (g, nb blocks): line j is k-quads j (low nibbles) and 4+j (high)
// of the 16 rows as they stand.
func gemmPackQ40R16(panel, g []byte, nb int) {
	const lo = 0x0F0F0F0F0F0F0F0F
	for b := range nb {
		src, p := g[b*Q40R16Bytes:][:Q40R16Bytes], panel[b*gemmPanelBlock:][:gemmPanelBlock]
		for j := range 4 {
			line := src[32+64*j:][:64]
			for o := 0; o < 64; o += 8 {
				v := binary.LittleEndian.Uint64(line[o:])
				binary.LittleEndian.PutUint64(p[64*j+o:], v&lo)
				binary.LittleEndian.PutUint64(p[64*(4+j)+o:], v>>4&lo)
			}
		}
		for r := range 16 {
			binary.LittleEndian.PutUint32(p[512+4*r:], math.Float32bits(quant.FP16ToFloat32(binary.LittleEndian.Uint16(src[2*r:]))))
		}
	}
}

func init() {
	feats := []string{"avx512f", "avx512bw", "avx512vl", "avx512vnni", "f16c"}
	const note = "Q4_0 rows interleaved 16 to a 64-byte line (r16blocks.go, 18 bytes a row and block as stored), a line one ZMM of 16 rows: " +
		"nibbles by a word shift and VPANDD, 8 VPDPBUSD a block against the broadcast activation dwords in two int32 chains, less 8·Σx, " +
		"d_w·d_x by one FMA a block and 16 rows (the one-row avx512-vnni kernel pays its widening and float step a row)"
	for _, f := range []struct {
		suffix string
		dist   int
		nta    bool
		batch  bool
	}{{"", 0, false, true}, {"-pf8k", 8192, false, false}, {"-nta8k", 8192, true, true}} {
		kernel, how := q40r16Dot, ""
		if f.dist > 0 {
			how = fmt.Sprintf("; every weight line prefetched %d KiB ahead (PREFETCHT0)", f.dist>>10)
		}
		if f.nta {
			kernel, how = q40r16DotN, fmt.Sprintf("; every weight line prefetched %d KiB ahead (PREFETCHNTA)", f.dist>>10)
		}
		dot := R16Dot(kernel, 32)
		ledger.Register(ledger.Variant{Op: ledger.MatVecOp(quant.Q4_0), Name: "avx512-vnni-r16" + f.suffix, Family: ledger.FamilyAVX512VNNI,
			Features: feats, Layout: Q40R16Layout, Impl: R16MatVec(Q40R16Layout, dot, f.dist), Notes: note + how})
		if f.batch {
			ledger.Register(ledger.Variant{Op: ledger.MatVecBatchOp(quant.Q4_0), Name: "avx512-vnni-r16" + f.suffix, Family: ledger.FamilyAVX512VNNI,
				Features: feats, Layout: Q40R16Layout, Impl: R16Batch(Q40R16Layout, 32, dot, f.dist),
				Notes: ledger.MatVecOp(quant.Q4_0) + ":avx512-vnni-r16" + f.suffix + " for each token in turn over blocks of rows of about 128 KiB: " +
					"the batched decode product on the layout the matvec and the matmul read, so the model holds one copy; each token's results are the matvec's"})
		}
	}
	ledger.Register(ledger.Variant{Op: ledger.MatMulOp(quant.Q4_0), Name: "avx512-vnni-gemm-r16", Family: ledger.FamilyAVX512VNNI, Features: feats,
		Layout: Q40R16Layout, Impl: ledger.MatMul(gemmQ40R16.matMul),
		Notes: ledger.MatMulOp(quant.Q4_0) + ":avx512-vnni-gemm over the interleaved layout (the avx512-vnni-r16 matvec's): each 16-row panel written in Go from a group's lines " +
			"(line j is k-quads j and 4+j of the 16 rows as they stand) instead of gathered, so decode and prefill read one copy of the weights; the same panels, so the same bits, as avx512-vnni-gemm"})
}
