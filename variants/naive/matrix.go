package naive

import (
	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/quant"
)

// rowBytes is the size of one row of k values of type t; k is a whole number
// of blocks by the kernel contract.
func rowBytes(t quant.Type, k int) int { return k / t.BlockSize() * t.TypeSize() }

// MatVec returns the scalar matrix-vector product for weight type wt, or nil
// when this package has no dot product for it.
func MatVec(wt quant.Type) ledger.MatVec {
	dot, ok := rowDots[wt]
	if !ok {
		return nil
	}
	at := ledger.ActivationType(wt)
	return func(dst []float32, w, xq []byte, k int) {
		wb, xb := rowBytes(wt, k), rowBytes(at, k)
		x := xq[:xb]
		for r := range dst {
			dst[r] = dot(w[r*wb:(r+1)*wb], x, k)
		}
	}
}

// MatMul returns the scalar matrix-matrix product for weight type wt: one
// dot product per output, activation row by activation row.
func MatMul(wt quant.Type) ledger.MatMul {
	dot, ok := rowDots[wt]
	if !ok {
		return nil
	}
	at := ledger.ActivationType(wt)
	return func(dst []float32, ldd int, w []byte, rows int, xq []byte, n, k int) {
		wb, xb := rowBytes(wt, k), rowBytes(at, k)
		for j := range n {
			x := xq[j*xb : (j+1)*xb]
			out := dst[j*ldd : j*ldd+rows]
			for r := range out {
				out[r] = dot(w[r*wb:(r+1)*wb], x, k)
			}
		}
	}
}
