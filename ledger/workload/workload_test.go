package workload

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/variants/naive"
)

func TestEveryOpBuildsAndBinds(t *testing.T) {
	for _, op := range ledger.Catalogue() {
		s := op.Shapes[0]
		w, err := New(op, s, 1)
		if err != nil {
			t.Fatalf("%s: %v", op.Name, err)
		}
		v, ok := ledger.Lookup(op.Name, "naive")
		if !ok {
			t.Fatalf("%s: no naive variant", op.Name)
		}
		dst, dstb := w.NewOutput()
		call, err := w.Bind(v.Impl, dst, dstb)
		if err != nil {
			t.Fatalf("%s: %v", op.Name, err)
		}
		call()
		idx, ref, err := w.Reference()
		if err != nil || len(idx) != len(ref) || len(ref) == 0 {
			t.Errorf("%s: reference %d/%d values, %v", op.Name, len(idx), len(ref), err)
		}
	}
	op, _ := ledger.LookupOp("rmsnorm")
	w, _ := New(op, op.Shapes[0], 1)
	if _, err := w.Bind(ledger.Softmax(naive.Softmax), nil, nil); err == nil || !strings.Contains(err.Error(), "want ledger.RMSNorm") {
		t.Errorf("mismatched Impl: %v", err)
	}
	// Bind takes registered Impls, already of the named type: a bare func
	// literal is refused, as is nothing.
	for _, impl := range []any{naive.RMSNorm, nil} {
		if _, err := w.Bind(impl, nil, nil); err == nil || !strings.Contains(err.Error(), "want ledger.RMSNorm") {
			t.Errorf("Bind(%T): %v", impl, err)
		}
	}
}

func TestReferenceSamplesLargeMatrices(t *testing.T) {
	op, _ := ledger.LookupOp("matvec/q8_0")
	w, err := New(op, ledger.Shape{Rows: 1000, K: 64}, 1)
	if err != nil {
		t.Fatal(err)
	}
	idx, _, err := w.Reference()
	if err != nil {
		t.Fatal(err)
	}
	if len(idx) != maxRefOutputs || idx[0] != 0 || idx[len(idx)-1] != 999 {
		t.Errorf("sampled %d rows from %d to %d", len(idx), idx[0], idx[len(idx)-1])
	}
}

func TestColdCopiesRotate(t *testing.T) {
	op, _ := ledger.LookupOp("matvec/q8_0")
	w, err := New(op, ledger.Shape{Rows: 64, K: 256}, 1)
	if err != nil {
		t.Fatal(err)
	}
	copies := w.ColdCopies()
	if len(copies) != maxCopies || copies[0] != w || !bytes.Equal(copies[1].W, w.W) || &copies[1].W[0] == &w.W[0] {
		t.Fatalf("%d copies (want %d distinct equal weight buffers)", len(copies), maxCopies)
	}
	var seen []*byte
	call, err := Cycle(copies[:3], ledger.MatVec(func(dst []float32, wt, xq []byte, k int) { seen = append(seen, &wt[0]) }), make([]float32, 64), nil)
	if err != nil {
		t.Fatal(err)
	}
	for range 4 {
		call()
	}
	if seen[0] != &w.W[0] || seen[1] != &copies[1].W[0] || seen[2] != &copies[2].W[0] || seen[3] != seen[0] {
		t.Error("Cycle does not rotate through the copies in order")
	}
	op, _ = ledger.LookupOp("rmsnorm")
	if w, _ := New(op, op.Shapes[0], 1); len(w.ColdCopies()) != 1 {
		t.Error("an elementwise op got weight copies")
	}
}

// Decode attention from ledger.ColdHistory positions on rotates through
// copies of its cache (the 16-bit one for attention/f16), equal and
// distinct, totalling ColdBytes (at most maxCopies); shorter histories
// stay one hot workload.
func TestColdCopiesAttention(t *testing.T) {
	for _, name := range []string{"attention", "attention/f16"} {
		op, _ := ledger.LookupOp(name)
		s := ledger.Shape{Heads: 3, KVHeads: 1, HeadDim: 128, N: ledger.ColdHistory}
		w, err := New(op, s, 1)
		if err != nil {
			t.Fatal(err)
		}
		copies := w.ColdCopies()
		size := 4 * (len(w.K) + len(w.V))
		if op.Kind == ledger.KindAttentionHalf {
			size = 2 * (len(w.K16) + len(w.V16))
		}
		if want := min(maxCopies, (ColdBytes+size-1)/size); len(copies) != want {
			t.Fatalf("%s: %d copies, want %d", name, len(copies), want)
		}
		c := copies[1]
		if op.Kind == ledger.KindAttentionHalf {
			if !slices.Equal(c.K16, w.K16) || !slices.Equal(c.V16, w.V16) || &c.K16[0] == &w.K16[0] || &c.V16[0] == &w.V16[0] {
				t.Errorf("%s: the copy's 16-bit cache is not an equal, distinct buffer", name)
			}
		} else if !slices.Equal(c.K, w.K) || !slices.Equal(c.V, w.V) || &c.K[0] == &w.K[0] || &c.V[0] == &w.V[0] {
			t.Errorf("%s: the copy's cache is not an equal, distinct buffer", name)
		}
		s.N = ledger.ColdHistory - 1
		if w, _ := New(op, s, 1); len(w.ColdCopies()) != 1 {
			t.Errorf("%s: a history of %d positions got cache copies", name, s.N)
		}
	}
}
