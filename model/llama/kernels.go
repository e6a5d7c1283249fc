package llama

import (
	"fmt"
	"slices"
	"strings"

	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/promoted"
	"github.com/damascus-llm/damascus/quant"
)

// linear is one weight matrix bound to its kernels.
type linear struct {
	w  *Matrix
	at quant.Type // activation type its kernels take
	mv ledger.MatVec
	mm ledger.MatMul
	// prep is mm in two steps (nil when its kernel has none): batches then
	// lay their activations out once and deal the rows in chunks. Tasks
	// whose kernels share mmID share the layout.
	prep *ledger.PreparedMatMul
	mmID string
	// bmm is the batched decode kernel (matvec_batch) a Batch's rows go
	// through, every token's products independent of the others; bprep
	// its prepared form (nil when it has none), bmmID its layout's name.
	bmm   ledger.MatMul
	bprep *ledger.PreparedMatMul
	bmmID string
	// layout is the weight layout mv reads (nil: w as stored), lw w in it;
	// blayout and blw bmm's, mlayout and mlw mm's (the model's copies,
	// built at load by bindLayouts, one per layout).
	layout, blayout, mlayout *ledger.WeightLayout
	lw, blw, mlw             []byte
}

type layerOps struct{ q, k, v, out, gate, up, down linear }

// linears lists every product of k: each layer's, then the output head.
func (k *kernels) linears() []*linear {
	ls := make([]*linear, 0, 7*len(k.layers)+1)
	for i := range k.layers {
		o := &k.layers[i]
		ls = append(ls, &o.q, &o.k, &o.v, &o.out, &o.gate, &o.up, &o.down)
	}
	return append(ls, &k.output)
}

// kernels are the promoted kernels a Context runs: every matrix bound to
// its products, and the row and attention kernels for its cache type.
type kernels struct {
	layers []layerOps
	output linear
	quant  map[quant.Type]ledger.Quantize // per activation type
	rms    ledger.RMSNorm
	silu   ledger.SiLUMul
	rope   ledger.RoPE
	attn   ledger.Attention
	attnB  ledger.AttentionBatch // prefill over the F32 cache
	attnH  ledger.AttentionBatch // prefill attention over a 16-bit cache, on its rows widened
	widenH ledger.Dequantize     // a 16-bit cache's rows to float32
	attn16 ledger.AttentionHalf  // decode attention over a 16-bit cache as stored
	// smallRows is the most rows of a prefill step whose products go
	// through the batched decode kernels (bmm, bprep) instead of the
	// matmul: promoted.SmallBatchRows, 0 when some matrix's batched decode
	// kernel has no prepared form (no SIMD variant: the matvec looped) or
	// with Options.StaticSplit.
	smallRows int
	// chunkRows is the weight rows per dealt chunk of a prefill matmul
	// over a prepared batch (promoted.BatchChunkRows).
	chunkRows int
	// dealRun is the most chunks a worker takes at once from its share of
	// a decode step's matvec rows (promoted.DealRunChunks).
	dealRun int
}

// cachePrecision is the attention precision class of each 16-bit cache type.
var cachePrecision = map[quant.Type]ledger.Precision{quant.BF16: ledger.PrecisionBF16, quant.F16: ledger.PrecisionF16}

