package llama

import (
	"fmt"
	"math"
	"os"
	"unsafe"

	cu "github.com/damascus-llm/damascus/internal/cuda"
	"github.com/damascus-llm/damascus/quant"
	"github.com/damascus-llm/damascus/variants/cuda"
)

// DeviceCUDA runs the graph on the GPU (Options.Device).
const DeviceCUDA = "cuda"

// MMAEnv picks the prefill matmuls. Unset (or pipe): cuda-mma-pipe
// (mma_pipe.cu: cuda-mma-int's arithmetic, bit for bit, on cp.async-
// pipelined 128×64 tiles; Q4_K and Q6_K, Q8_0 on cuda-mma-int's path),
// 3B pp1024 9770 tok/s on the H200 in session 10 against 6001 for
// cuda-mma-int (int), about 5090 for its float-epilogue form (float) and
// 1776 for the 8-token kernels (0). pipe2 runs cuda-mma-pipe2 (the same
// tiles, two blocks an SM).
const MMAEnv = "DAMASCUS_CUDA_MMA"

// pipeVariants are the MMAEnv values that run a cuda-mma-pipe instance.
var pipeVariants = map[string]string{"": "cuda-mma-pipe", "pipe": "cuda-mma-pipe", "pipe2": "cuda-mma-pipe2"}

// DAttnEnv picks the decode attention's split kernel: fold (the default,
// cuda-flash-fold: a warp's keys and values of a pass loaded at once, its
// scores summed in one transposed butterfly, the online softmax in
// registers, the splits combined in the same launch), serial (cuda-flash:
// a tile's values weighted one position after another per thread, the
// splits combined by eattn_combine) or wv (cuda-flash-wv). On the H200 in
// session 13 (ledger e2e, 10 rounds beside llama.cpp CUDA): 3B tg256 543.7
// tok/s with fold against 448.8 with serial (1.29× and 1.08× llama.cpp's
// 422.6 and 416.1), 1B 1017.0 (1.16×); tg128 at depth 4096 470 against
// 321 (damascus-bench). wv lost in session 11 (439 against 448).
const DAttnEnv = "DAMASCUS_CUDA_DATTN"

// dattnVariants are DAttnEnv's values and the variants they name.
var dattnVariants = map[string]string{"": "cuda-flash-fold", "fold": "cuda-flash-fold", "serial": "cuda-flash", "wv": "cuda-flash-wv"}

// NormTailEnv set to 1 runs a single token's residual add, norm and
// quantization (after the attention's output product and after the FFN's
// down product) as the tail of that product's launch (mv_norm): the same
// bits, two launches a layer fewer. It lost on the H200 in session 11
// (3B tg256 363 against 448 tok/s: one block's tail after the whole grid
// costs more than the launch it saves) and stays opt-in.
const NormTailEnv = "DAMASCUS_CUDA_NORMTAIL"

// PrefillAttnEnv picks the prefill (batch) attention: flash (the default
// where the heads fit: 64 or 128 values) runs fattn.cu's flash-attention
// kernel, a block per (KV head, tile of query tokens) that reads each key
// and value tile once for the whole tile — 3B pp1024 on the H200 in
// session 11: 17,407 tok/s against 9,815 for split; split runs
// eattn_split + eattn_combine, a block per (chunk of keys, KV head, query
// token), and is the default where flash does not fit.
const PrefillAttnEnv = "DAMASCUS_CUDA_PATTN"

// LongRowUEnv set to 2 or 4 runs a single token's products over rows of at
// least cuda.LongRow values (the FFN down product) with that many steps'
// weight loads in flight (q4k_mv_u2/_u4 and the Q6_K and Q8_0 twins, the
// same bits). Session 12's MV_U=2..4 put more loads in flight in every
// matvec, mv_multi included, and lost (427/412/402 against 436-447 tok/s);
// this leaves the short rows (3 steps a warp) alone. Untimed: opt-in.
const LongRowUEnv = "DAMASCUS_CUDA_LONGU"

// MatVecEnv picks a single token's products over Q4_K and Q6_K weights:
// warp (the default) runs the warp-per-row kernels (q4k_mv, mv_multi);
// xs, xs1 and xs4 the cuda-xs kernels (mv_xs2, mv_xs1, mv_xs4: the
// activation row staged in shared memory once a block, 2, 1 or 4 rows a
// warp; the same bits; they lost on the H200 in session 14: 3B tg256
// 487-494 against 503-524); pro and pro2 the cuda-pro kernels (mv_pro1,
// mv_pro2: the residual add and norm, the SwiGLU or the attention output's
// quantization done by every block of the product that reads it, one
// launch instead of two; the same bits; they lost too: 423-428 and 451-457
// against 531-535, the prologue's latency now in every product's launch);
// early the cuda-early kernels (q4k_mv_e, q6k_mv_e, mv_multi_e: the
// warp-per-row kernels with the first step's weights loaded before the PDL
// wait, so the fetch overlaps the kernel before), early2 cuda-early2's
// (software-pipelined too; the same bits): session 15, 3B tg256, 3 rounds
// rotated, early 531.6/541.3/532.9 and early2 487.7/502.2/513.8 against
// 531.4/529.4/524.8 — level and lost. Kept opt-in, to compare.
const MatVecEnv = "DAMASCUS_CUDA_MV"

