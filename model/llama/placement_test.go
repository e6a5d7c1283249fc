package llama

import (
	"bytes"
	"testing"

	"github.com/damascus-llm/damascus/internal/testdata"
	"github.com/damascus-llm/damascus/model/gguf"
)

func TestPlaceHugeKeepsWeightsAndLogits(t *testing.T) {
	path := testdata.Stories260KGGUF.Require(t)
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	inPlace, err := FromGGUF(f)
	if err != nil {
		t.Fatal(err)
	}
	moved, err := FromGGUF(f)
	if err != nil {
		t.Fatal(err)
	}
	r, err := moved.Place(PlaceHuge)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Free()
	a, b := inPlace.matrices(), moved.matrices()
	for i := range a {
		if &a[i].Data[0] == &b[i].Data[0] {
			t.Fatalf("%s was not moved", a[i].Name)
		}
		if !bytes.Equal(a[i].Data, b[i].Data) {
			t.Fatalf("%s changed when moved", a[i].Name)
		}
	}
	if moved.Tied && &moved.Output.Data[0] != &moved.Embed.Data[0] {
		t.Error("tied output head no longer shares the embedding")
	}
	tokens := []int32{1, 403, 407, 261, 378}
	want := evalAll(t, inPlace, tokens)
	got := evalAll(t, moved, tokens)
	for i := range want {
		if want[i] != got[i] {
			t.Fatalf("logit %d: %v in place, %v on huge pages", i, want[i], got[i])
		}
	}
	if r, err := inPlace.Place(PlaceMmap); r != nil || err != nil {
		t.Errorf("Place(mmap) = %v, %v; want nil, nil", r, err)
	}
}

func evalAll(t *testing.T, m *Model, tokens []int32) []float32 {
	t.Helper()
	c, err := m.NewContext(Options{NCtx: 16, Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	logits, err := c.Eval(tokens, true)
	if err != nil {
		t.Fatal(err)
	}
	return append([]float32(nil), logits...)
}

func TestParsePlacement(t *testing.T) {
	for s, want := range map[string]Placement{"": PlaceMmap, "mmap": PlaceMmap, "huge": PlaceHuge} {
		if got, err := ParsePlacement(s); err != nil || got != want {
			t.Errorf("ParsePlacement(%q) = %q, %v", s, got, err)
		}
	}
	if _, err := ParsePlacement("hugetlbfs"); err == nil {
		t.Error("ParsePlacement accepted an unknown name")
	}
}
