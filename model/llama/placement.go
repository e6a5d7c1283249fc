package llama

import (
	"fmt"
	"unsafe"

	"github.com/damascus-llm/damascus/gguf"
	"github.com/damascus-llm/damascus/internal/hugemem"
	"github.com/damascus-llm/damascus/ledger"
)

// Placement says where a Model's weights live while it runs. Decode streams
// every weight once per token, and on virtual machines the page-table walks
// of 4 KiB pages cost as much as the arithmetic, so it is a measured choice.
type Placement string

const (
	// PlaceMmap uses the weights in place in the read-only file map (4 KiB
	// pages, no copy).
	PlaceMmap Placement = "mmap"
	// PlaceHuge copies the weights into anonymous memory advised for
	// transparent huge pages (2 MiB pages in the kernel's "madvise" mode).
	PlaceHuge Placement = "huge"
)

// DefaultPlacement is the engine's placement unless told otherwise: on the
// project's VMs (THP "madvise") a 3B Q4_K_M decodes at a steady 16–19 tok/s
// from huge pages and at an erratic 2.5–10 tok/s from the file map.
const DefaultPlacement = PlaceHuge

// ParsePlacement reads a placement name; "" is DefaultPlacement.
func ParsePlacement(s string) (Placement, error) {
	switch p := Placement(s); p {
	case PlaceMmap, PlaceHuge:
		return p, nil
	case "":
		return DefaultPlacement, nil
	}
	return "", fmt.Errorf("unknown weight placement %q (want %s or %s)", s, PlaceMmap, PlaceHuge)
}

// Placed is where PlaceFile put a Model's weights.
type Placed struct {
	// Placement is where the weights are: PlaceMmap when that was asked, or
	// after a fallback from PlaceHuge.
	Placement Placement
	// Region holds the copied matrices (nil in the file map). Free it after
	// the last use of the Model.
	Region *hugemem.Region
	// Notice is one line saying why PlaceHuge fell back to the file map, for
	// the user's stderr; empty otherwise.
	Notice string
	// FileReleased says the file map was unmapped once the copy no longer
	// needed it (the File's metadata stay readable, its tensor data do not).
	FileReleased bool
}

// Free unmaps the copy, if any. Safe on nil and twice.
func (p *Placed) Free() error {
	if p == nil {
		return nil
	}
	err := p.Region.Free()
	p.Region = nil
	return err
}

// PlaceFile puts the weights of m, which FromGGUF read from f, where p says.
//
// For PlaceHuge it copies every matrix onto huge pages and, as it goes,
// drops the file pages it copied from out of the process's resident set
// (madvise(MADV_DONTNEED) on the read-only file map: the page cache is left
// alone), so that the resident set never holds both the copy and the file;
// then, when nothing of m points into f any more, it unmaps f (Close: its
// metadata, the tokenizer's included, stay readable; its tensor data must not
// be used again, by m or by anyone else). When huge pages are unavailable
// (not linux, no transparent huge pages, THP "never", the advice refused or
// the memory not to be had) the weights stay in the file map and Notice says
// why: that is never an error.
//
// For PlaceMmap it does nothing.
func (m *Model) PlaceFile(f *gguf.File, p Placement) (*Placed, error) {
	return m.placeFile(f, p, nil)
}

// placeFile is PlaceFile with each matrix of lays copied into its weight
// layout alone (CPULayouts; PlaceHuge only).
func (m *Model) placeFile(f *gguf.File, p Placement, lays map[*Matrix]*ledger.WeightLayout) (*Placed, error) {
	switch p {
	case PlaceMmap:
		return &Placed{Placement: PlaceMmap}, nil
	case PlaceHuge:
	default:
		return nil, fmt.Errorf("unknown weight placement %q", p)
	}
	fallback := func(why string) *Placed {
		return &Placed{Placement: PlaceMmap, Notice: "damascus: weights stay in the file map (4 KiB pages, as --weights mmap): " + why}
	}
	if why := hugeUnavailable(); why != "" {
		return fallback(why), nil
	}
	r, err := m.copyMatrices(f, true, lays)
	if err != nil {
		return fallback(err.Error()), nil
	}
	placed := &Placed{Placement: PlaceHuge, Region: r}
	if !m.pointsInto(f) {
		if err := f.Close(); err != nil {
			placed.Free()
			return nil, fmt.Errorf("releasing the file map: %w", err)
		}
		placed.FileReleased = true
	}
	return placed, nil
}

