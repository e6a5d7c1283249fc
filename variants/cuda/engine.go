package cuda

import (
	"fmt"
	"strings"

	cu "github.com/damascus-llm/damascus/internal/cuda"
	"github.com/damascus-llm/damascus/quant"
)

// The engine's side of the family: device-resident forms of the same
// kernels (and of engine.cu's batch kernels) for model/llama's cuda
// backend, which keeps weights, activations and the KV cache on the GPU
// and calls these from inside one Engine.Do per forward pass.

// Engine is the process's GPU with the kernels loaded.
type Engine struct{ r *gpu }

// OpenEngine opens the device and compiles and loads the kernels (once per
// process), or says why it cannot.
func OpenEngine() (*Engine, error) {
	r, err := device()
	if err != nil {
		return nil, err
	}
	return &Engine{r: r}, nil
}

// Info describes the device.
func (e *Engine) Info() cu.Info { return e.r.dev.Info }

// Arch is what the kernels were compiled for.
func (e *Engine) Arch() string { return e.r.arch }

// Do runs f on the device thread with a launcher over the thread's stream.
// f must not call Do.
func (e *Engine) Do(f func(l *Launcher) error) error {
	return e.r.dev.Do(func(t *cu.Thread) error {
		s, err := t.Stream()
		if err != nil {
			return err
		}
		return f(&Launcher{r: e.r, T: t, S: s})
	})
}

// A Launcher enqueues the engine's kernels on one stream; valid only inside
// the Do that made it. Every pointer is device memory.
type Launcher struct {
	r *gpu
	T *cu.Thread
	S cu.Stream
	// MMA runs batches on the tensor-core matmuls (mma.cu) where the
	// weight format has one; off, the 8-token kernels. MMAInt picks their
	// integer-epilogue form (cuda-mma-int).
	MMA, MMAInt bool
	// Pipe, with MMA, runs them on its cp.async-pipelined kernels
	// (mma_pipe.cu, cuda-mma-pipe) where the weight format has one.
	Pipe *PipeTile
	// DecodeAttn is the decode attention's split kernel (DecodeAttnKernels);
	// empty: dattn_split.
	DecodeAttn string
	// LongRowU, above 1, runs a single row's product over rows of at least
	// LongRow values with that many steps' weight loads in flight (the
	// _u2/_u4 kernels, the same bits): such a row takes LongRow/1024 or more
	// dependent steps a warp (the 3B's FFN down product: 8), the others 3.
	LongRowU int
	// XS, 1, 2 or 4, runs a single row's products over Q4_K and Q6_K
	// weights on the cuda-xs kernels of that many rows a warp (mv_xs: the
	// activation row in shared memory, the same bits); 0: the warp-per-row
	// kernels.
	XS int
	// Early, 1 or 2, runs a single row's products over Q4_K and Q6_K
	// weights on the cuda-early kernels of that E (q4k_mv_e, mv_multi_e …:
	// the first step's weights loaded before the PDL wait; 2 also
	// pipelined; the same bits); 0: the warp-per-row kernels.
	Early int
}

// LongRow is the row length from which LongRowU applies.
const LongRow = 8192

// DecodeAttnKernels are the decode attention's split kernels by variant:
// dattn_split (cuda-flash) weights a tile's values one position after
// another per thread; dattn_wv_split (cuda-flash-wv) loads a tile's keys
// and values at once and weights them in the warp that scored them;
// dattn_fold (cuda-flash-fold, dattn.cu) keeps each warp's online softmax
// in registers and combines the splits in the last block to finish.
var DecodeAttnKernels = map[string]string{"cuda-flash": "dattn_split", "cuda-flash-wv": "dattn_wv_split",
	"cuda-flash-fold": "dattn_fold"}

// foldGroups are the padded head groups dattn.cu is instantiated for, and
// foldDims the floats a lane holds of a head (head size 32·D).
var foldGroups, foldDims = []int{4, 8}, []int{1, 2, 4}

