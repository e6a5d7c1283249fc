package cuda

import (
	"fmt"

	cu "github.com/damascus-llm/damascus/internal/cuda"
	"github.com/damascus-llm/damascus/quant"
)

// Device-side launches of the vector ops; every pointer is device memory.

func (r *gpu) rmsNorm(t *cu.Thread, s cu.Stream, dst, x, w cu.Ptr, n int, eps float32) error {
	return t.Launch(r.fns["rmsnorm_f32"], cu.D1(1), cu.D1(blockFor(n)), 0, s, dst.Arg(), x.Arg(), w.Arg(), cu.I32(n), cu.F32(eps))
}

func (r *gpu) siluMul(t *cu.Thread, s cu.Stream, dst, g, u cu.Ptr, n int) error {
	return t.Launch(r.fns["silu_mul_f32"], cu.D1(min((n+255)/256, 4096)), cu.D1(256), 0, s, dst.Arg(), g.Arg(), u.Arg(), cu.I32(n))
}

func (r *gpu) softmax(t *cu.Thread, s cu.Stream, x cu.Ptr, n int) error {
	return t.Launch(r.fns["softmax_f32"], cu.D1(1), cu.D1(blockFor(n)), 0, s, x.Arg(), cu.I32(n))
}

func (r *gpu) rope(t *cu.Thread, s cu.Stream, x cu.Ptr, nHeads, headDim int, cos, sin cu.Ptr, neox bool) error {
	pairs := nHeads * (headDim / 2)
	nx := 0
	if neox {
		nx = 1
	}
	return t.Launch(r.fns["rope_f32"], cu.D1((pairs+127)/128), cu.D1(128), 0, s, x.Arg(), cu.I32(nHeads), cu.I32(headDim), cos.Arg(), sin.Arg(), cu.I32(nx))
}

// quantize enqueues x (n floats, whole blocks) into typ's blocks at dst.
func (r *gpu) quantize(t *cu.Thread, s cu.Stream, typ quant.Type, dst, x cu.Ptr, n int) error {
	var k string
	switch typ {
	case quant.Q8_0:
		k = "quantize_q8_0"
	case quant.Q8_K:
		k = "quantize_q8_k"
	default:
		return fmt.Errorf("cuda quantize: no kernel for %s", typ)
	}
	nb := n / typ.BlockSize()
	const warps = 4
	return t.Launch(r.fns[k], cu.D1((nb+warps-1)/warps), cu.D1(32*warps), 0, s, dst.Arg(), x.Arg(), cu.I32(nb))
}

// blockFor is a one-block reduction's thread count for n values.
func blockFor(n int) int { return min(1024, max(32, (n+31)/32*32)) }

// ledger forms: upload, launch, download.

func hostRMSNorm(dst, x, w []float32, eps float32) {
	hostBinary(dst, x, w, func(r *gpu, t *cu.Thread, s cu.Stream, pd, px, pw cu.Ptr, n int) error {
		return r.rmsNorm(t, s, pd, px, pw, n, eps)
	})
}

func hostSiLUMul(dst, g, u []float32) {
	hostBinary(dst, g, u, func(r *gpu, t *cu.Thread, s cu.Stream, pd, pg, pu cu.Ptr, n int) error {
		return r.siluMul(t, s, pd, pg, pu, n)
	})
}

// hostBinary runs an op of two length-n inputs into a poisoned length-n
// output on the device and brings the output back (n = len(a)).
func hostBinary(dst, a, b []float32, op func(r *gpu, t *cu.Thread, s cu.Stream, pd, pa, pb cu.Ptr, n int) error) {
	n := len(a)
	if n == 0 {
		return
	}
	host(func(r *gpu, t *cu.Thread, s cu.Stream) error {
		pa, err := upload(r, t, s, "x", a)
		if err != nil {
			return err
		}
		pb, err := upload(r, t, s, "w", b[:n])
		if err != nil {
			return err
		}
		pd, err := r.poisoned(t, s, "dst", n)
		if err != nil {
			return err
		}
		if err := op(r, t, s, pd, pa, pb, n); err != nil {
			return err
		}
		return cu.DtoHAsync(t, dst[:n], pd, s)
	})
}

func hostSoftmax(x []float32) {
	if len(x) == 0 {
		return
	}
	host(func(r *gpu, t *cu.Thread, s cu.Stream) error {
		px, err := upload(r, t, s, "x", x)
		if err != nil {
			return err
		}
		if err := r.softmax(t, s, px, len(x)); err != nil {
			return err
		}
		return cu.DtoHAsync(t, x, px, s)
	})
}

func hostRoPE(x []float32, nHeads, headDim int, cos, sin []float32, neox bool) {
	n := nHeads * headDim
	if n == 0 || headDim < 2 {
		return
	}
	host(func(r *gpu, t *cu.Thread, s cu.Stream) error {
		px, pc, ps, err := uploadXWAux(r, t, s, x[:n], cos[:headDim/2], sin[:headDim/2])
		if err != nil {
			return err
		}
		if err := r.rope(t, s, px, nHeads, headDim, pc, ps, neox); err != nil {
			return err
		}
		return cu.DtoHAsync(t, x[:n], px, s)
	})
}

func hostQuantize(typ quant.Type) func(dst []byte, x []float32) {
	return func(dst []byte, x []float32) {
		n := len(x) / typ.BlockSize() * typ.BlockSize()
		if n == 0 {
			return
		}
		nbytes := n / typ.BlockSize() * typ.TypeSize()
		host(func(r *gpu, t *cu.Thread, s cu.Stream) error {
			px, err := upload(r, t, s, "x", x[:n])
			if err != nil {
				return err
			}
			pd, err := r.buf(t, "dst", nbytes)
			if err != nil {
				return err
			}
			if err := t.MemsetD8Async(pd, 0x5a, nbytes, s); err != nil {
				return err
			}
			if err := r.quantize(t, s, typ, pd, px, n); err != nil {
				return err
			}
			return cu.DtoHAsync(t, dst[:nbytes], pd, s)
		})
	}
}
