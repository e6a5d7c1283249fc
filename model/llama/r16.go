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
	ls := k.linears()
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
		data, err := repackR16(ls, modes, size)
		if err != nil {
			return err
		}
		m.r16.data = data
	}
	for _, l := range ls {
		if b := m.r16.data[l.w]; b != nil {
			l.r16, l.r16k = b, modes[l.w.Type]
		}
	}
	return nil
}

// repackR16 makes the interleaved copy of each distinct matrix of ls that
// size gives bytes to, all in one region on huge pages as the weights are
// (it lives as long as the process: an experiment's measurement aid).
func repackR16(ls []*linear, modes map[quant.Type]*promoted.R16Kernels, size func(*Matrix) int) (map[*Matrix][]byte, error) {
	data := map[*Matrix][]byte{}
	total := 0
	seen := map[*Matrix]bool{}
	for _, l := range ls {
		if !seen[l.w] {
			seen[l.w], total = true, total+size(l.w)
		}
	}
	if total == 0 {
		return data, nil
	}
	r, err := hugemem.Alloc(total)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", promoted.R16Env, err)
	}
	free := r.Bytes()
	for _, l := range ls {
		w, n := l.w, size(l.w)
		if n == 0 || data[w] != nil {
			continue
		}
		b := free[:n:n]
		free = free[n:]
		if err := modes[w.Type].Repack(b, w.Data, w.Rows, w.Cols); err != nil {
			r.Free()
			return nil, fmt.Errorf("%s: %w", w.Name, err)
		}
		data[w] = b
	}
	return data, nil
}
