// Package gate decides whether a variant computes its op correctly before it
// may be timed: it runs the variant on deterministic inputs at every shape
// of the op (odd tails and real model shapes) and compares with the float64
// reference by NMSE, max-abs error and cosine similarity, rejects NaN/Inf,
// checks guard values on both sides of the output and that the inputs were
// left untouched, and catches panics.
package gate

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/damascus-llm/damascus/internal/numcmp"
	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/ledger/reference"
	"github.com/damascus-llm/damascus/ledger/workload"
	"github.com/damascus-llm/damascus/quant"
)

// Thresholds bound a variant's error against the float64 reference.
type Thresholds struct {
	NMSE   float64 `json:"nmse"`    // Σ(y−r)²/Σr², at most
	MaxAbs float64 `json:"max_abs"` // max|y−r| / max|r|, at most
	Cosine float64 `json:"cosine"`  // cos(y, r), at least
}

// For returns the thresholds of op. They sit orders of magnitude above
// float32 rounding of a correct kernel (so reduction order, FMA and
// reasonable approximations of exp and rsqrt pass) and orders below what a
// wrong index, scale or sign produces. Matmul leaves room for bf16 weight
// panels (AMX-BF16); quantize compares the dequantized output with the
// unquantized input, so it allows the format's own rounding.
func For(op *ledger.Op) Thresholds {
	switch op.Kind {
	case ledger.KindMatVec:
		return Thresholds{NMSE: 1e-6, MaxAbs: 1e-3, Cosine: 1 - 1e-6}
	case ledger.KindMatMul:
		return Thresholds{NMSE: 1e-5, MaxAbs: 1e-2, Cosine: 1 - 1e-5}
	case ledger.KindQuantize:
		switch op.Type {
		case quant.F16:
			return Thresholds{NMSE: 1e-6, MaxAbs: 1e-3, Cosine: 1 - 1e-6}
		case quant.BF16:
			return Thresholds{NMSE: 1e-4, MaxAbs: 1e-2, Cosine: 1 - 1e-4}
		}
		return Thresholds{NMSE: 2e-3, MaxAbs: 1e-2, Cosine: 1 - 1e-3} // 8-bit blocks (outliers make ~5e-4)
	case ledger.KindDequantize, ledger.KindRoPE:
		return Thresholds{NMSE: 1e-10, MaxAbs: 1e-5, Cosine: 1 - 1e-10}
	case ledger.KindAttention, ledger.KindAttentionBatch:
		return Thresholds{NMSE: 1e-7, MaxAbs: 1e-3, Cosine: 1 - 1e-7}
	case ledger.KindAttentionHalf:
		// Rounding the query and the probabilities to the cache's type is
		// the op: held to that type's class against the float64 attention
		// of the cache's (exact) values.
		p := ledger.PrecisionF16
		if op.Type == quant.BF16 {
			p = ledger.PrecisionBF16
		}
		return reduced[p]
	}
	// rmsnorm, silu_mul, softmax
	return Thresholds{NMSE: 1e-8, MaxAbs: 1e-4, Cosine: 1 - 1e-8}
}

// ForVariant returns the thresholds v is held to: its op's, or for a
// variant of bf16 or f16 precision, the looser class that such operands
// (relative rounding 2^-9 or 2^-11) need and that a wrong index, scale or
// sign still fails by orders of magnitude.
func ForVariant(op *ledger.Op, v ledger.Variant) Thresholds {
	t := For(op)
	r, ok := reduced[v.Precision]
	if !ok {
		return t
	}
	return Thresholds{NMSE: max(t.NMSE, r.NMSE), MaxAbs: max(t.MaxAbs, r.MaxAbs), Cosine: min(t.Cosine, r.Cosine)}
}

// reduced are the thresholds of the reduced precision classes.
var reduced = map[ledger.Precision]Thresholds{
	ledger.PrecisionBF16: {NMSE: 1e-4, MaxAbs: 2e-2, Cosine: 1 - 1e-4},
	ledger.PrecisionF16:  {NMSE: 5e-6, MaxAbs: 5e-3, Cosine: 1 - 5e-6}, // rounding 2^-11: a sixteenth of bf16's squared error
}

// Metrics are a variant's measured errors.
type Metrics struct {
	NMSE    float64 `json:"nmse"`
	MaxAbs  float64 `json:"max_abs"` // relative to max|reference|
	Cosine  float64 `json:"cosine"`
	Checked int     `json:"checked"` // outputs compared with the reference
	// GGML holds the same measures against ggml's own kernel (vec_dot,
	// to_float) on the same outputs, when the pinned llama.cpp is installed
	// and ggml has the op.
	GGML *Metrics `json:"ggml,omitempty"`
}

