package cuda

import (
	"fmt"

	cu "github.com/damascus-llm/damascus/internal/cuda"
)

// cuda-pro (kernels/mvp.cu): a single token's products with the step
// before them, done by every block for the whole row, as their prologue.

// ProMode is what a cuda-pro launch does before its products.
type ProMode int

const (
	ProStage ProMode = iota // stage the Q8_K row XQ (mv_xs's prologue)
	ProQuant                // quantize the float row XF (quantize_q8_k)
	ProNorm                 // X += Add, normalize with Norm, quantize (add_rmsnorm)
	ProSiLU                 // silu(XF)·U, quantized (silu_mul_q)
)

// Prologue is a cuda-pro launch's prologue; fields its mode does not read
// stay zero.
type Prologue struct {
	Mode ProMode
	XQ   cu.Ptr // ProStage: one Q8_K row
	XF   cu.Ptr // ProQuant: the float row; ProSiLU: the gate
	U    cu.Ptr // ProSiLU: the up projection
	// ProNorm: the residual X, what is added into it (0: nothing), the
	// norm's weights and epsilon, and, with Add, a device uint32 that is 0
	// and that no other launch in flight uses (the kernel leaves it 0).
	X, Add, Norm cu.Ptr
	Eps          float32
	Counter      cu.Ptr
}

// proKernel is the cuda-pro kernel of rows rows a warp (mv_pro1, mv_pro2).
func proKernel(rows int) (string, error) {
	if rows != 1 && rows != 2 {
		return "", fmt.Errorf("cuda-pro: no kernel of %d rows a warp (1 or 2)", rows)
	}
	return fmt.Sprintf("mv_pro%d", rows), nil
}

// proShared is mv_pro's dynamic shared memory (kernels/mvp.cu's mvp_shared).
func proShared(k int, mode ProMode) int {
	n := xsShared(k)
	if mode != ProStage {
		n += 4 * k
	}
	return n
}

// MatVecPro enqueues p's prologue and one to three products over its row
// of k values, dst[i] = W[i]·row, on the cuda-pro kernel of rows rows a
// warp. The weights must be Q4_K or Q6_K (XSTakes).
func (l *Launcher) MatVecPro(rows int, p Prologue, k int, dst []cu.Ptr, w []Weights) error {
	name, err := proKernel(rows)
	if err != nil {
		return err
	}
	if len(w) < 1 || len(w) > 3 || len(dst) != len(w) {
		return fmt.Errorf("cuda-pro: one to three products a launch, got %d", len(w))
	}
	if p.Mode < ProStage || p.Mode > ProSiLU {
		return fmt.Errorf("cuda-pro: no prologue %d", p.Mode)
	}
	sh := proShared(k, p.Mode)
	if k%256 != 0 || sh > 48<<10 {
		return fmt.Errorf("cuda-pro: rows of %d values (want a multiple of 256 whose prologue fits 48 KiB of shared memory)", k)
	}
	if p.Mode == ProNorm && p.Add != 0 && p.Counter == 0 {
		return fmt.Errorf("cuda-pro: a residual add needs a counter")
	}
	segs, err := xsSegs("cuda-pro", dst, w, k)
	if err != nil {
		return err
	}
	args, groups, err := xsSegArgs("cuda-pro", segs, rows)
	if err != nil {
		return err
	}
	args = append([]cu.Arg{cu.I32(int(p.Mode)), p.XQ.Arg(), p.XF.Arg(), p.X.Arg(), p.Add.Arg(), p.Norm.Arg(), cu.F32(p.Eps),
		p.U.Arg(), p.Counter.Arg(), cu.I32(k)}, args...)
	fn := l.r.fns[name]
	occ, err := l.T.MaxActiveBlocks(fn, 32*xsWarps, sh)
	if err != nil {
		return fmt.Errorf("cuda-pro: %w", err)
	}
	grid := min(groups, max(1, occ)*l.r.dev.SMs)
	return l.T.Launch(fn, cu.D1(grid), cu.D1(32*xsWarps), sh, l.S, args...)
}