func foldKernelNames() []string {
	var names []string
	for _, base := range []string{"dattn_fold", "dattn_foldr"} {
		for _, g := range foldGroups {
			for _, d := range foldDims {
				names = append(names, fmt.Sprintf("%s_d%d_g%d", base, d, g))
			}
		}
	}
	return names
}

// foldKernel is dattn.cu's kernel for heads of hd values, g query heads a
// KV head, or "" where it has none (the head not 32, 64 or 128 values).
func foldKernel(hd, g int) string {
	for _, mg := range foldGroups {
		for _, d := range foldDims {
			if hd == 32*d && g <= mg {
				return fmt.Sprintf("dattn_fold_d%d_g%d", d, mg)
			}
		}
	}
	return ""
}

// Weights is a matrix in its device layout.
type Weights struct {
	P          cu.Ptr
	Type       quant.Type
	Rows, Cols int
	f          *format
}

// Supported reports whether weights of typ can live on the device.
func Supported(typ quant.Type) bool { return formats[typ] != nil }

// UploadWeights copies rows of k values of typ (ggml's layout) to the
// device, repacked into the kernels' layout where it has one.
func (l *Launcher) UploadWeights(w []byte, typ quant.Type, rows, k int) (Weights, error) {
	f := formats[typ]
	if f == nil {
		return Weights{}, fmt.Errorf("cuda: no kernels for %s weights (Q4_K, Q6_K, Q8_0)", typ)
	}
	dw := f.deviceWeights(w, rows, k)
	p, err := l.T.Alloc(len(dw) + bufPad)
	if err != nil {
		return Weights{}, err
	}
	if err := cu.HtoD(l.T, p, dw); err != nil {
		return Weights{}, err
	}
	return Weights{P: p, Type: typ, Rows: rows, Cols: k, f: f}, nil
}

// Alloc allocates n bytes (with the readers' slack past the end).
func (l *Launcher) Alloc(n int) (cu.Ptr, error) { return l.T.Alloc(n + bufPad) }

// MatMul computes dst[j*rows + r] = W[r]·X[j] for n activation rows x
// (ActivationType of W's type): the matvec kernel for one row, for a batch
// the 8-token kernel or (MMA) the tensor-core one.
func (l *Launcher) MatMul(dst cu.Ptr, w Weights, x cu.Ptr, n int) error {
	if n == 1 {
		if l.XS > 0 && XSTakes(w.Type) {
			return l.r.matVecXS(l.T, l.S, l.XS, x, w.Cols, []XSSeg{{Dst: dst, W: w.P, Rows: w.Rows, Type: w.Type}})
		}
		if l.Early > 0 && w.f.mve != "" {
			return l.r.matVecEarly(l.T, l.S, w.f, l.Early, dst, w.P, w.Rows, x, w.Cols)
		}
		u := 1
		if l.LongRowU > 1 && w.Cols >= LongRow {
			u = l.LongRowU
		}
		return l.r.matVec(l.T, l.S, w.f, u, dst, w.P, w.Rows, x, w.Cols)
	}
	if l.MMA && l.Pipe != nil && l.Pipe.kernels[w.Type] != "" {
		return l.r.matMulPipe(l.T, l.S, w.f, l.Pipe, dst, w.Rows, w.P, w.Rows, x, n, w.Cols)
	}
	if l.MMA && w.f.mma != "" {
		return l.r.matMulMMA(l.T, l.S, w.f, l.MMAInt, dst, w.Rows, w.P, w.Rows, x, n, w.Cols)
	}
	return l.r.matMul(l.T, l.S, w.f, dst, w.Rows, w.P, w.Rows, x, n, w.Cols)
}

// Quantize writes n values of x (whole blocks) as typ's blocks at dst.
func (l *Launcher) Quantize(typ quant.Type, dst, x cu.Ptr, n int) error {
	return l.r.quantize(l.T, l.S, typ, dst, x, n)
}

