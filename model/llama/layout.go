package llama

import (
	"fmt"
	"sync"

	"github.com/damascus-llm/damascus/internal/hugemem"
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

// bindLayouts gives every product of k whose matvec reads a weight layout
// its matrix in that layout, repacking the ones not yet in the model's
// cache into one region on huge pages, as the weights are. The file's
// layout stays: the prefill and batched kernels read it.
func (m *Model) bindLayouts(k *kernels) error {
	m.layouts.mu.Lock()
	defer m.layouts.mu.Unlock()
	if m.layouts.data == nil {
		m.layouts.data = map[layoutKey][]byte{}
	}
	var todo []*linear
	total := 0
	seen := map[layoutKey]bool{}
	for _, l := range k.linears() {
		if l.layout == nil {
			continue
		}
		key := layoutKey{l.w, l.layout.Name}
		if m.layouts.data[key] == nil && !seen[key] {
			seen[key] = true
			todo = append(todo, l)
			total += l.layout.Size(l.w.Rows, l.w.Cols)
		}
	}
	if total > 0 {
		r, err := hugemem.Alloc(total)
		if err != nil {
			return fmt.Errorf("weight layouts: %w", err)
		}
		free := r.Bytes()
		made := map[layoutKey][]byte{}
		for _, l := range todo {
			n := l.layout.Size(l.w.Rows, l.w.Cols)
			b := free[:n:n]
			free = free[n:]
			if err := l.layout.Repack(b, l.w.Data, l.w.Rows, l.w.Cols); err != nil {
				r.Free() // nothing of the region is in the cache yet
				return fmt.Errorf("%s in weight layout %s: %w", l.w.Name, l.layout.Name, err)
			}
			made[layoutKey{l.w, l.layout.Name}] = b
		}
		for key, b := range made {
			m.layouts.data[key] = b
		}
	}
	for _, l := range k.linears() {
		if l.layout != nil {
			l.lw = m.layouts.data[layoutKey{l.w, l.layout.Name}]
		}
	}
	return nil
}

// layoutRows reports the rows a task's shares and chunks must be multiples
// of: its weight layout's group for a single token's product, else 1.
func (t *linTask) layoutRows() int {
	if t.mode == linVec && t.l.layout != nil {
		return t.l.layout.Rows
	}
	return 1
}

// rowsInLayout is rows for a single token's product over a weight layout:
// [lo, hi) starts at a group and ends at one or at the matrix's end.
func (t *linTask) rowsInLayout(lo, hi int) {
	w, lay := t.l.w, t.l.layout
	end := len(t.l.lw)
	if hi < w.Rows {
		end = lay.Offset(hi, w.Cols)
	}
	t.l.mv(t.dst[lo:hi], t.l.lw[lay.Offset(lo, w.Cols):end], t.xr, w.Cols)
}
