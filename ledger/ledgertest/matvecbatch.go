package ledgertest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/quant"
)

// MatVecBatch checks a matvec_batch variant of weight type wt: against the
// float64 reference over adversarial blocks (every Mode of weights, each
// token's activations of its own Mode), row lengths of Ks and token counts
// around its groups, with a gap between output rows; then the op's
// contract, that each token's outputs are bit for bit the same whatever
// the other tokens of the call and whichever weight rows it is given —
// every token alone, windows of tokens at odd offsets, sub-ranges of the
// rows — through the variant's MatMul and, where it has one, its prepared
// form (laid out in one range and in Align-sized pieces).
func MatVecBatch(t *testing.T, wt quant.Type, v ledger.Variant) {
	f := v.Impl.(ledger.MatMul)
	if v.Layout != nil { // held to the contract through its layout, repacked each call
		f = v.Layout.AsStoredMatMul(f)
	}
	r := NewRand(uint64(wt) + 101)
	xt := ActivationType(wt)
	ks := Ks(wt)
	for i, k := range ks {
		for _, wm := range Modes {
			n := []int{1, 2, 3, 7, 8, 9, 13, 16, 17, 33}[(i*len(Modes)+int(wm))%10]
			rows := Rows[r.IntN(len(Rows))] + 4
			name := fmt.Sprintf("k=%d/w=%s/n=%d/rows=%d", k, wm, n, rows)
			w := Misalign(weights(r, wt, rows, k, wm), r.IntN(64))
			xq := Misalign(batchActivations(r, wt, n, k), r.IntN(64))
			got := batchCall(t, name, f, w, rows, xq, n, k, rows+3)
			rowBytes := len(w) / rows
			xBytes := len(xq) / n
			tol := Tolerance(wt, k)
			for j := 0; j < n; j++ {
				for o := 0; o < rows; o++ {
					want, scale := Dot(wt, xt, w[o*rowBytes:(o+1)*rowBytes], xq[j*xBytes:(j+1)*xBytes], k)
					if g := got[j][o]; !Close(g, want, scale, tol) {
						t.Fatalf("%s: token %d, row %d: %s (tolerance %.3g)", name, j, o, Describe(g, want, scale), tol)
					}
				}
			}
		}
	}
	k := ks[len(ks)-1]
	rows, n := 21, 35
	w := weights(r, wt, rows, k, Mixed)
	xq := batchActivations(r, wt, n, k)
	full := batchCall(t, "whole batch", f, w, rows, xq, n, k, rows)
	xBytes, rowBytes := len(xq)/n, len(w)/rows
	type sub struct{ j0, j1, r0, r1 int }
	subs := []sub{{0, n, 3, 19}, {5, 6, 0, rows}, {1, 34, 0, rows}, {9, 26, 7, 8}, {n - 3, n, 0, rows}}
	for j := 0; j < n; j++ {
		subs = append(subs, sub{j, j + 1, 0, rows})
	}
	forms := []struct {
		name string
		call func(name string, w []byte, rows int, xq []byte, n int) [][]float32
	}{{"matmul", func(name string, w []byte, rows int, xq []byte, n int) [][]float32 {
		return batchCall(t, name, f, w, rows, xq, n, k, rows+1)
	}}}
	if p := v.Prepared; p != nil {
		for _, pieces := range []bool{false, true} {
			forms = append(forms, struct {
				name string
				call func(name string, w []byte, rows int, xq []byte, n int) [][]float32
			}{fmt.Sprintf("prepared/pieces=%v", pieces), func(name string, w []byte, rows int, xq []byte, n int) [][]float32 {
				return preparedCall(t, name, p, w, rows, xq, n, k, rows+1, pieces)
			}})
		}
	}
	for _, form := range forms {
		for _, s := range subs {
			name := fmt.Sprintf("%s: tokens [%d, %d), rows [%d, %d)", form.name, s.j0, s.j1, s.r0, s.r1)
			got := form.call(name, w[s.r0*rowBytes:s.r1*rowBytes], s.r1-s.r0, xq[s.j0*xBytes:s.j1*xBytes], s.j1-s.j0)
			for j := s.j0; j < s.j1; j++ {
				for o := s.r0; o < s.r1; o++ {
					if a, b := full[j][o], got[j-s.j0][o-s.r0]; math.Float32bits(a) != math.Float32bits(b) {
						t.Fatalf("%s: token %d, row %d is %v, in the whole batch %v: a token's result depends on the call", name, j, o, b, a)
					}
				}
			}
		}
	}
}