// Embed writes the rows tok[0..n) of the embedding matrix w into x.
func (l *Launcher) Embed(x cu.Ptr, w Weights, tok cu.Ptr, n int) error {
	name := map[quant.Type]string{quant.Q4_K: "embed_q4k", quant.Q6_K: "embed_q6k", quant.Q8_0: "embed_q80"}[w.Type]
	if name == "" {
		return fmt.Errorf("cuda: no embedding kernel for %s", w.Type)
	}
	return l.T.Launch(l.r.fns[name], cu.D2((w.Cols+255)/256, n), cu.D1(256), 0, l.S, x.Arg(), w.P.Arg(), tok.Arg(), cu.I32(w.Cols))
}

// AddRMSNorm adds add (when non-zero) into n rows of x and, for rows from
// `from` on when w is non-zero, writes x normalized with weight w into xn.
func (l *Launcher) AddRMSNorm(x, add, xn, w cu.Ptr, n, dim int, eps float32, from int) error {
	return l.addRMSNorm(x, add, xn, w, n, dim, eps, from, 0, 0)
}

// addRMSNorm launches add_rmsnorm, quantizing the normalized rows as code qt
// into xq (0: not).
func (l *Launcher) addRMSNorm(x, add, xn, w cu.Ptr, n, dim int, eps float32, from int, xq cu.Ptr, qt int) error {
	if 4*dim > 48<<10 {
		return fmt.Errorf("cuda: a row of %d values does not fit the norm kernel's shared memory", dim)
	}
	return l.T.Launch(l.r.fns["add_rmsnorm"], cu.D1(n), cu.D1(blockFor(dim)), 4*dim, l.S,
		x.Arg(), add.Arg(), xn.Arg(), w.Arg(), cu.I32(dim), cu.F32(eps), cu.I32(from), xq.Arg(), cu.I32(qt))
}

// qtCode is the fused kernels' code for activation type typ.
func qtCode(typ quant.Type) (int, error) {
	switch typ {
	case quant.Q8_K:
		return 1, nil
	case quant.Q8_0:
		return 2, nil
	}
	return 0, fmt.Errorf("cuda: no quantizer for %s activations", typ)
}

// AddRMSNormQ is AddRMSNorm (w set) followed by the quantization of rows
// from `from` on of xn into xq as typ's blocks, row after row, in one launch.
func (l *Launcher) AddRMSNormQ(x, add, xn, w cu.Ptr, n, dim int, eps float32, from int, xq cu.Ptr, typ quant.Type) error {
	qt, err := qtCode(typ)
	if err != nil {
		return err
	}
	return l.addRMSNorm(x, add, xn, w, n, dim, eps, from, xq, qt)
}

// normTailRows is mv_norm's rows a block (one warp each, 256 threads).
const normTailRows = 8

// MatVecNorm is MatMul for one activation row into dst, followed in the
// same launch by AddRMSNormQ(x, dst, xn, nw, 1, dim, eps, 0, xq, typ): the
// grid's last block adds the product into x, normalizes it with nw into xn
// and quantizes that into xq, with AddRMSNormQ's arithmetic bit for bit.
// counter is a device uint32 that is 0 and that no other launch in flight
// uses; the kernel leaves it 0.
func (l *Launcher) MatVecNorm(dst cu.Ptr, w Weights, xa cu.Ptr, x, xn, nw cu.Ptr, dim int, eps float32, xq cu.Ptr, typ quant.Type, counter cu.Ptr) error {
	qt, err := qtCode(typ)
	if err != nil {
		return err
	}
	if w.Rows != dim {
		return fmt.Errorf("cuda: mv_norm adds %d rows into a residual of %d", w.Rows, dim)
	}
	if 4*dim > 48<<10 {
		return fmt.Errorf("cuda: a row of %d values does not fit the norm tail's shared memory", dim)
	}
	f, ok := fmtCode[w.Type]
	if !ok {
		return fmt.Errorf("cuda: mv_norm has no %s rows", w.Type)
	}
	return l.T.Launch(l.r.fns["mv_norm"], cu.D1((w.Rows+normTailRows-1)/normTailRows), cu.D1(32*normTailRows), 4*dim, l.S,
		dst.Arg(), w.P.Arg(), cu.I32(w.Rows), cu.I32(f), xa.Arg(), cu.I32(w.Cols), x.Arg(), xn.Arg(), nw.Arg(), cu.I32(dim), cu.F32(eps),
		xq.Arg(), cu.I32(qt), cu.I32(blockFor(dim)), counter.Arg())
}