// matVecVariants are MatVecEnv's values.
var matVecVariants = map[string]struct {
	xs, pro int // cuda-xs, cuda-pro rows a warp (0: not that variant)
	early   int // cuda-early's E (0: not cuda-early)
}{"": {}, "warp": {}, "xs": {xs: 2}, "xs1": {xs: 1}, "xs2": {xs: 2}, "xs4": {xs: 4},
	"pro": {pro: 1}, "pro1": {pro: 1}, "pro2": {pro: 2}, "early": {early: 1}, "early2": {early: 2}}

// RopeFoldEnv (1, the default) has the decode attention (when it is fold
// and has an instance for the heads) rotate the token's query and key and
// store its key and value in the cache itself: rope_store's launch left
// out, the same bits. H200, session 14, 3B tg256, 4 interleaved rounds:
// 559.7/551.3/546.1/542.7 against 532.8/529.6/542.8/537.4 tok/s with
// rope_store; 0 restores it.
const RopeFoldEnv = "DAMASCUS_CUDA_ROPEFOLD"

// PDLEnv set to 0 launches the GPU's kernels one strictly after another,
// without programmatic dependent launch (to compare).
const PDLEnv = "DAMASCUS_CUDA_PDL"

// cudaBackend runs the graph on the GPU: the weights uploaded once, the
// activations, the KV cache and the logits kept on the device, each step a
// kernel of variants/cuda. The graph still names runState's host buffers;
// each has a device twin of the same shape, and a host slice stands for the
// same offset into its twin (the host buffers are never written). A decode
// step (one token) is recorded once as a CUDA graph and replayed: its
// kernels read the position and the token from device memory, which is all
// that changes between steps.
type cudaBackend struct {
	e   *cuda.Engine
	cfg Config
	s   *runState      // the host buffers the graph names
	l   *cuda.Launcher // set during a step

	weights map[*byte]cuda.Weights // by the host matrix's first byte: a tied head shares the embedding's upload
	embed   cuda.Weights
	norms   map[*float32]cu.Ptr
	twins   []twin
	xq      cu.Ptr // the quantized activations the next product reads
	act     struct {
		src  cu.Ptr
		typ  quant.Type
		rows int
	}
	logits     cu.Ptr // the head's output: at most NBatch rows of Vocab
	logitsRows int
	tokens     cu.Ptr // the batch's token ids (int32)
	pos        cu.Ptr // the batch's first position (int32)
	kc, vc     []cu.Ptr
	nctx       int
	cosT, sinT cu.Ptr
	decode     cuda.AttnPlan // a step of one token
	batch      cuda.AttnPlan // a prefill batch
	po, pml    cu.Ptr
	graph      *cu.Graph // the recorded decode step
	noGraph    bool      // layer outputs are captured: every step walks the graph
	pdl        bool      // kernels launched with programmatic dependent launch
	mma        bool      // batches on the tensor-core matmuls
	mmaInt     bool      // … in their integer-epilogue form
	mmaPipe    string    // … on this cp.async-pipelined instance (MMAEnv=pipe, pipe2; "": none)
	dattn      string    // the decode attention's split kernel (DAttnEnv)
	longU      int       // steps in flight of a single token's long-row products (LongRowUEnv)
	xs         int       // cuda-xs rows a warp for a single token's products (MatVecEnv; 0: warp per row)
	pro        int       // cuda-pro rows a warp for a single token's products (MatVecEnv; 0: off)
	early      int       // cuda-early's E for a single token's products (MatVecEnv; 0: off)
	pendPro    *pendingPrologue
	ropeFold   bool // the decode attention does a single token's rope_store (RopeFoldEnv)
	normTail   bool // NormTailEnv: a product and the norm after it in one launch
	pending    *pendingProduct
	counters   cu.Ptr // mv_norm's finished-block counters, one a launch of a step
	dattnCnt   cu.Ptr // the folded decode attention's finished-split counters, one a KV head
	nCounters  int
	nextCtr    int  // the next launch's counter in this step
	flashPre   bool // prefill attention on fattn (PrefillAttnEnv=flash)
	allocs     []cu.Ptr

	pers *persistentDecode // DecodeEnv's persistent decode (cuda_persistent.go); nil: the launch-per-op graph
}

