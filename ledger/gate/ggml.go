package gate

import (
	"errors"
	"os"

	"github.com/damascus-llm/damascus/internal/ggml"
	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/ledger/workload"
	"github.com/damascus-llm/damascus/quant"
)

// GGMLEnv, set to 0, turns the ggml cross-check off.
const GGMLEnv = "DAMASCUS_GATE_GGML"

// GGMLStatus says whether the gate also compares with ggml's kernels: "on",
// or why not.
func GGMLStatus() string {
	if os.Getenv(GGMLEnv) == "0" {
		return "off (" + GGMLEnv + "=0)"
	}
	if err := ggml.Available(); err != nil {
		return "unavailable: " + err.Error()
	}
	return "on"
}

// ggmlResults computes, with the pinned ggml, the outputs at idx of the ops
// ggml has a CPU kernel for: matvec and matmul through vec_dot (the dot
// product llama.cpp's matrix multiplication calls), dequantize through
// to_float. It returns nil when ggml is unavailable or lacks the op.
func ggmlResults(w *workload.Workload, idx []int) ([]float64, error) {
	op := w.Op
	if op.Kind != ledger.KindMatVec && op.Kind != ledger.KindMatMul && op.Kind != ledger.KindDequantize {
		return nil, nil
	}
	if GGMLStatus() != "on" {
		return nil, nil
	}
	tr, err := ggml.Traits(op.Type)
	if err != nil {
		return nil, nil // a type this ggml does not know
	}
	s := w.Shape
	switch op.Kind {
	case ledger.KindDequantize:
		if !tr.CanDequantize {
			return nil, nil
		}
		y, err := ggml.Dequantize(op.Type, w.W, s.K)
		if err != nil {
			return nil, err
		}
		out := make([]float64, len(idx))
		for i, j := range idx {
			out[i] = float64(y[j])
		}
		return out, nil
	}
	if !tr.HasVecDot {
		return nil, nil
	}
	if tr.VecDotType != op.ActType() {
		return nil, errors.New("ggml's vec_dot for " + op.Type.String() + " takes " + tr.VecDotType.String() +
			" activations, the ledger's contract " + op.ActType().String())
	}
	rb, _ := quant.RowSize(op.Type, int64(s.K))
	ab, _ := quant.RowSize(op.ActType(), int64(s.K))
	out := make([]float64, len(idx))
	for i, j := range idx {
		col, row := 0, j
		if op.Kind == ledger.KindMatMul {
			col, row = j/w.LDD, j%w.LDD
		}
		v, err := ggml.VecDot(op.Type, s.K, w.W[int64(row)*rb:int64(row+1)*rb], w.XQ[int64(col)*ab:int64(col+1)*ab])
		if err != nil {
			return nil, err
		}
		out[i] = float64(v)
	}
	return out, nil
}