// Compare measures y against r.
func Compare(y []float32, r []float64) Metrics {
	var se, rr, yy, yr, maxErr, maxRef float64
	for i, ri := range r {
		yi := float64(y[i])
		d := yi - ri
		se += d * d
		rr += ri * ri
		yy += yi * yi
		yr += yi * ri
		maxErr = math.Max(maxErr, math.Abs(d))
		maxRef = math.Max(maxRef, math.Abs(ri))
	}
	m := Metrics{Checked: len(r)}
	switch {
	case rr > 0:
		m.NMSE = se / rr
	case se > 0:
		m.NMSE = math.Inf(1)
	}
	switch {
	case maxRef > 0:
		m.MaxAbs = maxErr / maxRef
	case maxErr > 0:
		m.MaxAbs = math.Inf(1)
	}
	switch {
	case yy > 0 && rr > 0:
		m.Cosine = yr / math.Sqrt(yy*rr)
	case yy == 0 && rr == 0:
		m.Cosine = 1
	}
	if math.IsNaN(se) || math.IsNaN(yr) {
		m.NMSE, m.MaxAbs, m.Cosine = math.NaN(), math.NaN(), math.NaN()
	}
	return m
}

// Within reports why m breaks t, or nil.
func (t Thresholds) Within(m Metrics) error {
	var bad []string
	if !(m.NMSE <= t.NMSE) {
		bad = append(bad, fmt.Sprintf("NMSE %.3g > %.3g", m.NMSE, t.NMSE))
	}
	if !(m.MaxAbs <= t.MaxAbs) {
		bad = append(bad, fmt.Sprintf("max-abs %.3g > %.3g", m.MaxAbs, t.MaxAbs))
	}
	if !(m.Cosine >= t.Cosine) {
		bad = append(bad, fmt.Sprintf("cosine %.9f < %.9f", m.Cosine, t.Cosine))
	}
	if len(bad) == 0 {
		return nil
	}
	return errors.New(strings.Join(bad, ", "))
}

// Guard sizes: wide enough to catch a whole unrolled AVX-512 store past
// either end of the output.
const (
	guardFloats = 64
	guardBytes  = 256
	guardByte   = 0xA5
)

// guardValue is a quiet NaN with a payload no computation produces. Output
// buffers start filled with it too, so an output the variant never writes
// shows up as NaN.
var guardValue = math.Float32frombits(0x7FC0_DEAD)

func isGuard(f float32) bool { return math.Float32bits(f) == 0x7FC0_DEAD }

// A Case is one shape of one op, with its reference computed once and shared
// by every variant checked on it.
type Case struct {
	W   *workload.Workload
	idx []int
	ref []float64
	// For quantize: the reference quantizer's output.
	refBytes []byte
	// ggml's results at idx, nil when unavailable.
	ggml  []float64
	dirty bool
}

// ErrModifiedInput is the failure of a variant that wrote into an input. The
// case's inputs are then spoiled (Dirty) and must be rebuilt.
var ErrModifiedInput = errors.New("modified its input")

// Dirty reports whether a checked variant spoiled the case's inputs.
func (c *Case) Dirty() bool { return c.dirty }

// NewCase builds the workload of op at shape s and its reference.
func NewCase(op *ledger.Op, s ledger.Shape, seed uint64) (*Case, error) {
	w, err := workload.New(op, s, seed)
	if err != nil {
		return nil, err
	}
	c := &Case{W: w}
	if c.idx, c.ref, err = w.Reference(); err != nil {
		return nil, fmt.Errorf("reference: %w", err)
	}
	if op.Kind == ledger.KindQuantize {
		c.refBytes = make([]byte, w.OutLen())
		if err := quant.Quantize(op.Type, w.X, c.refBytes); err != nil {
			return nil, fmt.Errorf("reference quantizer: %w", err)
		}
	}
	if c.ggml, err = ggmlResults(w, c.idx); err != nil {
		return nil, fmt.Errorf("ggml oracle: %w", err)
	}
	return c, nil
}