// resolveKernels binds every matrix of m to the promoted kernels of its type
// and picks the attention kernels of the cache type opts asks for.
func resolveKernels(m *Model, opts Options) (*kernels, error) {
	k := &kernels{quant: map[quant.Type]ledger.Quantize{},
		rms: promoted.RMSNorm(), silu: promoted.SiLUMul(), rope: promoted.RoPE(), attn: promoted.Attention(), attnB: promoted.AttentionBatch()}
	var err error
	if p, ok := cachePrecision[opts.KVType]; ok {
		if k.attnH, err = promoted.AttentionBatchAt(p); err != nil {
			return nil, fmt.Errorf("%s KV cache: %w", opts.KVType, err)
		}
		if k.widenH, err = promoted.Dequantize(opts.KVType); err != nil {
			return nil, fmt.Errorf("%s KV cache: %w", opts.KVType, err)
		}
		if k.attn16, err = promoted.AttentionHalf(opts.KVType); err != nil {
			return nil, fmt.Errorf("%s KV cache: %w", opts.KVType, err)
		}
	}
	k.layers = make([]layerOps, len(m.Layers))
	for i := range m.Layers {
		L, ops := &m.Layers[i], &k.layers[i]
		for _, b := range []struct {
			dst *linear
			w   *Matrix
		}{{&ops.q, &L.Q}, {&ops.k, &L.K}, {&ops.v, &L.V}, {&ops.out, &L.Out}, {&ops.gate, &L.Gate}, {&ops.up, &L.Up}, {&ops.down, &L.Down}} {
			if *b.dst, err = k.bind(b.w, opts.StaticSplit); err != nil {
				return nil, err
			}
		}
	}
	if k.output, err = k.bind(&m.Output, opts.StaticSplit); err != nil {
		return nil, err
	}
	if err := m.bindLayouts(k); err != nil {
		return nil, err
	}
	if k.chunkRows, err = promoted.BatchChunkRows(); err != nil {
		return nil, err
	}
	if k.dealRun, err = promoted.DealRunChunks(); err != nil {
		return nil, err
	}
	if !opts.StaticSplit {
		if k.smallRows, err = promoted.SmallBatchRows(); err != nil {
			return nil, err
		}
		for _, l := range k.linears() {
			if l.bprep == nil && l.blayout == nil {
				k.smallRows = 0
			}
		}
	}
	return k, nil
}

// bind resolves w's matvec, matmul (without its prepared form when
// staticSplit) and batched decode kernel, and the quantization of its
// activations.
func (k *kernels) bind(w *Matrix, staticSplit bool) (linear, error) {
	l := linear{w: w, at: ledger.ActivationType(w.Type)}
	if err := supported(w); err != nil {
		return l, err
	}
	var err error
	mv, err := promoted.MatVecFor(w.Type)
	if err != nil {
		return l, fmt.Errorf("%s: %w", w.Name, err)
	}
	l.mv, l.layout = mv.MatVec, mv.Layout
	mk, err := promoted.MatMulFor(w.Type)
	if err != nil {
		return l, fmt.Errorf("%s: %w", w.Name, err)
	}
	l.mm, l.mmID, l.mlayout = mk.MatMul, mk.ID, mk.Layout
	bk, err := promoted.MatVecBatchKernel(w.Type)
	if err != nil {
		return l, fmt.Errorf("%s: %w", w.Name, err)
	}
	l.bmm, l.bmmID = bk.MatMul, bk.ID
	l.bprep, l.blayout = bk.Prepared, bk.Layout
	if !staticSplit {
		l.prep = mk.Prepared
	}
	if _, ok := k.quant[l.at]; !ok {
		q, err := promoted.Quantize(l.at)
		if err != nil {
			return l, fmt.Errorf("%s: %w", w.Name, err)
		}
		k.quant[l.at] = q
	}
	if _, err := quant.RowSize(l.at, int64(w.Cols)); err != nil {
		return l, fmt.Errorf("%s: activations of %d values in %s: %w", w.Name, w.Cols, l.at, err)
	}
	return l, nil
}

// supported refuses a matrix of a weight type without kernels here by
// name, with the types that run, before a kernel lookup's internal error.
func supported(w *Matrix) error {
	if slices.Contains(ledger.WeightTypes, w.Type) {
		return nil
	}
	return fmt.Errorf("%s: %s weights are not supported (Damascus runs %s; damascus quantize "+
		"or llama-quantize --allow-requantize converts a model to Q4_K_M, Q5_K_M or Q8_0)", w.Name, w.Type, typeList(ledger.WeightTypes))
}

// typeList names types as "A, B or C".
func typeList(ts []quant.Type) string {
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = t.String()
	}
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}