// batchActivations makes n activation rows, each of a Mode of its own.
func batchActivations(r *rand.Rand, wt quant.Type, n, k int) []byte {
	var xq []byte
	for j := 0; j < n; j++ {
		xq = append(xq, activations(r, wt, k, Modes[r.IntN(len(Modes))])...)
	}
	return xq
}

// batchCall runs f into guarded output rows ldd apart and returns each
// token's rows, failing on a write outside them.
func batchCall(t *testing.T, name string, f ledger.MatMul, w []byte, rows int, xq []byte, n, k, ldd int) [][]float32 {
	t.Helper()
	buf, dst := Guarded((n-1)*ldd + rows)
	for i := range dst {
		dst[i] = float32(math.NaN())
	}
	gap := make([]float32, len(dst))
	copy(gap, dst)
	f(dst, ldd, w, rows, xq, n, k)
	return batchRows(t, name, buf, dst, gap, rows, n, ldd)
}

// preparedCall is batchCall through the prepared form: the layout in one
// Prepare call, or in pieces of Align rows (the last one shorter), as
// workers sharing it would.
func preparedCall(t *testing.T, name string, p *ledger.PreparedMatMul, w []byte, rows int, xq []byte, n, k, ldd int, pieces bool) [][]float32 {
	t.Helper()
	prep := make([]byte, p.Size(n, k)+1)[1:] // off any alignment
	if !pieces {
		p.Prepare(prep, xq, 0, n, n, k)
	} else {
		for j0 := 0; j0 < n; j0 += p.Align {
			p.Prepare(prep, xq, j0, min(j0+p.Align, n), n, k)
		}
	}
	buf, dst := Guarded((n-1)*ldd + rows)
	for i := range dst {
		dst[i] = float32(math.NaN())
	}
	gap := make([]float32, len(dst))
	copy(gap, dst)
	p.Run(dst, ldd, w, rows, prep, n, k)
	return batchRows(t, name, buf, dst, gap, rows, n, ldd)
}

func batchRows(t *testing.T, name string, buf, dst, before []float32, rows, n, ldd int) [][]float32 {
	t.Helper()
	CheckGuards(t, buf)
	out := make([][]float32, n)
	for j := 0; j < n; j++ {
		out[j] = dst[j*ldd : j*ldd+rows]
		for o, v := range out[j] {
			if math.IsNaN(float64(v)) {
				t.Fatalf("%s: token %d, row %d left unwritten (or NaN)", name, j, o)
			}
		}
		if j < n-1 {
			for i := j*ldd + rows; i < (j+1)*ldd; i++ {
				if math.Float32bits(dst[i]) != math.Float32bits(before[i]) {
					t.Fatalf("%s: wrote between output rows (index %d)", name, i)
				}
			}
		}
	}
	return out
}

// SameAsMatVec fails t unless each of outs (n tokens' outputs of rows rows,
// token j's at [j*rows, (j+1)*rows)) holds, bit for bit, what mv writes
// into want for token j alone: the check that a batched product is its
// package's matvec token by token. A failure names what, the token and the
// row.
func SameAsMatVec(t testing.TB, what string, rows, n int, mv func(want []float32, j int), outs ...[]float32) {
	t.Helper()
	want := make([]float32, rows)
	for j := range n {
		mv(want, j)
		for o := range rows {
			for _, got := range outs {
				if g := got[j*rows+o]; math.Float32bits(g) != math.Float32bits(want[o]) {
					t.Fatalf("%s: token %d row %d: %v, the matvec %v", what, j, o, g, want[o])
				}
			}
		}
	}
}