// Check runs variant v once on the case and returns its metrics, or an error
// saying what is wrong (panic, guard overwritten, input modified, NaN/Inf,
// output mismatch, threshold exceeded).
func (c *Case) Check(v ledger.Variant) (m Metrics, err error) {
	w := c.W
	n := w.OutLen()
	var (
		outF []float32
		outB []byte
		bufF []float32
		bufB []byte
	)
	if w.BytesOut() {
		bufB = bytes.Repeat([]byte{guardByte}, n+2*guardBytes)
		outB = bufB[guardBytes : guardBytes+n : guardBytes+n]
	} else {
		bufF = make([]float32, n+2*guardFloats)
		for i := range bufF {
			bufF[i] = guardValue
		}
		outF = bufF[guardFloats : guardFloats+n : guardFloats+n]
		w.Prepare(outF)
	}
	// A variant with a weight layout reads a copy of the inputs in it; the
	// reference stays the stored weights'.
	in, err := w.WithLayout(v.Layout)
	if err != nil {
		return m, err
	}
	call, err := in.Bind(v.Impl, outF, outB)
	if err != nil {
		return m, err
	}
	sum := in.Checksum()
	if err := protect(call); err != nil {
		return m, err
	}
	if in.Checksum() != sum {
		c.dirty = true
		return m, ErrModifiedInput
	}
	if bufB != nil {
		if err := checkGuardBytes(bufB, n); err != nil {
			return m, err
		}
		return c.checkQuantized(outB)
	}
	if err := checkGuardFloats(bufF, n); err != nil {
		return m, err
	}
	if err := c.checkUnwritten(outF); err != nil {
		return m, err
	}
	for i, f := range outF {
		if isGuard(f) {
			continue // a matmul gap, checked above
		}
		if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
			return m, fmt.Errorf("output %d is %v", i, f)
		}
	}
	if v.Prepared != nil {
		var mismatch error
		if err := protect(func() { mismatch = c.checkPrepared(in, v.Layout, v.Prepared, outF) }); err != nil {
			return m, fmt.Errorf("prepared form: %w", err)
		}
		if mismatch != nil {
			return m, fmt.Errorf("prepared form: %w", mismatch)
		}
	}
	y := make([]float32, len(c.idx))
	for i, j := range c.idx {
		y[i] = outF[j]
	}
	m = Compare(y, c.ref)
	limits := ForVariant(w.Op, v)
	if err := limits.Within(m); err != nil {
		return m, err
	}
	if c.ggml != nil {
		g := Compare(y, c.ggml)
		m.GGML = &g
		if err := limits.Within(g); err != nil {
			return m, fmt.Errorf("against ggml: %w", err)
		}
	}
	return m, nil
}

// checkPrepared runs a matmul variant's prepared form on the case (w: its
// inputs as the variant reads them, in its weight layout lay where it has
// one), the activations laid out in ranges of p.Align rows from the last
// to the first and the weight rows in three ranges cut anywhere (at a
// layout's groups), and requires the output of its MatMul (want) bit for
// bit, gaps included.
func (c *Case) checkPrepared(w *workload.Workload, lay *ledger.WeightLayout, p *ledger.PreparedMatMul, want []float32) error {
	s := w.Shape
	prep := make([]byte, p.Size(s.N, s.K))
	for j1 := s.N; j1 > 0; {
		j0 := (j1 - 1) / p.Align * p.Align
		p.Prepare(prep, w.XQ, j0, j1, s.N, s.K)
		j1 = j0
	}
	got := make([]float32, len(want))
	for i := range got {
		got[i] = guardValue
	}
	rb, err := quant.RowSize(w.Op.Type, int64(s.K))
	if err != nil {
		return err
	}
	cuts := []int{0, s.Rows / 3, s.Rows/3 + (s.Rows+1)/2, s.Rows}
	span := func(lo, hi int) []byte { return w.W[int64(lo)*rb : int64(hi)*rb] }
	if lay != nil {
		for i := range cuts[:3] {
			cuts[i] = cuts[i] / lay.Rows * lay.Rows
		}
		span = func(lo, hi int) []byte { return lay.Span(w.W, lo, hi, s.Rows, s.K) }
	}
	for i := 1; i < len(cuts); i++ {
		lo, hi := cuts[i-1], min(cuts[i], s.Rows)
		if lo < hi {
			p.Run(got[lo:], w.LDD, span(lo, hi), hi-lo, prep, s.N, s.K)
		}
	}
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			return fmt.Errorf("output %d (row %d, token %d) is %v, MatMul's %v", i, i%w.LDD, i/w.LDD, got[i], want[i])
		}
	}
	return nil
}

// protect calls f, turning a panic into an error.
func protect(f func()) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panicked: %v", p)
		}
	}()
	f()
	return nil
}

func checkGuardFloats(buf []float32, n int) error {
	for i := range guardFloats {
		if !isGuard(buf[i]) {
			return fmt.Errorf("wrote %d elements before its output (guard %d)", guardFloats-i, i)
		}
		if j := guardFloats + n + i; !isGuard(buf[j]) {
			return fmt.Errorf("wrote past the end of its output (element %d of %d)", n+i, n)
		}
	}
	return nil
}

