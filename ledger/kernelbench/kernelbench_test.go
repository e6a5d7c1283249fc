package kernelbench

import (
	"testing"

	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/variants/naive"
)

func TestPackageOf(t *testing.T) {
	for in, want := range map[string]string{
		"github.com/damascus-llm/damascus/variants/naive.MatVec.func1":     "github.com/damascus-llm/damascus/variants/naive",
		"github.com/damascus-llm/damascus/variants/avx512.(*x).y":          "github.com/damascus-llm/damascus/variants/avx512",
		"github.com/damascus-llm/damascus/ledger/kernelbench.BenchmarkAll": "github.com/damascus-llm/damascus/ledger/kernelbench",
	} {
		if got := ledger.FuncPackage(in); got != want {
			t.Errorf("FuncPackage(%q) = %q, want %q", in, got, want)
		}
	}
	if got := (ledger.Variant{Impl: ledger.RMSNorm(naive.RMSNorm)}).Package(); got != "github.com/damascus-llm/damascus/variants/naive" {
		t.Errorf("Package of naive.RMSNorm = %q", got)
	}
}

func TestName(t *testing.T) {
	op, _ := ledger.LookupOp("matvec/q4_k")
	if got := Name(op, "avx512", op.Shapes[len(op.Shapes)-1]); got != "type=Q4_K/variant=avx512/shape=128256x3072" {
		t.Errorf("Name = %q", got)
	}
	op, _ = ledger.LookupOp("rmsnorm")
	if got := Name(op, "naive", ledger.Shape{K: 2048}); got != "variant=naive/shape=n2048" {
		t.Errorf("Name = %q", got)
	}
}