// Place moves the model's matrices to p, leaving the file alone (no release,
// no fallback: PlaceFile is the engine's way). For PlaceHuge it returns the
// region holding them, which the caller frees (after the last use of the
// Model); for PlaceMmap it does nothing and returns nil. Small vectors
// (norms, rope factors) are Go copies already.
func (m *Model) Place(p Placement) (*hugemem.Region, error) {
	if p != PlaceHuge {
		return nil, nil
	}
	return m.copyMatrices(nil, false, nil)
}

// hugeUnavailable is hugemem.Unavailable; tests replace it to take the
// fallback on a machine with huge pages.
var hugeUnavailable = hugemem.Unavailable

// releaseChunk is how much is copied between two releases of file pages: the
// resident set carries at most this much of the file beside the copy.
const releaseChunk = 16 << 20

// copyMatrices copies every matrix into one huge-page region and points the
// model at the copies. With release, a matrix in f is read from the file
// (gguf.File.ReadInto: its map's pages never become resident, and reading
// is several times faster than faulting them in); should that fail, it is
// copied from the map and the pages of each chunk dropped from the resident
// set right after it (advice only: a failure to release changes nothing but
// memory use). The region is refused when the kernel does not accept the
// huge-page advice. A matrix of lays is repacked into its layout instead
// (its stored bytes read once, from the map, then released): the model's
// layout cache holds it and its Data is nil from then on.
func (m *Model) copyMatrices(f *gguf.File, release bool, lays map[*Matrix]*ledger.WeightLayout) (*hugemem.Region, error) {
	mats := m.matrices()
	size := func(mat *Matrix) int {
		if lay := lays[mat]; lay != nil {
			return align64(lay.Size(mat.Rows, mat.Cols))
		}
		return align64(len(mat.Data))
	}
	total := 0
	for _, mat := range mats {
		total += size(mat)
	}
	r, err := hugemem.Alloc(total)
	if err != nil {
		return nil, fmt.Errorf("placing weights on huge pages: %w", err)
	}
	if release && !r.Advised() {
		r.Free()
		return nil, fmt.Errorf("the kernel refused madvise(MADV_HUGEPAGE)")
	}
	release = release && f != nil && f.Mapped()
	buf := r.Bytes()
	off := 0
	placed := map[layoutKey][]byte{}
	for _, mat := range mats {
		src := mat.Data
		if lay := lays[mat]; lay != nil {
			n := lay.Size(mat.Rows, mat.Cols)
			dst := buf[off : off+n : off+n]
			if err := lay.Repack(dst, src, mat.Rows, mat.Cols); err != nil {
				r.Free()
				return nil, fmt.Errorf("%s in weight layout %s: %w", mat.Name, lay.Name, err)
			}
			if release && f.Holds(src) {
				f.ReleasePages(src) // advice only, as below
			}
			placed[layoutKey{mat, lay.Name}] = dst
			mat.Data, mat.placedIn, mat.placed = nil, lay, dst
			off += size(mat)
			continue
		}
		dst := buf[off : off+len(src) : off+len(src)]
		fromFile := release && f.Holds(src)
		if fromFile && f.ReadInto(dst, src) == nil {
			mat.Data = dst
			off += align64(len(src))
			continue
		}
		for i := 0; i < len(src); i += releaseChunk {
			j := min(i+releaseChunk, len(src))
			copy(dst[i:j], src[i:j])
			if fromFile && f.ReleasePages(src[i:j]) != nil {
				fromFile = false
			}
		}
		mat.Data = dst
		off += align64(len(src))
	}
	if m.Tied {
		m.Output = m.Embed
	}
	if len(placed) > 0 {
		m.layouts.mu.Lock()
		if m.layouts.data == nil {
			m.layouts.data = map[layoutKey][]byte{}
		}
		for k, b := range placed {
			m.layouts.data[k] = b
		}
		m.layouts.mu.Unlock()
	}
	return r, nil
}

// pointsInto reports whether any weight of m is still a view into f.
func (m *Model) pointsInto(f *gguf.File) bool {
	for _, mat := range m.matrices() {
		if len(mat.Data) > 0 && f.Holds(mat.Data) {
			return true
		}
	}
	vecs := [][]float32{m.Norm, m.FreqFactors}
	for i := range m.Layers {
		vecs = append(vecs, m.Layers[i].AttnNorm, m.Layers[i].FFNNorm)
	}
	for _, v := range vecs {
		if len(v) > 0 && f.Holds(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(v))), 4*len(v))) {
			return true
		}
	}
	return false
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