// twin is a runState buffer and its device copy.
type twin struct {
	host []float32
	dev  cu.Ptr
}

var _ backend = (*cudaBackend)(nil)

// newCUDABackend opens the GPU and uploads m's weights, rope tables and a
// KV cache of opts.NCtx positions.
func newCUDABackend(m *Model, s *runState, opts Options) (*cudaBackend, error) {
	cfg := m.Config
	switch {
	case opts.KVType != quant.F32:
		return nil, fmt.Errorf("the cuda backend keeps a float32 KV cache only (asked for %s)", opts.KVType)
	}
	switch v := os.Getenv(MMAEnv); v {
	case "", "pipe", "pipe2", "int", "float", "0":
	default:
		return nil, fmt.Errorf("cuda backend: %s=%q: want pipe (the default), pipe2, int, float or 0", MMAEnv, v)
	}
	longU := 1
	switch v := os.Getenv(LongRowUEnv); v {
	case "", "1":
	case "2", "4":
		longU = int(v[0] - '0')
	default:
		return nil, fmt.Errorf("cuda backend: %s=%q: want 1 (the default), 2 or 4", LongRowUEnv, v)
	}
	ropeFold := true
	switch v := os.Getenv(RopeFoldEnv); v {
	case "", "1":
	case "0":
		ropeFold = false
	default:
		return nil, fmt.Errorf("cuda backend: %s=%q: want 1 (the default) or 0", RopeFoldEnv, v)
	}
	mv, ok := matVecVariants[os.Getenv(MatVecEnv)]
	if !ok {
		return nil, fmt.Errorf("cuda backend: %s=%q: want warp (the default), early, early2, xs, xs1, xs4, pro or pro2", MatVecEnv, os.Getenv(MatVecEnv))
	}
	dattn, ok := dattnVariants[os.Getenv(DAttnEnv)]
	if !ok {
		return nil, fmt.Errorf("cuda backend: %s=%q: want fold (the default), serial or wv", DAttnEnv, os.Getenv(DAttnEnv))
	}
	flashPre := false
	switch v := os.Getenv(PrefillAttnEnv); v {
	case "split":
	case "":
		flashPre = cuda.FlashPrefillFits(cfg.Heads, cfg.KVHeads, cfg.HeadDim) == nil
	case "flash":
		if err := cuda.FlashPrefillFits(cfg.Heads, cfg.KVHeads, cfg.HeadDim); err != nil {
			return nil, fmt.Errorf("cuda backend: %s=flash: %w", PrefillAttnEnv, err)
		}
		flashPre = true
	default:
		return nil, fmt.Errorf("cuda backend: %s=%q: want flash (the default) or split", PrefillAttnEnv, v)
	}
	e, err := cuda.OpenEngine()
	if err != nil {
		return nil, fmt.Errorf("cuda backend: %w", err)
	}
	b := &cudaBackend{flashPre: flashPre, e: e, cfg: cfg, s: s, weights: map[*byte]cuda.Weights{}, norms: map[*float32]cu.Ptr{}, nctx: opts.NCtx,
		noGraph: opts.Capture != nil || checkProducts, pdl: os.Getenv(PDLEnv) != "0", mma: os.Getenv(MMAEnv) != "0",
		mmaInt: os.Getenv(MMAEnv) != "float", mmaPipe: pipeVariants[os.Getenv(MMAEnv)],
		dattn: cuda.DecodeAttnKernels[dattn], longU: longU, xs: mv.xs, early: mv.early, ropeFold: ropeFold, normTail: os.Getenv(NormTailEnv) == "1" && !checkProducts}
	if !checkProducts { // the products check reads the quantized activations cuda-pro never writes
		b.pro = mv.pro
	}
	b.normTail = b.normTail && b.pro == 0 // both would take the residual's counters
	if v := os.Getenv(NormTailEnv); v != "" && v != "0" && v != "1" {
		return nil, fmt.Errorf("cuda backend: %s=%q: want 1 or 0", NormTailEnv, v)
	}
	if b.decode, err = cuda.PlanAttention(cfg.Heads, cfg.KVHeads, cfg.HeadDim, opts.NCtx, 64, 256); err == nil {
		b.batch, err = cuda.PlanAttention(cfg.Heads, cfg.KVHeads, cfg.HeadDim, opts.NCtx, 256, 64)
	}
	if err != nil {
		return nil, fmt.Errorf("cuda backend: %w", err)
	}
	err = e.Do(func(l *cuda.Launcher) error {
		b.l = l
		defer func() { b.l = nil }()
		if err := b.upload(m, s, opts); err != nil {
			return err
		}
		return b.setupPersistent(m)
	})
	if err != nil {
		b.close()
		return nil, fmt.Errorf("cuda backend: %w", err)
	}
	return b, nil
}

