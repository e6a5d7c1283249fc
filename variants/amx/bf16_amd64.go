//go:build !noasm

package amx

import (
	"fmt"
	"unsafe"

	"github.com/damascus-llm/damascus/internal/cpufeat"
	"github.com/damascus-llm/damascus/quant"
)

// The AMX-BF16 rival: weights dequantized once (RepackBF16) into bf16
// panels, activations converted per call from Q8_K to bf16, TDPBF16PS
// accumulating in float32 over the whole K block (the scales live in the
// bf16 values, so there is no per-super-block epilogue). Its twin runs the
// same program with AVX512-BF16 VDPBF16PS.
//
// Layouts: the panel of a 16-row tile holds per super-block eight 32-k
// chunks of [16 k-pairs][16 rows][2 bf16] (bfWSBBytes); the activation pack
// of a token pair holds per super-block eight chunks of [2 token tiles][16
// tokens][32 bf16] (bfASBBytes).
const (
	bfChunks   = qk / 32
	bfWSBBytes = bfChunks * tileBytes
	bfASBBytes = bfChunks * 2 * tileBytes
)

type bf16Args struct {
	w0, w1       *byte // panels of two row tiles at the K block
	x            *byte
	dst          *float32
	lddBytes     int
	nsb, n       int
	mask0, mask1 uint64
	cbuf         *float32 // 4 KiB: C[token tile][row tile][16][16]
	cfg          *byte
	flags        uint64
	pairStride   int
}

//go:noescape
func bf16Kernel(a *bf16Args)

//go:noescape
func q8kToBF16(dst, src *byte, nb int)

// RepackedBF16 is a weight matrix dequantized into bf16 tile panels.
type RepackedBF16 struct {
	Rows, K int
	panels  []byte
}

// RepackBF16 dequantizes rows rows of k values of type t (any type
// quant.Dequantize knows; k a multiple of 256) into bf16 panels (2 bytes
// per weight, rounded to nearest even).
func RepackBF16(t quant.Type, w []byte, rows, k int) (*RepackedBF16, error) {
	if rows <= 0 || k <= 0 || k%qk != 0 {
		return nil, fmt.Errorf("amx: bf16 repack %s: %d rows × %d values: want rows > 0 and k a positive multiple of %d", t, rows, k, qk)
	}
	rowBytes, err := quant.RowSize(t, int64(k))
	if err != nil {
		return nil, fmt.Errorf("amx: bf16 repack: %w", err)
	}
	if int64(len(w)) != int64(rows)*rowBytes {
		return nil, fmt.Errorf("amx: bf16 repack %s: %d bytes for %d rows × %d values, want %d", t, len(w), rows, k, int64(rows)*rowBytes)
	}
	nb := k / qk
	tiles := (rows + tileRows - 1) / tileRows
	r := &RepackedBF16{Rows: rows, K: k, panels: aligned(nil, tiles*nb*bfWSBBytes)}
	clear(r.panels)
	f := make([]float32, k)
	for row := 0; row < rows; row++ {
		if err := quant.Dequantize(t, w[int64(row)*rowBytes:int64(row+1)*rowBytes], f); err != nil {
			return nil, fmt.Errorf("amx: bf16 repack row %d: %w", row, err)
		}
		tile, rr := row/tileRows, row%tileRows
		for kk, v := range f {
			sb, c, p, i := kk/qk, kk%qk/32, kk%32/2, kk%2
			off := (tile*nb+sb)*bfWSBBytes + c*tileBytes + p*64 + rr*4 + 2*i
			h := quant.Float32ToBF16(v)
			r.panels[off], r.panels[off+1] = byte(h), byte(h>>8)
		}
	}
	return r, nil
}

// Bytes is the size of the panels.
func (r *RepackedBF16) Bytes() int { return len(r.panels) }

