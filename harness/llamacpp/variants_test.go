package llamacpp

import (
	"os"
	"testing"
)

func TestCPUVariants(t *testing.T) {
	requireLib(t)
	vs, err := CPUVariants()
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) == 0 || vs[0].Score <= 0 {
		t.Fatalf("no usable CPU variant: %+v", vs)
	}
	for _, v := range vs {
		t.Logf("%-16s score %d", v.Name, v.Score)
	}
	loaded, err := CPUVariant()
	if err != nil {
		t.Fatal(err)
	}
	if os.Getenv(VariantEnv) == "" && loaded != vs[0].Name && (len(vs) == 1 || vs[0].Score != vs[1].Score) {
		t.Errorf("ggml loaded %s; the best-scoring variant is %s", loaded, vs[0].Name)
	}
}