// upload allocates and fills everything the backend keeps on the device.
func (b *cudaBackend) upload(m *Model, s *runState, opts Options) error {
	cfg, l := b.cfg, b.l
	free, _, err := l.T.MemInfo()
	if err != nil {
		return err
	}
	if need := b.deviceBytes(m, opts); need > free {
		return fmt.Errorf("the model and a context of %d positions need %.1f GiB of GPU memory, %.1f GiB are free: use a shorter context (--ctx-size)",
			opts.NCtx, float64(need)/(1<<30), float64(free)/(1<<30))
	}
	alloc := func(n int) (cu.Ptr, error) {
		p, err := l.Alloc(n)
		if err == nil {
			b.allocs = append(b.allocs, p)
		}
		return p, err
	}
	for _, h := range [][]float32{s.x, s.xn, s.q, s.kb, s.vb, s.att, s.tmp, s.gate, s.up} {
		p, err := alloc(4 * len(h))
		if err != nil {
			return err
		}
		b.twins = append(b.twins, twin{h, p})
	}
	xqBytes := 0
	for _, t := range []quant.Type{quant.Q8_K, quant.Q8_0} {
		for _, k := range []int{cfg.Dim, cfg.QDim(), cfg.FFNDim} {
			if rs, err := quant.RowSize(t, int64(k)); err == nil {
				xqBytes = max(xqBytes, opts.NBatch*int(rs))
			}
		}
	}
	if b.xq, err = alloc(xqBytes); err != nil {
		return err
	}
	b.logitsRows = opts.NBatch
	if b.logits, err = alloc(4 * opts.NBatch * cfg.Vocab); err != nil {
		return err
	}
	if b.tokens, err = alloc(4 * opts.NBatch); err != nil {
		return err
	}
	if b.pos, err = alloc(4); err != nil {
		return err
	}
	b.nCounters = 2*cfg.Layers + 2
	if b.counters, err = alloc(4 * b.nCounters); err != nil {
		return err
	}
	if err := l.T.MemsetD32Async(b.counters, 0, b.nCounters, l.S); err != nil {
		return err
	}
	if b.dattnCnt, err = alloc(4 * cfg.KVHeads); err != nil {
		return err
	}
	if err := l.T.MemsetD32Async(b.dattnCnt, 0, cfg.KVHeads, l.S); err != nil {
		return err
	}
	poN := max(b.decode.PartialFloats(cfg.Heads, cfg.HeadDim), opts.NBatch*b.batch.PartialFloats(cfg.Heads, cfg.HeadDim),
		cuda.DecodeSplits*cfg.Heads*cfg.HeadDim)
	if b.po, err = alloc(4 * poN); err != nil {
		return err
	}
	if b.pml, err = alloc(4 * 2 * poN / cfg.HeadDim); err != nil {
		return err
	}
	kvBytes := 4 * opts.NCtx * cfg.KVDim()
	for range cfg.Layers {
		k, err := alloc(kvBytes)
		if err != nil {
			return err
		}
		v, err := alloc(kvBytes)
		if err != nil {
			return err
		}
		b.kc, b.vc = append(b.kc, k), append(b.vc, v)
	}
	// Every position's rope angles, by the CPU engine's own function.
	half := cfg.HeadDim / 2
	cs, sn := make([]float32, opts.NCtx*half), make([]float32, opts.NCtx*half)
	for p := range opts.NCtx {
		m.ropeAngles(cs[p*half:(p+1)*half], sn[p*half:(p+1)*half], p)
	}
	if b.cosT, err = b.uploadFloats(cs); err != nil {
		return err
	}
	if b.sinT, err = b.uploadFloats(sn); err != nil {
		return err
	}
	if b.embed, err = b.matrix(&m.Embed); err != nil {
		return err
	}
	for i := range m.Layers {
		L := &m.Layers[i]
		for _, w := range []*Matrix{&L.Q, &L.K, &L.V, &L.Out, &L.Gate, &L.Up, &L.Down} {
			if _, err := b.matrix(w); err != nil {
				return err
			}
		}
		for _, v := range [][]float32{L.AttnNorm, L.FFNNorm} {
			if _, err := b.norm(v); err != nil {
				return err
			}
		}
	}
	if _, err := b.norm(m.Norm); err != nil {
		return err
	}
	_, err = b.matrix(&m.Output)
	return err
}