// SiLUMulQ sets n rows of f values of g to silu(g)·u and quantizes them
// into xq as typ's blocks, in one launch.
func (l *Launcher) SiLUMulQ(g, u cu.Ptr, n, f int, xq cu.Ptr, typ quant.Type) error {
	qt, err := qtCode(typ)
	if err != nil {
		return err
	}
	bs := typ.BlockSize()
	return l.T.Launch(l.r.fns["silu_mul_q"], cu.D2((f/bs+3)/4, n), cu.D1(128), 0, l.S, g.Arg(), u.Arg(), cu.I32(f), xq.Arg(), cu.I32(qt))
}

// fmtCode is mv_multi's code for a weight format.
var fmtCode = map[quant.Type]int{quant.Q4_K: 0, quant.Q6_K: 1, quant.Q8_0: 2}

// MatVecMulti computes two or three matvecs over the same activation row x
// (the same activation type and width) in one launch: dst[i] = W[i]·x.
func (l *Launcher) MatVecMulti(x cu.Ptr, dst []cu.Ptr, w []Weights) error {
	if len(w) < 2 || len(w) > 3 || len(dst) != len(w) {
		return fmt.Errorf("cuda: mv_multi takes two or three matrices, got %d", len(w))
	}
	if l.XS > 0 && XSTakes(w[0].Type) && XSTakes(w[1].Type) && (len(w) < 3 || XSTakes(w[2].Type)) {
		segs, err := xsSegs("cuda-xs", dst, w, w[0].Cols)
		if err != nil {
			return err
		}
		return l.r.matVecXS(l.T, l.S, l.XS, x, w[0].Cols, segs)
	}
	args := []cu.Arg{x.Arg(), cu.I32(w[0].Cols)}
	blocks := 0
	for i := range 3 {
		if i >= len(w) {
			args = append(args, cu.Ptr(0).Arg(), cu.Ptr(0).Arg(), cu.I32(0), cu.I32(0))
			continue
		}
		if w[i].Cols != w[0].Cols {
			return fmt.Errorf("cuda: mv_multi over %d and %d columns", w[0].Cols, w[i].Cols)
		}
		args = append(args, dst[i].Arg(), w[i].P.Arg(), cu.I32(w[i].Rows), cu.I32(fmtCode[w[i].Type]))
		blocks += (w[i].Rows + rowsPerBlock - 1) / rowsPerBlock
	}
	kern := "mv_multi"
	if l.Early > 0 {
		kern = earlyKernel("mv_multi_e", l.Early) // Q8_0 segments as mv_multi's
	}
	return l.T.Launch(l.r.fns[kern], cu.D1(blocks), cu.D1(32*rowsPerBlock), 0, l.S, args...)
}

// RopeStore rotates n tokens' queries q (in place) and keys k, and stores
// the keys and values v in the layer's cache kc, vc ([KV head][position]
// [headDim], nctx positions) at positions *posp + j; cosT and sinT hold
// every position's angles.
func (l *Launcher) RopeStore(q, k, v, kc, vc, posp cu.Ptr, n, nHeads, nKV, hd, nctx int, cosT, sinT cu.Ptr, neox bool) error {
	nx := 0
	if neox {
		nx = 1
	}
	return l.T.Launch(l.r.fns["rope_store"], cu.D2(n, nHeads+nKV), cu.D1(min(128, max(32, hd/2))), 0, l.S,
		q.Arg(), k.Arg(), v.Arg(), kc.Arg(), vc.Arg(), posp.Arg(), cu.I32(nHeads), cu.I32(nKV), cu.I32(hd), cu.I32(nctx),
		cosT.Arg(), sinT.Arg(), cu.I32(nx))
}

