package llama

import (
	"fmt"
	"sync"

	"github.com/damascus-llm/damascus/internal/hugemem"
	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/promoted"
	"github.com/damascus-llm/damascus/quant"
)

// layoutCache holds a model's matrices repacked into the weight layouts
// its single-token kernels read (ledger.WeightLayout), each built once, on
// the first context that needs it, for every context of the model.
type layoutCache struct {
	mu   sync.Mutex
	data map[layoutKey][]byte
}

type layoutKey struct {
	w      *Matrix
	layout string
}

// bindLayouts gives every product of k whose matvec or batched decode
// kernel reads a weight layout its matrix in that layout, repacking the
// ones not yet in the model's cache into one region on huge pages, as the
// weights are (kernels of one layout share one copy). The file's layout
// stays: the prefill's kernels read it.
func (m *Model) bindLayouts(k *kernels) error {
	m.layouts.mu.Lock()
	defer m.layouts.mu.Unlock()
	if m.layouts.data == nil {
		m.layouts.data = map[layoutKey][]byte{}
	}
	type job struct {
		w   *Matrix
		lay *ledger.WeightLayout
	}
	var todo []job
	total := 0
	seen := map[layoutKey]bool{}
	for _, l := range k.linears() {
		for _, lay := range []*ledger.WeightLayout{l.layout, l.blayout, l.mlayout} {
			if lay == nil || lay == l.w.placedIn {
				continue
			}
			key := layoutKey{l.w, lay.Name}
			if m.layouts.data[key] == nil && !seen[key] {
				seen[key] = true
				todo = append(todo, job{l.w, lay})
				total += lay.Size(l.w.Rows, l.w.Cols)
			}
		}
	}
	if total > 0 {
		r, err := hugemem.Alloc(total)
		if err != nil {
			return fmt.Errorf("weight layouts: %w", err)
		}
		free := r.Bytes()
		made := map[layoutKey][]byte{}
		for _, j := range todo {
			n := j.lay.Size(j.w.Rows, j.w.Cols)
			b := free[:n:n]
			free = free[n:]
			if err := j.lay.Repack(b, j.w.Data, j.w.Rows, j.w.Cols); err != nil {
				r.Free() // nothing of the region is in the cache yet
				return fmt.Errorf("%s in weight layout %s: %w", j.w.Name, j.lay.Name, err)
			}
			made[layoutKey{j.w, j.lay.Name}] = b
		}
		for key, b := range made {
			m.layouts.data[key] = b
		}
	}
	in := func(w *Matrix, lay *ledger.WeightLayout) []byte {
		if lay == w.placedIn { // placed in it by Load (a tied head is the embedding's copy)
			return w.placed
		}
		return m.layouts.data[layoutKey{w, lay.Name}]
	}
	for _, l := range k.linears() {
		if l.layout != nil {
			l.lw = in(l.w, l.layout)
		}
		if l.blayout != nil {
			l.blw = in(l.w, l.blayout)
		}
		if l.mlayout != nil {
			l.mlw = in(l.w, l.mlayout)
		}
	}
	return nil
}

// layout is the weight layout the task's kernel reads in its mode, nil
// for the weights as stored.
func (t *linTask) layout() *ledger.WeightLayout {
	switch t.mode {
	case linVec:
		return t.l.layout
	case linRows:
		return t.l.blayout
	}
	return t.l.mlayout
}

// layoutRows reports the rows a task's shares and chunks must be multiples
// of: its weight layout's group, else 1.
func (t *linTask) layoutRows() int {
	if lay := t.layout(); lay != nil {
		return lay.Rows
	}
	return 1
}

// rowsInLayout is rows for a product over a weight layout: [lo, hi)
// starts at a group and ends at one or at the matrix's end.
func (t *linTask) rowsInLayout(lo, hi int) {
	w, lay, lw := t.l.w, t.l.layout, t.l.lw
	switch t.mode {
	case linRows:
		lay, lw = t.l.blayout, t.l.blw
	case linMat:
		lay, lw = t.l.mlayout, t.l.mlw
	}
	lw = lay.Span(lw, lo, hi, w.Rows, w.Cols)
	switch {
	case t.mode == linVec:
		t.l.mv(t.dst[lo:hi], lw, t.xr, w.Cols)
	case t.mode == linRows:
		t.l.bmm(t.dst[lo:], w.Rows, lw, hi-lo, t.xr, t.n, w.Cols)
	case t.pk != nil: // a matmul's activations are the op's, laid out by its prepared form
		t.pk.Run(t.dst[lo:], w.Rows, lw, hi-lo, t.prep, t.n, w.Cols)
	default:
		t.l.mm(t.dst[lo:], w.Rows, lw, hi-lo, t.xq, t.n, w.Cols)
	}
}

// CPULayouts lists the matrices that the engine's CPU kernels read only
// through one weight layout: the matvec, the batched decode product and
// the matmul of its weight type (promoted, or forced by DAMASCUS_KERNELS)
// all read the same layout, and for the token embedding (whose rows the
// forward pass looks up) the layout can expand a row. Load places those in
// the layout alone.
func (m *Model) CPULayouts() (map[*Matrix]*ledger.WeightLayout, error) {
	byType := map[quant.Type]*ledger.WeightLayout{}
	lays := map[*Matrix]*ledger.WeightLayout{}
	for _, mat := range m.matrices() {
		if len(mat.Data) == 0 {
			continue
		}
		if err := supported(mat); err != nil {
			return nil, err
		}
		lay, seen := byType[mat.Type]
		if !seen {
			mv, err := promoted.MatVecFor(mat.Type)
			if err != nil {
				return nil, err
			}
			bk, err := promoted.MatVecBatchKernel(mat.Type)
			if err != nil {
				return nil, err
			}
			mk, err := promoted.MatMulFor(mat.Type)
			if err != nil {
				return nil, err
			}
			if mv.Layout != nil && bk.Layout == mv.Layout && mk.Layout == mv.Layout {
				lay = mv.Layout
			}
			byType[mat.Type] = lay
		}
		// The embedding's rows are looked up: only a layout that can
		// expand one takes it.
		if lay != nil && mat.Cols%quant.QK_K == 0 && (mat != &m.Embed || lay.DequantizeRow != nil) {
			lays[mat] = lay
		}
	}
	return lays, nil
}

// storedGone reports a matrix placed in a weight layout alone, which only
// the CPU's layout kernels can read.
func (m *Model) storedGone() bool {
	for _, mat := range m.matrices() {
		if mat.placedIn != nil {
			return true
		}
	}
	return false
}
