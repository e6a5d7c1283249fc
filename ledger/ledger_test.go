package ledger

import (
	"strings"
	"testing"

	"github.com/damascus-llm/damascus/quant"
)

func TestCatalogueShapesAreValid(t *testing.T) {
	seen := map[string]bool{}
	for _, op := range Catalogue() {
		if seen[op.Name] {
			t.Errorf("op %s listed twice", op.Name)
		}
		seen[op.Name] = true
		if len(op.Shapes) == 0 {
			t.Errorf("%s: no shapes", op.Name)
		}
		keys := map[string]bool{}
		real := 0
		for _, s := range op.Shapes {
			key := s.Key(op.Kind)
			if keys[key] {
				t.Errorf("%s: shape %s twice", op.Name, key)
			}
			keys[key] = true
			if strings.ContainsAny(key, " /=") {
				t.Errorf("%s: shape key %q is not a valid benchmark name part", op.Name, key)
			}
			if s.Real() {
				real++
			}
			if op.FLOPs(s) <= 0 || op.Bytes(s) <= 0 {
				t.Errorf("%s %s: FLOPs %v, bytes %v", op.Name, key, op.FLOPs(s), op.Bytes(s))
			}
			switch op.Kind {
			case KindMatVec, KindMatMul, KindQuantize, KindDequantize:
				if _, err := quant.RowSize(op.Type, int64(s.K)); err != nil {
					t.Errorf("%s %s: %v", op.Name, key, err)
				}
			case KindRoPE:
				if s.HeadDim%2 != 0 {
					t.Errorf("%s %s: odd head dim", op.Name, key)
				}
			case KindAttention, KindAttentionBatch:
				if s.Heads%s.KVHeads != 0 {
					t.Errorf("%s %s: heads not a multiple of kv heads", op.Name, key)
				}
			}
		}
		if real == 0 {
			t.Errorf("%s: no real model shape", op.Name)
		}
	}
	for _, want := range []string{"matvec/q4_k", "matvec/q6_k", "matmul/q4_k", "quantize/q8_k", "dequantize/q6_k", "rmsnorm", "attention", "attention_batch"} {
		if !seen[want] {
			t.Errorf("catalogue lacks %s", want)
		}
	}
}

func TestMatVecRealShapes(t *testing.T) {
	op, _ := LookupOp("matvec/q4_k")
	for _, key := range []string{"2048x2048", "512x2048", "8192x2048", "2048x8192", "128256x2048",
		"3072x3072", "1024x3072", "8192x3072", "3072x8192", "128256x3072"} {
		if _, ok := op.Shape(key); !ok {
			t.Errorf("matvec/q4_k lacks shape %s", key)
		}
	}
	s, _ := op.Shape("2048x2048")
	if got, want := op.Bytes(s), float64(2048*8*144+8*292+2048*4); got != want {
		t.Errorf("bytes = %v, want %v", got, want)
	}
	if got, want := op.FLOPs(s), float64(2*2048*2048); got != want {
		t.Errorf("flops = %v, want %v", got, want)
	}
}

func TestAttentionBatchShapes(t *testing.T) {
	op, ok := LookupOp(OpAttentionBatch)
	if !ok || op.Kind != KindAttentionBatch {
		t.Fatalf("attention_batch: %v %v", op, ok)
	}
	for _, key := range []string{"h32kv8d64n64pos0", "h32kv8d64n64pos960", "h24kv8d128n64pos448", "h24kv8d128n64pos960"} {
		if _, ok := op.Shape(key); !ok {
			t.Errorf("attention_batch lacks shape %s", key)
		}
	}
	// Two tokens after three cached positions see 4 and 5 positions: 9
	// pairs, each a dot product and an axpy of headDim plus softmax work.
	s := Shape{Heads: 2, KVHeads: 1, HeadDim: 8, N: 2, Pos0: 3}
	if got, want := op.FLOPs(s), float64(2*(4*8+4)*9); got != want {
		t.Errorf("flops = %v, want %v", got, want)
	}
	if got, want := op.Bytes(s), float64(2*4*5*8+8*2*2*8); got != want {
		t.Errorf("bytes = %v, want %v", got, want)
	}
	ok = false
	r := NewRegistry()
	err := r.Add(Variant{Op: OpAttentionBatch, Name: "x", Family: FamilyNaive,
		Impl: func(out, q []float32, ld int, k, v []float32, nTokens, nHeads, nKVHeads, headDim, pos0 int, scale float32) {
			ok = true
		}})
	if err != nil {
		t.Fatalf("func literal of the right signature rejected: %v", err)
	}
	v, _ := r.Lookup(OpAttentionBatch, "x")
	v.Impl.(AttentionBatch)(nil, nil, 0, nil, nil, 0, 0, 0, 0, 0, 0)
	if !ok {
		t.Error("registered Impl not called")
	}
}

// otherMatVec has MatVec's signature but is another type: refused as an Impl,
// as it was when the kinds were a type switch.
type otherMatVec func(dst []float32, w, xq []byte, k int)

func TestKindOf(t *testing.T) {
	if k, ok := KindOf(MatVec(nil)); !ok || k != KindMatVec {
		t.Errorf("KindOf(MatVec) = %v, %v", k, ok)
	}
	if k, ok := KindOf(AttentionHalf(nil)); !ok || k != KindAttentionHalf || k.String() != "AttentionHalf" {
		t.Errorf("KindOf(AttentionHalf) = %v, %v", k, ok)
	}
	for _, impl := range []any{nil, 3, func([]float32, []byte, []byte, int) {}, otherMatVec(nil)} {
		if k, ok := KindOf(impl); ok {
			t.Errorf("KindOf(%T) = %v, want none", impl, k)
		}
	}
	if s := Kind(99).String(); s != "Kind(99)" {
		t.Errorf("Kind(99) = %q", s)
	}
}