// AttnPlan splits a layer's attention over the context: chunk positions a
// block, NChunks blocks per KV head and token (the context's whole length,
// so that a recorded step is valid at every position).
type AttnPlan struct{ Chunk, NChunks, shared int }

// MaxGroup is the most query heads per KV head the attention kernel takes.
const MaxGroup = 8

// PlanAttention splits nctx positions into chunks of at least minChunk
// (a multiple of 32) and at most maxChunks of them.
func PlanAttention(nHeads, nKV, hd, nctx, minChunk, maxChunks int) (AttnPlan, error) {
	g := nHeads / nKV
	if g > MaxGroup || g*nKV != nHeads {
		return AttnPlan{}, fmt.Errorf("cuda attention: %d query heads over %d KV heads (at most %d per KV head)", nHeads, nKV, MaxGroup)
	}
	chunk := max(minChunk, (nctx+maxChunks-1)/maxChunks)
	chunk = (chunk + 31) / 32 * 32
	shared := 4 * (g*hd + g*chunk)
	if shared > 48<<10 {
		return AttnPlan{}, fmt.Errorf("cuda attention: a chunk of %d positions needs %d bytes of shared memory", chunk, shared)
	}
	return AttnPlan{Chunk: chunk, NChunks: (nctx + chunk - 1) / chunk, shared: shared}, nil
}

// PartialFloats is the floats of the po scratch one token needs (pml needs
// 2/headDim of it).
func (p AttnPlan) PartialFloats(nHeads, hd int) int { return p.NChunks * nHeads * hd }

// Attention runs n tokens' causal attention (token j at position *posp+j)
// over the layer's cache into out (n × nHeads × hd), through scratch po
// (n·PartialFloats) and pml (n·NChunks·nHeads·2 floats).
func (l *Launcher) Attention(p AttnPlan, out, q, kc, vc, po, pml, posp cu.Ptr, n, nHeads, nKV, hd, nctx int, scale float32) error {
	if err := l.T.Launch(l.r.fns["eattn_split"], cu.Dim3{X: p.NChunks, Y: nKV, Z: n}, cu.D1(128), p.shared, l.S,
		po.Arg(), pml.Arg(), q.Arg(), kc.Arg(), vc.Arg(), posp.Arg(), cu.I32(nHeads), cu.I32(nKV), cu.I32(hd), cu.I32(nctx),
		cu.F32(scale), cu.I32(p.Chunk), cu.I32(p.NChunks)); err != nil {
		return err
	}
	return l.T.Launch(l.r.fns["eattn_combine"], cu.D2(nHeads, n), cu.D1(128), 4*p.NChunks, l.S,
		out.Arg(), po.Arg(), pml.Arg(), cu.I32(nHeads), cu.I32(hd), cu.I32(p.NChunks))
}

// DecodeSplits is the blocks per KV head of a single token's attention.
const DecodeSplits = 32

// DecodeAttentionFits reports whether DecodeAttention takes heads of hd
// values (a thread per dimension of a 128-thread block).
func DecodeAttentionFits(hd int) bool { return hd >= 1 && hd <= 128 }

