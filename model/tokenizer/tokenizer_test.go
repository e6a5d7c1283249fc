package tokenizer

import (
	"encoding/json"
	"regexp"
	"slices"
	"testing"

	"github.com/damascus-llm/damascus/internal/testdata"
)

func TestStories260KOnceUponATime(t *testing.T) {
	tok := openGGUF(t, testdata.Stories260KGGUF)
	if tok.Kind() != SPM {
		t.Fatalf("kind %v, want SPM", tok.Kind())
	}
	got, err := tok.Encode("Once upon a time", AddSpecial)
	if err != nil {
		t.Fatal(err)
	}
	if want := []int32{1, 403, 407, 261, 378}; !slices.Equal(got, want) {
		t.Fatalf("Encode(%q) = %v, want %v", "Once upon a time", got, want)
	}
	back, err := tok.Decode(got, false)
	if err != nil || string(back) != "Once upon a time" {
		t.Fatalf("Decode = %q, %v", back, err)
	}
}

type jsCase struct {
	Op      string          `json:"op"`
	Input   json.RawMessage `json:"input"`
	Options *struct {
		BOS bool `json:"bos"`
		EOS bool `json:"eos"`
	} `json:"options"`
	Expected json.RawMessage `json:"expected"`
}

// specialLike is what llama3-tokenizer-js's optimisticCount counts as one
// token whether or not the vocabulary has it.
var specialLike = regexp.MustCompile(`<\|[a-zA-Z0-9_]+\|>`)

// TestLlama3TokenizerJS runs the 43 cases recorded from llama3-tokenizer-js.
// That tokenizer always recognises special tokens and its eos is
// <|end_of_text|>, so encode cases use ParseSpecial and add BOS/EOS by hand.
func TestLlama3TokenizerJS(t *testing.T) {
	tok := llama3(t)
	raw := testdata.Llama3TokenizerJSTests.Read(t)
	var file struct{ Cases []jsCase }
	if err := json.Unmarshal(raw, &file); err != nil {
		t.Fatal(err)
	}
	if len(file.Cases) != 43 {
		t.Fatalf("%d cases, want 43", len(file.Cases))
	}
	for i, c := range file.Cases {
		switch c.Op {
		case "encode":
			var in string
			var want []int32
			mustJSON(t, c.Input, &in)
			mustJSON(t, c.Expected, &want)
			bos, eos := true, true
			if c.Options != nil {
				bos, eos = c.Options.BOS, c.Options.EOS
			}
			got, err := tok.Encode(in, ParseSpecial)
			if err != nil {
				t.Fatal(err)
			}
			if bos {
				got = append([]int32{128000}, got...)
			}
			if eos {
				got = append(got, 128001)
			}
			if !slices.Equal(got, want) {
				t.Errorf("case %d: Encode(%q) =\n%v, want\n%v", i, in, got, want)
			}
		case "decode":
			var in []int32
			var want string
			mustJSON(t, c.Input, &in)
			mustJSON(t, c.Expected, &want)
			got, err := tok.Decode(in, true)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != want {
				t.Errorf("case %d: Decode(%v) = %q, want %q", i, in, got, want)
			}
		case "optimisticCount":
			var in string
			var want int
			mustJSON(t, c.Input, &in)
			mustJSON(t, c.Expected, &want)
			n := 0
			for _, part := range splitKeep(in, specialLike) {
				if specialLike.MatchString(part) {
					n++
					continue
				}
				ids, err := tok.Encode(part, 0)
				if err != nil {
					t.Fatal(err)
				}
				n += len(ids)
			}
			if n+2 != want { // plus BOS and EOS, its defaults
				t.Errorf("case %d: optimistic count %d, want %d", i, n+2, want)
			}
		default:
			t.Fatalf("case %d: unknown op %q", i, c.Op)
		}
	}
}

func splitKeep(s string, re *regexp.Regexp) []string {
	var out []string
	last := 0
	for _, m := range re.FindAllStringIndex(s, -1) {
		if m[0] > last {
			out = append(out, s[last:m[0]])
		}
		out = append(out, s[m[0]:m[1]])
		last = m[1]
	}
	if last < len(s) {
		out = append(out, s[last:])
	}
	return out
}

func mustJSON(t *testing.T, raw json.RawMessage, v any) {
	t.Helper()
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatal(err)
	}
}
