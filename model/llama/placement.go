package llama

import (
	"fmt"

	"github.com/damascus-llm/damascus/internal/hugemem"
)

// Placement says where a Model's weights live while it runs. Decode streams
// every weight once per token, and on virtual machines the page-table walks
// of 4 KiB pages cost as much as the arithmetic, so it is a measured choice.
type Placement string

const (
	// PlaceMmap uses the weights in place in the read-only file map (4 KiB
	// pages; the default, and no copy).
	PlaceMmap Placement = "mmap"
	// PlaceHuge copies the weights into anonymous memory advised for
	// transparent huge pages (2 MiB pages in the kernel's "madvise" mode).
	PlaceHuge Placement = "huge"
)

// ParsePlacement reads a placement name.
func ParsePlacement(s string) (Placement, error) {
	switch p := Placement(s); p {
	case PlaceMmap, PlaceHuge:
		return p, nil
	case "":
		return PlaceMmap, nil
	}
	return "", fmt.Errorf("unknown weight placement %q (want %s or %s)", s, PlaceMmap, PlaceHuge)
}

// Place moves the model's matrices to p. For PlaceHuge it returns the region
// holding them, which the caller frees (after the last use of the Model);
// for PlaceMmap it does nothing and returns nil. Small vectors (norms, rope
// factors) stay where they are.
func (m *Model) Place(p Placement) (*hugemem.Region, error) {
	if p != PlaceHuge {
		return nil, nil
	}
	mats := m.matrices()
	total := 0
	for _, mat := range mats {
		total += align64(len(mat.Data))
	}
	r, err := hugemem.Alloc(total)
	if err != nil {
		return nil, fmt.Errorf("placing weights on huge pages: %w", err)
	}
	buf := r.Bytes()
	off := 0
	for _, mat := range mats {
		n := copy(buf[off:], mat.Data)
		mat.Data = buf[off : off+n : off+n]
		off += align64(n)
	}
	if m.Tied {
		m.Output = m.Embed
	}
	return r, nil
}

// matrices lists every distinct weight matrix once (a tied output head is
// the embedding).
func (m *Model) matrices() []*Matrix {
	mats := []*Matrix{&m.Embed}
	if !m.Tied {
		mats = append(mats, &m.Output)
	}
	for i := range m.Layers {
		l := &m.Layers[i]
		mats = append(mats, &l.Q, &l.K, &l.V, &l.Out, &l.Gate, &l.Up, &l.Down)
	}
	return mats
}

func align64(n int) int { return (n + 63) &^ 63 }