// deviceBytes is about what upload allocates.
func (b *cudaBackend) deviceBytes(m *Model, opts Options) uint64 {
	cfg := m.Config
	n := uint64(len(m.Embed.Data))
	for i := range m.Layers {
		L := &m.Layers[i]
		for _, w := range []*Matrix{&L.Q, &L.K, &L.V, &L.Out, &L.Gate, &L.Up, &L.Down} {
			n += uint64(len(w.Data))
		}
	}
	if &m.Output.Data[0] != &m.Embed.Data[0] {
		n += uint64(len(m.Output.Data))
	}
	n = n * 21 / 20                                                           // repacking pads rows
	n += 2 * 4 * uint64(cfg.Layers) * uint64(opts.NCtx) * uint64(cfg.KVDim()) // KV cache
	n += 4 * uint64(opts.NBatch) * uint64(cfg.Vocab+3*cfg.Dim+2*cfg.QDim()+2*cfg.KVDim()+2*cfg.FFNDim)
	return n + 8*uint64(opts.NCtx)*uint64(cfg.HeadDim/2) + 64<<20
}

func (b *cudaBackend) uploadFloats(v []float32) (cu.Ptr, error) {
	p, err := b.l.Alloc(4 * len(v))
	if err != nil {
		return 0, err
	}
	b.allocs = append(b.allocs, p)
	return p, cu.HtoD(b.l.T, p, v)
}

// matrix uploads w once (by its data) and returns its device form.
func (b *cudaBackend) matrix(w *Matrix) (cuda.Weights, error) {
	key := &w.Data[0]
	if dw, ok := b.weights[key]; ok {
		return dw, nil
	}
	if !cuda.Supported(w.Type) {
		return cuda.Weights{}, fmt.Errorf("%s: %s weights have no cuda kernels (Q4_K, Q6_K, Q8_0)", w.Name, w.Type)
	}
	dw, err := b.l.UploadWeights(w.Data, w.Type, w.Rows, w.Cols)
	if err != nil {
		return cuda.Weights{}, fmt.Errorf("%s: %w", w.Name, err)
	}
	b.allocs = append(b.allocs, dw.P)
	b.weights[key] = dw
	return dw, nil
}

// norm uploads a norm weight once.
func (b *cudaBackend) norm(v []float32) (cu.Ptr, error) {
	if p, ok := b.norms[&v[0]]; ok {
		return p, nil
	}
	p, err := b.uploadFloats(v)
	if err == nil {
		b.norms[&v[0]] = p
	}
	return p, err
}

// dev is the device twin of host slice x, at the same offset; ok false when
// x is not in a runState buffer (the logits).
func (b *cudaBackend) dev(x []float32) (p cu.Ptr, ok bool) {
	at := uintptr(unsafe.Pointer(unsafe.SliceData(x)))
	for _, t := range b.twins {
		base := uintptr(unsafe.Pointer(unsafe.SliceData(t.host)))
		if at >= base && at < base+4*uintptr(len(t.host)) {
			return t.dev.Add(int(at - base)), true
		}
	}
	return 0, false
}

// twinOf is dev for the buffers that always have a twin.
func (b *cudaBackend) twinOf(x []float32) cu.Ptr {
	p, ok := b.dev(x)
	if !ok {
		panic("cuda backend: an activation buffer without a device twin")
	}
	return p
}

// step runs one forward pass on the device thread: the batch's tokens and
// first position uploaded, then the pass, recorded once and replayed for a
// single token with logits, and the logits brought back into dst.
func (b *cudaBackend) step(tokens []int32, pos int, dst []float32, fwd func() error) error {
	return b.e.Do(func(l *cuda.Launcher) (err error) {
		b.l = l
		l.MMA, l.MMAInt, l.DecodeAttn, l.LongRowU, l.XS, l.Early = b.mma, b.mmaInt, b.dattn, b.longU, b.xs, b.early
		if b.mmaPipe != "" {
			l.Pipe = cuda.PipeTileNamed(b.mmaPipe)
		}
		defer func() { b.l = nil }()
		run := func() (err error) {
			defer recoverCUDA(&err)
			l.T.PDL = b.pdl
			defer func() { l.T.PDL = false }()
			b.nextCtr, b.pending, b.pendPro = 0, nil, nil
			if err := fwd(); err != nil {
				return err
			}
			b.flush()
			return nil
		}
		if err := cu.HtoDAsync(l.T, b.tokens, tokens, l.S); err != nil {
			return err
		}
		if err := cu.HtoDAsync(l.T, b.pos, []int32{int32(pos)}, l.S); err != nil {
			return err
		}
		switch {
		case len(tokens) == 1 && dst != nil && !b.noGraph:
			if b.pers != nil {
				fwd = b.persistentStep // what run records
			}
			if b.graph == nil {
				g, err := l.T.Capture(l.S, run)
				if err != nil {
					return fmt.Errorf("recording the decode step: %w", err)
				}
				b.graph = g
			}
			if err := l.T.LaunchGraph(b.graph, l.S); err != nil {
				return err
			}
			if b.pers != nil {
				if err := b.pers.k.EnqueueCheck(l); err != nil {
					return err
				}
				defer func() {
					if err == nil {
						err = b.pers.k.Check(l)
					}
				}()
			}
		default:
			if err := run(); err != nil {
				return err
			}
		}
		if dst != nil {
			if err := cu.DtoHAsync(l.T, dst, b.logits, l.S); err != nil {
				return err
			}
		}
		return l.T.Sync(l.S)
	})
}

