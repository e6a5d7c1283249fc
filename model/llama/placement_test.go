package llama

import (
	"bytes"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/damascus-llm/damascus/internal/testdata"
	"github.com/damascus-llm/damascus/model/tokenizer"
	"github.com/damascus-llm/damascus/model/tokenizer/tokenizertest"
)

func TestPlaceHugeKeepsWeightsAndLogits(t *testing.T) {
	path := testdata.Stories260KGGUF.Require(t)
	f, inPlace := openModel(t, path)
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
	return evalLogits(t, m, Options{NCtx: 16, Threads: 1}, tokens, true)
}

func TestParsePlacement(t *testing.T) {
	for s, want := range map[string]Placement{"": PlaceHuge, "mmap": PlaceMmap, "huge": PlaceHuge} {
		if got, err := ParsePlacement(s); err != nil || got != want {
			t.Errorf("ParsePlacement(%q) = %q, %v", s, got, err)
		}
	}
	if _, err := ParsePlacement("hugetlbfs"); err == nil {
		t.Error("ParsePlacement accepted an unknown name")
	}
}

// TestPlaceFileReleasesTheMap: PlaceFile(PlaceHuge) copies the weights,
// releases the file's pages and unmaps it; the model then computes the same
// logits as in the file map, prefill and decode, and the tokenizer still
// reads its metadata from the released file.
func TestPlaceFileReleasesTheMap(t *testing.T) {
	path := testdata.Stories260KGGUF.Require(t)
	ref, inPlace := openModel(t, path) // a second map, for the in-place model
	refTok := tokenizertest.FromGGUF(t, ref)
	f, moved := openModel(t, path)
	placed, err := moved.PlaceFile(f, PlaceHuge)
	if err != nil {
		t.Fatal(err)
	}
	defer placed.Free()
	if placed.Placement != PlaceHuge {
		// Not an error: the fallback is checked by TestPlaceFileFallsBack.
		t.Skipf("huge pages unavailable here: %s", placed.Notice)
	}
	if placed.Notice != "" || placed.Region == nil || !placed.FileReleased {
		t.Fatalf("placed = %+v", placed)
	}
	if f.Mapped() {
		t.Error("the file is still mapped after the release")
	}
	a, b := inPlace.matrices(), moved.matrices()
	for i := range a {
		if f.Holds(b[i].Data) || ref.Holds(b[i].Data) || !bytes.Equal(a[i].Data, b[i].Data) {
			t.Fatalf("%s not copied intact", a[i].Name)
		}
	}
	tokens := []int32{1, 403, 407, 261, 378}
	if want, got := evalAll(t, inPlace, tokens), evalAll(t, moved, tokens); !slices.Equal(want, got) {
		t.Fatal("prefill logits differ between the file map and huge pages")
	}
	if want, got := decodeGreedy(t, inPlace, tokens, 8), decodeGreedy(t, moved, tokens, 8); !slices.Equal(want, got) {
		t.Fatal("decode logits differ between the file map and huge pages")
	}
	// Tokenizer metadata were copied out of the map by the parser.
	tok, err := tokenizer.FromGGUF(f)
	if err != nil {
		t.Fatalf("tokenizer after the release: %v", err)
	}
	if tok.NumTokens() != refTok.NumTokens() || tok.BOS() != refTok.BOS() {
		t.Fatalf("tokenizer after the release: %d tokens, BOS %d; want %d, %d", tok.NumTokens(), tok.BOS(), refTok.NumTokens(), refTok.BOS())
	}
	text := "Once upon a time, there was a little dog."
	want, err := refTok.Encode(text, tokenizer.AddSpecial)
	if err != nil {
		t.Fatal(err)
	}
	got, err := tok.Encode(text, tokenizer.AddSpecial)
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("Encode after the release = %v, %v; want %v", got, err, want)
	}
	if name, err := f.String("general.architecture"); err != nil || name != "llama" {
		t.Errorf("metadata after the release: %q, %v", name, err)
	}
}

// TestPlaceFileFallsBack: without huge pages PlaceFile leaves the weights
// in the file map, says why in one line, and is not an error.
func TestPlaceFileFallsBack(t *testing.T) {
	path := testdata.Stories260KGGUF.Require(t)
	defer func(f func() string) { hugeUnavailable = f }(hugeUnavailable)
	hugeUnavailable = func() string { return "transparent huge pages are disabled (test)" }
	f, m := openModel(t, path)
	placed, err := m.PlaceFile(f, PlaceHuge)
	if err != nil {
		t.Fatalf("fallback is an error: %v", err)
	}
	if placed.Placement != PlaceMmap || placed.Region != nil || placed.FileReleased ||
		!strings.Contains(placed.Notice, "disabled (test)") || strings.Contains(placed.Notice, "\n") {
		t.Fatalf("placed = %+v", placed)
	}
	if err := placed.Free(); err != nil {
		t.Fatal(err)
	}
	if f.Mapped() != (runtime.GOOS != "windows" && runtime.GOOS != "plan9" && runtime.GOOS != "js" && runtime.GOOS != "wasip1") {
		t.Error("the fallback released the file map")
	}
	for _, mat := range m.matrices() {
		if f.Mapped() && !f.Holds(mat.Data) {
			t.Fatalf("%s moved out of the file map", mat.Name)
		}
	}
	evalAll(t, m, []int32{1, 403})
	if p, err := m.PlaceFile(f, PlaceMmap); err != nil || p.Placement != PlaceMmap || p.Notice != "" || p.Region != nil {
		t.Errorf("PlaceFile(mmap) = %+v, %v", p, err)
	}
}

// decodeGreedy evaluates the prompt, then n tokens one at a time (the
// decode path), each the argmax of the last logits; it returns every step's
// logits.
func decodeGreedy(t *testing.T, m *Model, prompt []int32, n int) []float32 {
	t.Helper()
	c := mustContext(t, m, Options{NCtx: len(prompt) + n, Threads: 1})
	defer c.Close()
	logits, err := c.Eval(prompt, false)
	if err != nil {
		t.Fatal(err)
	}
	var all []float32
	for range n {
		all = append(all, logits...)
		next := int32(0)
		for i, v := range logits {
			if v > logits[next] {
				next = int32(i)
			}
		}
		if logits, err = c.Eval([]int32{next}, false); err != nil {
			t.Fatal(err)
		}
	}
	return append(all, logits...)
}
