package llama

import (
	"fmt"
	"sync"

	"github.com/damascus-llm/damascus/internal/hugemem"
	"github.com/damascus-llm/damascus/promoted"
	"github.com/damascus-llm/damascus/quant"
)

// r16Cache holds a model's Q4_K and Q6_K matrices interleaved for the
// $DAMASCUS_R16 experiment, each built once, on first use, for every
// context of the model.
type r16Cache struct {
	mu   sync.Mutex
	data map[*Matrix][]byte
}

// bindR16 gives every Q4_K and Q6_K matrix of k whose shape the
// interleave takes (rows a multiple of 16) its interleaved copy when
// $DAMASCUS_R16 asks for the experiment; nothing otherwise.
func (m *Model) bindR16(k *kernels) error {
	modes, err := promoted.R16Mode()
	if err != nil || modes == nil {
		return err
	}
	ls := []*linear{&k.output}
	for i := range k.layers {
		o := &k.layers[i]
		ls = append(ls, &o.q, &o.k, &o.v, &o.out, &o.gate, &o.up, &o.down)
	}
	size := func(w *Matrix) int {
		mode := modes[w.Type]
		if mode == nil || w.Rows%mode.GroupRows != 0 || w.Cols%quant.QK_K != 0 {
			return 0
		}
		return w.Rows / mode.GroupRows * mode.GroupBytes(w.Cols)
	}
	m.r16.mu.Lock()
	defer m.r16.mu.Unlock()
	if m.r16.data == nil {
		// One region on huge pages, as the weights are (it lives as long
		// as the process: an experiment's measurement aid).
		total := 0
		seen := map[*Matrix]bool{}
		for _, l := range ls {
			if !seen[l.w] {
				seen[l.w], total = true, total+size(l.w)
			}
		}
		m.r16.data = map[*Matrix][]byte{}
		if total == 0 {
			return nil
		}
		r, err := hugemem.Alloc(total)
		if err != nil {
			return fmt.Errorf("%s: %w", promoted.R16Env, err)
		}
		free := r.Bytes()
		for _, l := range ls {
			w, n := l.w, size(l.w)
			if n == 0 || m.r16.data[w] != nil {
				continue
			}
			b := free[:n:n]
			free = free[n:]
			if err := modes[w.Type].Repack(b, w.Data, w.Rows, w.Cols); err != nil {
				return fmt.Errorf("%s: %w", w.Name, err)
			}
			m.r16.data[w] = b
		}
	}
	for _, l := range ls {
		if b := m.r16.data[l.w]; b != nil {
			l.r16, l.r16k = b, modes[l.w.Type]
		}
	}
	return nil
}