// toHost copies x's device twin into x (Options.Capture reads the host
// buffers); only inside a step.
func (b *cudaBackend) toHost(x []float32) error {
	b.flush()
	return cu.DtoHAsync(b.l.T, x, b.twinOf(x), b.l.S)
}

// must raises a launch failure: the backend's steps other than rows return
// nothing, so step recovers it as the pass's error (recoverCUDA).
func (b *cudaBackend) must(err error) {
	if err != nil {
		panic(backendFailure{err})
	}
}

func (b *cudaBackend) rows(t rowTask) (err error) {
	defer recoverCUDA(&err)
	if b.fuseNorm(t) || b.deferPrologue(t) {
		return nil
	}
	b.flush()
	b.rowsNow(t)
	return nil
}

// rowsNow launches t's kernels.
func (b *cudaBackend) rowsNow(t rowTask) {
	cfg, l := b.cfg, b.l
	n, d := t.n, cfg.Dim
	s := b.s
	x := b.twinOf(s.x)
	b.act.src = 0
	var add cu.Ptr
	switch t.op {
	case rowEmbed:
		b.must(l.Embed(x, b.embed, b.tokens, n))
	case rowAdd:
		add = b.twinOf(s.tmp)
	case rowRopeStore:
		b.must(b.ropeStore(t.layer, n))
	case rowSiLU:
		g, u := b.twinOf(s.gate), b.twinOf(s.up)
		if t.next != nil && t.norm == nil {
			b.must(l.SiLUMulQ(g, u, n, cfg.FFNDim, b.xq, t.next.at))
			b.act.src, b.act.typ, b.act.rows = g, t.next.at, n
		} else {
			b.must(l.SiLUMul(g, g, u, n*cfg.FFNDim))
		}
	}
	switch {
	case t.next != nil && t.norm != nil:
		// The norm and the quantization for the next product in one launch.
		xq, at := b.xq, t.next.at
		b.must(l.AddRMSNormQ(x, add, b.twinOf(s.xn), b.norms[&t.norm[0]], n, d, cfg.RMSEps, t.from, xq, at))
		b.act.src, b.act.typ, b.act.rows = b.twinOf(t.nextIn).Add(4*t.from*t.next.w.Cols), at, n-t.from
		return
	case t.op == rowSiLU && t.next != nil:
		return // quantized above
	case t.norm != nil || add != 0:
		var w cu.Ptr
		if t.norm != nil {
			w = b.norms[&t.norm[0]]
		}
		b.must(l.AddRMSNorm(x, add, b.twinOf(s.xn), w, n, d, cfg.RMSEps, t.from))
	}
	if t.next != nil {
		k := t.next.w.Cols
		src := b.twinOf(t.nextIn).Add(4 * t.from * k)
		b.must(l.Quantize(t.next.at, b.xq, src, (n-t.from)*k))
		b.act.src, b.act.typ, b.act.rows = src, t.next.at, n-t.from
	}
}

// pendingProduct is a single token's product into s.tmp held back by linear
// (NormTailEnv) for the residual add and norm that follow it.
type pendingProduct struct {
	out cu.Ptr
	w   cuda.Weights
}

// flush launches a held-back product, or a held-back row task, on its own.
func (b *cudaBackend) flush() {
	if p := b.pending; p != nil {
		b.pending = nil
		b.must(b.l.MatMul(p.out, p.w, b.xq, 1))
	}
	if p := b.pendPro; p != nil {
		b.pendPro = nil
		b.rowsNow(p.t)
	}
}

// pendingPrologue is a single token's row task held back (cuda-pro) to be
// the prologue of the product that reads its output, in.
type pendingPrologue struct {
	t  rowTask
	p  cuda.Prologue
	in cu.Ptr
}

// proTakes reports whether cuda-pro takes a single token's product ln.
func (b *cudaBackend) proTakes(ln *linear) bool {
	return b.pro > 0 && ln.at == quant.Q8_K && cuda.XSTakes(b.weights[&ln.w.Data[0]].Type)
}