func TestRegistryValidates(t *testing.T) {
	r := NewRegistry()
	good := func(dst []float32, w, xq []byte, k int) {}
	if err := r.Add(Variant{Op: "matvec/q4_k", Name: "x", Family: FamilyNaive, Impl: good}); err != nil {
		t.Fatalf("func literal of the right signature rejected: %v", err)
	}
	v, ok := r.Lookup("matvec/q4_k", "x")
	if !ok {
		t.Fatal("registered variant not found")
	}
	if _, ok := v.Impl.(MatVec); !ok || v.Status != Experimental {
		t.Errorf("Impl %T status %q, want MatVec and experimental", v.Impl, v.Status)
	}
	mm := func([]float32, int, []byte, int, []byte, int, int) {}
	prep := &PreparedMatMul{Align: 32, Size: func(n, k int) int { return n * k }, Prepare: func(_, _ []byte, _, _, _, _ int) {},
		Run: func([]float32, int, []byte, int, []byte, int, int) {}}
	if err := r.Add(Variant{Op: "matmul/q4_k", Name: "p", Family: FamilyNaive, Impl: mm, Prepared: prep}); err != nil {
		t.Fatalf("a matmul with a prepared form rejected: %v", err)
	}
	for _, tc := range []struct {
		v    Variant
		want string
	}{
		{Variant{Op: "matvec/q4_k", Name: "x", Family: FamilyNaive, Impl: good}, "twice"},
		{Variant{Op: "matvec/q9", Name: "y", Family: FamilyNaive, Impl: good}, "unknown op"},
		{Variant{Op: "rmsnorm", Name: "y", Family: FamilyNaive, Impl: good}, "want a non-nil ledger.RMSNorm"},
		{Variant{Op: "rmsnorm", Name: "y", Family: FamilyNaive, Impl: RMSNorm(nil)}, "non-nil"},
		{Variant{Op: "matvec/q4_k", Name: "y", Family: FamilyNaive, Impl: (func([]float32, []byte, []byte, int))(nil)}, "non-nil"},
		{Variant{Op: "matvec/q4_k", Name: "y", Family: FamilyNaive, Impl: otherMatVec(good)}, "want a non-nil ledger.MatVec"},
		{Variant{Op: "rmsnorm", Name: "a/b", Family: FamilyNaive}, "variant name"},
		{Variant{Op: "rmsnorm", Name: "y", Impl: good}, "no family"},
		{Variant{Op: "rmsnorm", Name: "y", Family: FamilyNaive, Status: "great"}, "unknown status"},
		{Variant{Op: "rmsnorm", Name: "y", Family: FamilyAVX2, Features: []string{"avx9000"}, Impl: RMSNorm(func([]float32, []float32, []float32, float32) {})}, "unknown feature"},
		{Variant{Op: "matvec/q4_k", Name: "p", Family: FamilyNaive, Impl: good, Prepared: prep}, "prepared form needs a matmul"},
		{Variant{Op: "matmul/q4_k", Name: "p", Family: FamilyNaive, Impl: mm, Prepared: &PreparedMatMul{Align: 32, Size: prep.Size, Run: prep.Run}}, "prepared form needs"},
	} {
		err := r.Add(tc.v)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Add(%s) = %v, want error containing %q", tc.v.ID(), err, tc.want)
		}
	}
	if !r.Remove("matvec/q4_k", "x") || r.Remove("matvec/q4_k", "x") {
		t.Error("Remove did not remove exactly once")
	}
}

func TestAvailability(t *testing.T) {
	defer func(f func(string) bool) { HasFeature = f }(HasFeature)
	HasFeature = func(name string) bool { return name == "avx2" }
	v := Variant{Features: []string{"avx2", "avx512f"}}
	if v.Available() {
		t.Error("variant needing an absent feature reported available")
	}
	if m := v.Missing(); len(m) != 1 || m[0] != "avx512f" {
		t.Errorf("Missing = %v", m)
	}
}

func TestDeviceFeature(t *testing.T) {
	calls := 0
	RegisterDeviceFeature("test-accelerator", func() bool { calls++; return true })
	if !KnownFeature("test-accelerator") || KnownFeature("test-accelerator2") {
		t.Fatal("KnownFeature does not know exactly the registered device feature")
	}
	if calls != 0 {
		t.Fatal("the probe ran at registration")
	}
	v := Variant{Op: OpRMSNorm, Name: "dev", Family: FamilyCUDA, Features: []string{"test-accelerator"},
		Impl: RMSNorm(func(dst, x, w []float32, eps float32) {})}
	r := NewRegistry()
	if err := r.Add(v); err != nil {
		t.Fatal(err)
	}
	if !v.Available() || !v.Available() || calls != 1 {
		t.Fatalf("available %v after %d probe calls, want true after 1", v.Available(), calls)
	}
	absent := false
	RegisterDeviceFeature("test-absent-accelerator", func() bool { return absent })
	v.Features = []string{"test-absent-accelerator"}
	if v.Available() || len(v.Missing()) != 1 {
		t.Fatalf("a variant needing an absent device is available (missing %v)", v.Missing())
	}
	for _, name := range []string{"avx2", "test-accelerator"} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("RegisterDeviceFeature(%q) did not panic", name)
				}
			}()
			RegisterDeviceFeature(name, func() bool { return true })
		}()
	}
}