// DecodeAttention runs one token's attention (at position *posp) over the
// layer's cache: the context cut into DecodeSplits equal splits per KV head
// at whatever depth, each walked with an online softmax, then combined.
// po and pml hold DecodeSplits·nHeads·hd and DecodeSplits·nHeads·2 floats;
// cnt holds nKV 32-bit counters, zero before the first call, in which
// dattn_fold counts the splits that finished (it leaves them zero).
func (l *Launcher) DecodeAttention(out, q, kc, vc, po, pml, cnt, posp cu.Ptr, nHeads, nKV, hd, nctx int, scale float32) error {
	if !DecodeAttentionFits(hd) || nHeads/nKV > MaxGroup {
		return fmt.Errorf("cuda decode attention: heads of %d, %d per KV head", hd, nHeads/nKV)
	}
	kern := l.DecodeAttn
	if kern == "" {
		kern = "dattn_split"
	}
	if kern == "dattn_fold" {
		if fold := foldKernel(hd, nHeads/nKV); fold != "" {
			return l.T.Launch(l.r.fns[fold], cu.D2(DecodeSplits, nKV), cu.D1(128), 0, l.S,
				out.Arg(), po.Arg(), pml.Arg(), cnt.Arg(), q.Arg(), kc.Arg(), vc.Arg(), posp.Arg(),
				cu.I32(nHeads), cu.I32(nKV), cu.I32(nctx), cu.F32(scale))
		}
		kern = "dattn_split" // heads the fold has no instance for
	}
	if err := l.T.Launch(l.r.fns[kern], cu.D2(DecodeSplits, nKV), cu.D1(128), 0, l.S,
		po.Arg(), pml.Arg(), q.Arg(), kc.Arg(), vc.Arg(), posp.Arg(), cu.I32(nHeads), cu.I32(nKV), cu.I32(hd), cu.I32(nctx), cu.F32(scale)); err != nil {
		return err
	}
	return l.T.Launch(l.r.fns["eattn_combine"], cu.D2(nHeads, 1), cu.D1(128), 4*DecodeSplits, l.S,
		out.Arg(), po.Arg(), pml.Arg(), cu.I32(nHeads), cu.I32(hd), cu.I32(DecodeSplits))
}

// RopeDecodeAttention is RopeStore for one token then DecodeAttention: in
// one launch where the decode attention is dattn_fold and has an instance
// for the heads (q is then left unrotated: only the attention reads it),
// else as the two calls.
func (l *Launcher) RopeDecodeAttention(out, q, k, v, kc, vc, po, pml, cnt, posp cu.Ptr, nHeads, nKV, hd, nctx int,
	scale float32, cosT, sinT cu.Ptr, neox bool) error {
	if l.DecodeAttn == "dattn_fold" {
		if fold := foldKernel(hd, nHeads/nKV); fold != "" {
			nx := 0
			if neox {
				nx = 1
			}
			return l.T.Launch(l.r.fns["dattn_foldr"+strings.TrimPrefix(fold, "dattn_fold")], cu.D2(DecodeSplits, nKV), cu.D1(128), 0, l.S,
				out.Arg(), po.Arg(), pml.Arg(), cnt.Arg(), q.Arg(), kc.Arg(), vc.Arg(), k.Arg(), v.Arg(), cosT.Arg(), sinT.Arg(),
				cu.I32(nx), posp.Arg(), cu.I32(nHeads), cu.I32(nKV), cu.I32(nctx), cu.F32(scale))
		}
	}
	if err := l.RopeStore(q, k, v, kc, vc, posp, 1, nHeads, nKV, hd, nctx, cosT, sinT, neox); err != nil {
		return err
	}
	return l.DecodeAttention(out, q, kc, vc, po, pml, cnt, posp, nHeads, nKV, hd, nctx, scale)
}

// SiLUMul sets dst = silu(g)·u over n values.
func (l *Launcher) SiLUMul(dst, g, u cu.Ptr, n int) error { return l.r.siluMul(l.T, l.S, dst, g, u, n) }

// Argmax writes the index of the largest of x[0..n) into *dst (an int32).
func (l *Launcher) Argmax(dst, x cu.Ptr, n int) error {
	return l.T.Launch(l.r.fns["argmax_f32"], cu.D1(1), cu.D1(1024), 0, l.S, dst.Arg(), x.Arg(), cu.I32(n))
}
