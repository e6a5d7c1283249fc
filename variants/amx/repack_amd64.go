//go:build !noasm

package amx

import (
	"fmt"

	"github.com/damascus-llm/damascus/quant"
)

// Repacked weights skip the per-call unpack: the engine calls Repack once
// per weight matrix at load and MatMulRepacked (or MatMulRepackedVNNI) in
// place of the ledger MatMul for that matrix. The repacked form is the tile
// program's own panels, 16 rows × one super-block per wSBBytes (8832 bytes
// for 4096 weights: 2.16 bytes per weight, 3.8× Q4_K and 2.6× Q6_K), row
// tile by row tile.

// Repacked is a weight matrix in the tile program's panel layout.
type Repacked struct {
	Type    quant.Type
	Rows, K int
	panels  []byte
	format  weightFormat
}

func formatOf(t quant.Type) (weightFormat, error) {
	switch t {
	case quant.Q4_K:
		return formatQ4K, nil
	case quant.Q6_K:
		return formatQ6K, nil
	}
	return weightFormat{}, fmt.Errorf("amx: no tile program for %s weights (want Q4_K or Q6_K)", t)
}

// Repack converts rows rows of k values of type t (Q4_K or Q6_K) into
// panels. k must be a multiple of 256 and w exactly rows·RowSize bytes.
func Repack(t quant.Type, w []byte, rows, k int) (*Repacked, error) {
	f, err := formatOf(t)
	if err != nil {
		return nil, err
	}
	if rows <= 0 || k <= 0 || k%qk != 0 {
		return nil, fmt.Errorf("amx: repack %s: %d rows × %d values: want rows > 0 and k a positive multiple of %d", t, rows, k, qk)
	}
	nb := k / qk
	if len(w) != rows*nb*f.blkBytes {
		return nil, fmt.Errorf("amx: repack %s: %d bytes for %d rows × %d values, want %d", t, len(w), rows, k, rows*nb*f.blkBytes)
	}
	pack := f.pack
	if !vnniAvailable() {
		pack = map[quant.Type]func(panel, w []byte, rows, nb, sb0, nsb int){quant.Q4_K: packQ4K, quant.Q6_K: packQ6K}[t]
	}
	tiles := (rows + tileRows - 1) / tileRows
	r := &Repacked{Type: t, Rows: rows, K: k, format: f, panels: aligned(nil, tiles*nb*wSBBytes)}
	for rt := 0; rt < tiles; rt++ {
		r0 := rt * tileRows
		pack(r.panels[rt*nb*wSBBytes:], w[r0*nb*f.blkBytes:], min(tileRows, rows-r0), nb, 0, nb)
	}
	return r, nil
}

// Bytes is the size of the repacked panels.
func (r *Repacked) Bytes() int { return len(r.panels) }

func (r *Repacked) matMul(useAMX bool, dst []float32, ldd int, xq []byte, n int) {
	if n <= 0 {
		return
	}
	nb := r.K / qk
	r.format.run(program{amx: useAMX, kb: kBlock}, dst, ldd, r.Rows, xq, n, r.K, func(_ *scratch, r0, _, sb0, _ int) *byte {
		return &r.panels[((r0/tileRows)*nb+sb0)*wSBBytes]
	})
}

// MatMul computes dst[j*ldd+i] = W[i]·X[j] for the repacked W and n Q8_K
// activation rows (the ledger MatMul contract without w, rows and k) with
// AMX tile products. It needs AMX and panics with the reason otherwise.
func (r *Repacked) MatMul(dst []float32, ldd int, xq []byte, n int) { r.matMul(true, dst, ldd, xq, n) }

// MatMulVNNI is MatMul with AVX-512 VNNI tile products.
func (r *Repacked) MatMulVNNI(dst []float32, ldd int, xq []byte, n int) {
	r.matMul(false, dst, ldd, xq, n)
}

// Slice returns the rows r0 ≤ row < r1 of r as a view, for splitting work
// across threads; r0 must be a multiple of 16.
func (r *Repacked) Slice(r0, r1 int) (*Repacked, error) {
	if r0 < 0 || r0%tileRows != 0 || r1 <= r0 || r1 > r.Rows {
		return nil, fmt.Errorf("amx: slice rows [%d, %d) of %d: want 0 ≤ r0 < r1 ≤ rows with r0 a multiple of %d", r0, r1, r.Rows, tileRows)
	}
	nb := r.K / qk
	s := *r
	s.Rows = r1 - r0
	s.panels = r.panels[(r0/tileRows)*nb*wSBBytes:]
	return &s, nil
}