func checkGuardBytes(buf []byte, n int) error {
	for i := range guardBytes {
		if buf[i] != guardByte {
			return fmt.Errorf("wrote %d bytes before its output", guardBytes-i)
		}
		if buf[guardBytes+n+i] != guardByte {
			return fmt.Errorf("wrote past the end of its output (byte %d of %d)", n+i, n)
		}
	}
	return nil
}

// checkUnwritten finds outputs left at the fill value, and for strided
// outputs (matmul with ldd > rows, attention_batch with ld > heads·headDim)
// writes into the gaps between output rows, which belong to the caller.
func (c *Case) checkUnwritten(out []float32) error {
	w := c.W
	rows, width, strided := w.Strided()
	if !strided {
		for i, f := range out {
			if isGuard(f) {
				return fmt.Errorf("left output %d unwritten", i)
			}
		}
		return nil
	}
	matmul := w.Op.Kind == ledger.KindMatMul
	for j := range rows {
		for r := range w.LDD {
			i := j*w.LDD + r
			if i >= len(out) {
				break
			}
			switch written := !isGuard(out[i]); {
			case r < width && !written && matmul:
				return fmt.Errorf("left output row %d, column %d unwritten", r, j)
			case r < width && !written:
				return fmt.Errorf("left output %d of token %d unwritten", r, j)
			case r >= width && written && matmul:
				return fmt.Errorf("wrote into the gap after output column %d (ldd %d, rows %d)", j, w.LDD, width)
			case r >= width && written:
				return fmt.Errorf("wrote into the gap after token %d's output (ld %d, heads·headDim %d)", j, w.LDD, width)
			}
		}
	}
	return nil
}

// checkQuantized decodes a quantize variant's blocks and compares them with
// the unquantized input (thresholds) and with the reference quantizer: each
// value may differ by at most one quantization step (different but valid
// rounding of ties or of the scale), f16/bf16 conversions must match
// exactly, and Q8_K block sums must equal the sums of their quants.
func (c *Case) checkQuantized(out []byte) (Metrics, error) {
	w := c.W
	t, k := w.Op.Type, w.Shape.K
	got, err := reference.Decode(t, out, k)
	if err != nil {
		return Metrics{}, err
	}
	want, err := reference.Decode(t, c.refBytes, k)
	if err != nil {
		return Metrics{}, err
	}
	for i, g := range got {
		if math.IsNaN(g) || math.IsInf(g, 0) {
			return Metrics{}, fmt.Errorf("value %d decodes to %v", i, g)
		}
	}
	switch t {
	case quant.F16, quant.BF16:
		if i := numcmp.FirstDiff(out, c.refBytes); i >= 0 {
			j := i / 2 * 2
			return Metrics{}, fmt.Errorf("value %d: %#04x, want %#04x (round to nearest even)", i/2,
				binary.LittleEndian.Uint16(out[j:]), binary.LittleEndian.Uint16(c.refBytes[j:]))
		}
	default:
		bs := t.BlockSize()
		for b := range k / bs {
			var amax float64
			for _, v := range want[b*bs : (b+1)*bs] {
				amax = math.Max(amax, math.Abs(v))
			}
			step := amax / 127 * 1.001
			for i := b * bs; i < (b+1)*bs; i++ {
				if d := math.Abs(got[i] - want[i]); d > step+1e-30 {
					return Metrics{}, fmt.Errorf("value %d decodes to %g, reference quantizer %g: more than one step (%g) apart", i, got[i], want[i], amax/127)
				}
			}
		}
	}
	if t == quant.Q8_K {
		if err := checkBlockSums(out); err != nil {
			return Metrics{}, err
		}
	}
	y := make([]float32, len(got))
	for i, g := range got {
		y[i] = float32(g)
	}
	m := Compare(y, c.ref)
	return m, For(w.Op).Within(m)
}

// checkBlockSums verifies each Q8_K block's sixteen int16 sums of 16 quants.
func checkBlockSums(q []byte) error {
	for b := 0; b+292 <= len(q); b += 292 {
		for j := range 16 {
			var s int
			for _, v := range q[b+4+16*j : b+4+16*j+16] {
				s += int(int8(v))
			}
			stored := int(int16(uint16(q[b+260+2*j]) | uint16(q[b+261+2*j])<<8))
			if s != stored {
				return fmt.Errorf("block %d: bsums[%d] = %d, quants sum to %d", b/292, j, stored, s)
			}
		}
	}
	return nil
}
