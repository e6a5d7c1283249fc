package llama

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/damascus-llm/damascus/internal/testdata"
	"github.com/damascus-llm/damascus/model/gguf"
	"github.com/damascus-llm/damascus/model/sample"
	"github.com/damascus-llm/damascus/model/tokenizer"
)

type golden struct {
	Temperature float32  `json:"temperature"`
	TopP        *float32 `json:"topp"`
	Seed        *uint64  `json:"seed"`
	Steps       int      `json:"steps"`
	Prompt      string   `json:"prompt"`
	Expected    string   `json:"expected"`
}

func loadGoldens(t *testing.T) []golden {
	t.Helper()
	data, err := os.ReadFile(testdata.Stories260KGoldens.Require(t))
	if err != nil {
		t.Fatal(err)
	}
	var g struct{ Cases []golden }
	if err := json.Unmarshal(data, &g); err != nil {
		t.Fatal(err)
	}
	return g.Cases
}

func openStories(t testing.TB) (*Model, *tokenizer.Tokenizer) {
	t.Helper()
	f, err := gguf.Open(testdata.Stories260KGGUF.Require(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	m, err := FromGGUF(f)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.FromGGUF(f)
	if err != nil {
		t.Fatal(err)
	}
	return m, tok
}

// runLlama2C is run.c's generate loop: steps positions including BOS, the
// prompt forced, a coin drawn only for sampled tokens, stop at BOS.
func runLlama2C(t *testing.T, eval func(int32) ([]float32, error), tok *tokenizer.Tokenizer, g golden) string {
	t.Helper()
	prompt, err := tok.Encode(g.Prompt, tokenizer.AddSpecial)
	if err != nil {
		t.Fatal(err)
	}
	var topp float32
	if g.TopP != nil {
		topp = *g.TopP
	}
	var seed uint64
	if g.Seed != nil {
		seed = *g.Seed
	}
	s := sample.NewLlama2C(tok.NumTokens(), g.Temperature, topp, seed)
	ids := []int32{prompt[0]}
	token := prompt[0]
	for pos := 0; pos < g.Steps; pos++ {
		logits, err := eval(token)
		if err != nil {
			t.Fatal(err)
		}
		var next int32
		if pos < len(prompt)-1 {
			next = prompt[pos+1]
		} else {
			next = int32(s.Sample(logits))
		}
		if next == tok.BOS() {
			break
		}
		ids = append(ids, next)
		token = next
	}
	text, err := tok.Decode(ids, false)
	if err != nil {
		t.Fatal(err)
	}
	return string(text)
}

func TestReferenceGoldens(t *testing.T) {
	m, tok := openStories(t)
	for i, g := range loadGoldens(t) {
		r, err := m.NewReference(g.Steps)
		if err != nil {
			t.Fatal(err)
		}
		got := runLlama2C(t, r.Eval, tok, g)
		if got != g.Expected {
			t.Errorf("case %d (temp %g, seed %v, prompt %q):\n got %q\nwant %q", i, g.Temperature, g.Seed, g.Prompt, got, g.Expected)
		}
	}
}