// Slice returns rows r0 ≤ row < r1 as a view; r0 must be a multiple of 16.
func (r *RepackedBF16) Slice(r0, r1 int) (*RepackedBF16, error) {
	if r0 < 0 || r0%tileRows != 0 || r1 <= r0 || r1 > r.Rows {
		return nil, fmt.Errorf("amx: slice rows [%d, %d) of %d: want 0 ≤ r0 < r1 ≤ rows with r0 a multiple of %d", r0, r1, r.Rows, tileRows)
	}
	s := *r
	s.Rows = r1 - r0
	s.panels = r.panels[(r0/tileRows)*(r.K/qk)*bfWSBBytes:]
	return &s, nil
}

// MatMul computes dst[j*ldd+i] = W[i]·X[j] for n Q8_K activation rows with
// AMX-BF16 tile products. It needs AMX and panics with the reason otherwise.
func (r *RepackedBF16) MatMul(dst []float32, ldd int, xq []byte, n int) {
	r.matMul(true, dst, ldd, xq, n)
}

// MatMulAVX512 is MatMul with AVX512-BF16 VDPBF16PS products.
func (r *RepackedBF16) MatMulAVX512(dst []float32, ldd int, xq []byte, n int) {
	r.matMul(false, dst, ldd, xq, n)
}

func (r *RepackedBF16) matMul(useAMX bool, dst []float32, ldd int, xq []byte, n int) {
	if n <= 0 {
		return
	}
	rows, nb := r.Rows, r.K/qk
	if need := (n-1)*ldd + rows; len(dst) < need || ldd < rows || len(xq) < n*nb*q8kBytes {
		panic(fmt.Sprintf("amx bf16: bad operands: len(dst)=%d ldd=%d rows=%d n=%d k=%d len(xq)=%d", len(dst), ldd, rows, n, r.K, len(xq)))
	}
	var flags uint64
	if useAMX {
		if err := cpufeat.AMX(); err != nil {
			panic(fmt.Sprintf("amx bf16 called without AMX: %v", err))
		}
		flags |= flagAMX
	}
	s := getScratch()
	defer putScratch(s)
	pairs := (n + pairTokens - 1) / pairTokens
	s.pack = aligned(s.pack, pairs*nb*bfASBBytes)
	s.cbuf = aligned(s.cbuf, 4*tileBytes)
	if n%pairTokens != 0 {
		clear(s.pack[(pairs-1)*nb*bfASBBytes:])
	}
	for t := 0; t < n; t++ {
		p, tp := t/pairTokens, t%pairTokens
		off := p*nb*bfASBBytes + (tp/tileRows)*tileBytes + (tp%tileRows)*64
		q8kToBF16(&s.pack[off], &xq[t*nb*q8kBytes], nb)
	}
	a := bf16Args{
		lddBytes:   4 * ldd,
		n:          n,
		cbuf:       (*float32)(unsafe.Pointer(&s.cbuf[0])),
		cfg:        &tileConfig[0],
		pairStride: nb * bfASBBytes,
	}
	for sb0 := 0; sb0 < nb; sb0 += kBlock {
		a.nsb = min(kBlock, nb-sb0)
		a.x = &s.pack[sb0*bfASBBytes]
		a.flags = flags
		if sb0 > 0 {
			a.flags |= flagAccumulate
		}
		for r0 := 0; r0 < rows; r0 += 2 * tileRows {
			t0 := r0 / tileRows
			a.w0 = &r.panels[(t0*nb+sb0)*bfWSBBytes]
			a.w1 = a.w0
			a.mask0 = 1<<min(tileRows, rows-r0) - 1
			a.mask1 = 0
			if r0+tileRows < rows {
				a.w1 = &r.panels[((t0+1)*nb+sb0)*bfWSBBytes]
				a.mask1 = 1<<min(tileRows, rows-r0-tileRows) - 1
			}
			a.dst = &dst[r0]
			bf16Kernel(&a)
		}
	}
}