// deferPrologue holds t back as the next product's prologue when cuda-pro
// is on and t is a single token's residual add and norm for a product, or
// its SwiGLU for the down product; it reports whether it did.
func (b *cudaBackend) deferPrologue(t rowTask) bool {
	if b.pro == 0 || t.n != 1 || t.next == nil || !b.proTakes(t.next) || t.next.w.Cols%256 != 0 {
		return false
	}
	var p cuda.Prologue
	switch {
	case t.op == rowAdd && t.norm != nil && t.from == 0 && b.nextCtr < b.nCounters:
		p = cuda.Prologue{Mode: cuda.ProNorm, X: b.twinOf(b.s.x), Add: b.twinOf(b.s.tmp), Norm: b.norms[&t.norm[0]],
			Eps: b.cfg.RMSEps, Counter: b.counters.Add(4 * b.nextCtr)}
		b.nextCtr++
	case t.op == rowSiLU && t.norm == nil:
		p = cuda.Prologue{Mode: cuda.ProSiLU, XF: b.twinOf(b.s.gate), U: b.twinOf(b.s.up)}
	default:
		return false
	}
	b.flush()
	b.pendPro = &pendingPrologue{t: t, p: p, in: b.twinOf(t.nextIn)}
	return true
}

// proLaunch runs a single token's products lins over x with cuda-pro when
// it takes them all: with the held-back row task as the prologue when x is
// its output, else x quantized by the launch itself. It reports whether it
// did; when not, the caller runs them as usual (after flush).
func (b *cudaBackend) proLaunch(x []float32, n int, lins []*linear, outs []cu.Ptr) bool {
	if b.pro == 0 || n != 1 {
		return false
	}
	for _, ln := range lins {
		if !b.proTakes(ln) || ln.w.Cols != lins[0].w.Cols {
			return false
		}
	}
	src := b.twinOf(x)
	var p cuda.Prologue
	switch {
	case b.pendPro != nil && b.pendPro.in == src:
		p = b.pendPro.p
		b.pendPro = nil
	case b.pendPro == nil && b.pending == nil && !(b.act.src == src && b.act.typ == quant.Q8_K && b.act.rows == 1):
		p = cuda.Prologue{Mode: cuda.ProQuant, XF: src}
	default:
		return false
	}
	ws := make([]cuda.Weights, len(lins))
	for i, ln := range lins {
		ws[i] = b.weights[&ln.w.Data[0]]
	}
	b.must(b.l.MatVecPro(b.pro, p, lins[0].w.Cols, outs, ws))
	b.act.src = 0 // nothing was quantized into xq
	return true
}

// fuseNorm launches the held-back product with t as its tail (mv_norm) when
// t is the residual add of that product followed by a norm and the
// quantization for the next product, over one token; it reports whether
// it did.
func (b *cudaBackend) fuseNorm(t rowTask) bool {
	p := b.pending
	if p == nil || t.op != rowAdd || t.n != 1 || t.from != 0 || t.norm == nil || t.next == nil || p.out != b.twinOf(b.s.tmp) {
		return false
	}
	b.pending = nil
	cfg, s := b.cfg, b.s
	ctr := b.counters.Add(4 * b.nextCtr)
	b.nextCtr++
	b.must(b.l.MatVecNorm(p.out, p.w, b.xq, b.twinOf(s.x), b.twinOf(s.xn), b.norms[&t.norm[0]], cfg.Dim, cfg.RMSEps, b.xq, t.next.at, ctr))
	b.act.src, b.act.typ, b.act.rows = b.twinOf(t.nextIn), t.next.at, 1
	return true
}

// recoverCUDA turns a launch failure raised by must into the error of the
// call that recovers it.
func recoverCUDA(err *error) {
	if p := recover(); p != nil {
		f, ok := p.(backendFailure)
		if !ok {
			panic(p)
		}
		*err = f.err
	}
}

func (b *cudaBackend) ropeStore(layer, n int) error {
	cfg := b.cfg
	q, k, v := b.twinOf(b.s.q), b.twinOf(b.s.kb), b.twinOf(b.s.vb)
	return b.l.RopeStore(q, k, v, b.kc[layer], b.vc[layer], b.pos, n, cfg.Heads, cfg.KVHeads, cfg.HeadDim, b.nctx, b.cosT, b.sinT, ropeNeoX)
}

// linear quantizes x unless the last row task left it quantized for l's
// activation type, then runs the product; a destination outside runState
// is the logits.
func (b *cudaBackend) linear(dst []float32, ln *linear, x []float32, n int) {
	out, ok := b.dev(dst)
	if !ok {
		if n > b.logitsRows {
			panic(backendFailure{fmt.Errorf("logits of %d rows, room for %d", n, b.logitsRows)})
		}
		out = b.logits
	}
	if b.proLaunch(x, n, []*linear{ln}, []cu.Ptr{out}) {
		return
	}
	b.flush()
	b.quantized(ln, x, n)
	if b.normTail && n == 1 && ok && &dst[0] == &b.s.tmp[0] && b.nextCtr < b.nCounters {
		b.pending = &pendingProduct{out: out, w: b.weights[&ln.w.Data[0]]} // launched by the next rows task
		return
	}
	b.must(b.l.MatMul(out, b.weights[&ln.w.Data[0]], b.xq, n))
	if checkProducts {
		b.checkProduct(ln, out, n)
	}
}

// linearShared runs a single token's two or three products in one launch
// when their inputs are quantized alike, else one after the other.
func (b *cudaBackend) linearShared(x []float32, n int, a *linear, da []float32, c *linear, dc []float32, e *linear, de []float32) {
	lins, dsts := []*linear{a, c}, [][]float32{da, dc}
	if e != nil {
		lins, dsts = append(lins, e), append(dsts, de)
	}
	outs := make([]cu.Ptr, len(dsts))
	for i, d := range dsts {
		outs[i] = b.twinOf(d)
	}
	if b.proLaunch(x, n, lins, outs) {
		return
	}
	b.flush()
	same := n == 1
	for _, l := range lins[1:] {
		same = same && l.at == a.at && l.w.Cols == a.w.Cols
	}
	if same {
		b.quantized(a, x, n)
		ws, ps := make([]cuda.Weights, len(lins)), make([]cu.Ptr, len(lins))
		for i, l := range lins {
			ws[i], ps[i] = b.weights[&l.w.Data[0]], b.twinOf(dsts[i])
		}
		b.must(b.l.MatVecMulti(b.xq, ps, ws))
		if checkProducts {
			for i, l := range lins {
				b.checkProduct(l, ps[i], n)
			}
		}
		return
	}
	b.linear(da, a, x, n)
	b.linear(dc, c, x, n)
	if e != nil {
		b.linear(de, e, x, n)
	}
}

// quantized makes sure b.xq holds n rows of x quantized for ln.
func (b *cudaBackend) quantized(ln *linear, x []float32, n int) {
	src := b.twinOf(x)
	if b.act.src != src || b.act.typ != ln.at || b.act.rows != n {
		b.must(b.l.Quantize(ln.at, b.xq, src, n*ln.w.Cols))
		b.act.src, b.act.typ, b.act.rows = src, ln.at, n
	}
}

// attention rotates and stores a single token's keys first (a batch's
// were by rowRopeStore), then attends.
func (b *cudaBackend) attention(layer, n int) {
	b.flush()
	cfg := b.cfg
	q, att := b.twinOf(b.s.q), b.twinOf(b.s.att)
	scale := float32(1 / math.Sqrt(float64(cfg.HeadDim)))
	b.act.src = 0
	if n == 1 && b.ropeFold && cuda.DecodeAttentionFits(cfg.HeadDim) {
		k, v := b.twinOf(b.s.kb), b.twinOf(b.s.vb)
		b.must(b.l.RopeDecodeAttention(att, q, k, v, b.kc[layer], b.vc[layer], b.po, b.pml, b.dattnCnt, b.pos,
			cfg.Heads, cfg.KVHeads, cfg.HeadDim, b.nctx, scale, b.cosT, b.sinT, ropeNeoX))
		return
	}
	if n == 1 {
		b.must(b.ropeStore(layer, 1))
	}
	if n == 1 && cuda.DecodeAttentionFits(cfg.HeadDim) {
		b.must(b.l.DecodeAttention(att, q, b.kc[layer], b.vc[layer], b.po, b.pml, b.dattnCnt, b.pos, cfg.Heads, cfg.KVHeads, cfg.HeadDim, b.nctx, scale))
		return
	}
	if n > 1 && b.flashPre {
		b.must(b.l.AttentionFlash(att, q, b.kc[layer], b.vc[layer], b.pos, n, cfg.Heads, cfg.KVHeads, cfg.HeadDim, b.nctx, scale))
		b.act.src = 0
		return
	}
	p := b.batch
	if n == 1 {
		p = b.decode
	}
	b.must(b.l.Attention(p, att, q, b.kc[layer], b.vc[layer], b.po, b.pml, b.pos, n, cfg.Heads, cfg.KVHeads, cfg.HeadDim, b.nctx, scale))
	b.act.src = 0
}

func (b *cudaBackend) close() {
	_ = b.e.Do(func(l *cuda.Launcher) error {
		if b.graph != nil {
			_ = l.T.DestroyGraph(b.graph)
		}
		if b.pers != nil {
			b.pers.k.Free(l)
		}
		for _, p := range b.allocs {
			_ = l.T.Free(p)
		}
		return nil
	})
	b.allocs, b.graph = nil, nil
}
