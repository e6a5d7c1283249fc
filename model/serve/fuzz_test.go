package serve

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/damascus-llm/damascus/model/jsonmode"
	"github.com/damascus-llm/damascus/model/llama/chat"
	"github.com/damascus-llm/damascus/model/sample"
	"github.com/damascus-llm/damascus/model/tokenizer"
)

func mustToken(b *testing.B, tok *tokenizer.Tokenizer, text string) int32 {
	ids, err := tok.Encode(text, 0)
	if err != nil || len(ids) != 1 {
		b.Fatalf("%q is %v (%v), not one token", text, ids, err)
	}
	return ids[0]
}

// FuzzRequestBody sends arbitrary bodies to both completion endpoints'
// parser: never a panic; either a 4xx error or a job the model can run
// (a prompt that leaves room in the context, a token budget inside it, and
// sampling parameters the sampler takes, logit bias included).
func FuzzRequestBody(f *testing.F) {
	for _, seed := range []string{
		`{"messages":[{"role":"user","content":"hi"}],"max_tokens":4}`,
		`{"prompt":"Once upon a time","logprobs":3,"logit_bias":{"42":-100,"7":5.5},"stop":["\n","."]}`,
		`{"messages":[{"role":"system","content":[{"type":"text","text":"x"}]},{"role":"user","content":"y"}],"logprobs":true,"top_logprobs":20,"stream":true,"stream_options":{"include_usage":true}}`,
		`{"prompt":["a"],"temperature":0,"top_k":-1,"top_p":1,"min_p":0,"seed":-5,"n":1,"tool_choice":"none","response_format":{"type":"text"}}`,
		`{"prompt":"x","logit_bias":{"-1":1}}`, `{"prompt":[128000,9906],"n_predict":4,"repeat_penalty":1.1,"repeat_last_n":-1,"json_schema":{"type":"object"}}`, `{"prompt":"x","max_tokens":0,"response_format":{"type":"json_object"}}`, `[]`, `null`, ``,
		`{"messages":[{"role":"user","content":"w?"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"u":{"$ref":"#/$defs/U"}},"$defs":{"U":{"enum":["c"]}}}}}],"tool_choice":{"type":"function","function":{"name":"f"}}}`,
		`{"messages":[{"role":"user","content":"w?"},{"role":"assistant","content":null,"tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{\"x\":[1,2.5e3]}"}}]},{"role":"tool","tool_call_id":"a","content":"ok"}],"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"required"}`,
	} {
		f.Add(true, seed)
		f.Add(false, seed)
	}
	ld := loadTiny(f)
	const nctx = 512 // a tool's prompt fits
	c := tinyContext(f, ld, nctx)
	tmpl, err := chat.Detect(ld.Tokenizer.ChatTemplate(), "")
	if err != nil {
		f.Fatal(err)
	}
	s, err := New(Config{Model: "tiny", Vocab: ld.Model.Config.Vocab, Context: c, Tokenizer: ld.Tokenizer, Template: tmpl, MaxBody: 1 << 16})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, isChat bool, body string) {
		r := httptest.NewRequest("POST", "/v1/completions", strings.NewReader(body))
		j, aerr := s.parse(httptest.NewRecorder(), r, isChat)
		if !isChat { // the same body as llama-server's /completion
			var nr nativeRequest
			if json.Unmarshal([]byte(body), &nr) == nil {
				if nj, naerr := s.nativeJob(&nr); naerr == nil && (len(nj.prompt) == 0 || len(nj.prompt)+nj.max > nctx || nj.params.Validate() != nil) {
					t.Fatalf("%q as /completion: a prompt of %d tokens and %d to generate", body, len(nj.prompt), nj.max)
				} else if naerr != nil && (naerr.status < 400 || naerr.status >= 500 || naerr.msg == "") {
					t.Fatalf("%q as /completion: status %d %q", body, naerr.status, naerr.msg)
				}
			}
		}
		if aerr != nil {
			if aerr.status < 400 || aerr.status >= 500 || aerr.msg == "" {
				t.Fatalf("%q: status %d %q", body, aerr.status, aerr.msg)
			}
			return
		}
		if n := len(j.prompt); n == 0 || n >= nctx || j.max < 1 || n+j.max > nctx {
			t.Fatalf("%q: a prompt of %d tokens and %d to generate in a context of %d", body, n, j.max, nctx)
		}
		if j.mustCall && (j.schema == nil || len(j.tools) == 0) {
			t.Fatalf("%q: a call required without a schema of the tools", body)
		}
		if _, err := sample.New(s.cfg.Vocab, j.params); err != nil {
			t.Fatalf("%q: accepted, but the sampler refuses it: %v", body, err)
		}
		if j.top < 0 || j.top > 20 || (j.top > 0 && !j.logprobs) {
			t.Fatalf("%q: %d alternatives, logprobs %v", body, j.top, j.logprobs)
		}
	})
}

// BenchmarkJSONMask is the cost of a draw the JSON constraint refuses
// (the chain runs again over the tokens it allows: every one of the Llama 3
// vocabulary's 128,256 checked), the worst case of a JSON-mode step.
func BenchmarkJSONMask(b *testing.B) {
	ld := loadTiny(b)
	tok, n := ld.Tokenizer, ld.Model.Config.Vocab
	logits := make([]float32, n)
	eot := int32(-1)
	for id := range int32(n) {
		if tok.IsEOG(id) {
			eot = id
			break
		}
	}
	logits[eot] = 10 // the chain's choice, refused before the object closes
	smp, err := sample.New(n, sample.Params{Temperature: 0})
	if err != nil {
		b.Fatal(err)
	}
	c := jsonmode.NewTable(tok, n).New()
	c.Accept(int(mustToken(b, tok, `{"`))) // inside a key: most tokens are read to their end
	smp.SetConstraint(c)
	for b.Loop() {
		smp.Sample(logits)
	}
}

// fixedLen is an Embedder that only reports its length (the parser's bound).
type fixedLen int

func (fixedLen) Embed([]int32) ([]float32, error) { return nil, nil }
func (n fixedLen) MaxTokens() int                 { return int(n) }

// FuzzEmbeddingInput sends arbitrary "input" values to /v1/embeddings'
// parser: never a panic; either a 400 naming input or sequences the model
// can embed (each non-empty, within the length, every id in the vocabulary).
func FuzzEmbeddingInput(f *testing.F) {
	for _, seed := range []string{`"hello"`, `["a","b c"]`, `[128000,9906]`, `[[1,2],[3]]`, `[]`, `[[]]`, `null`, `5`,
		`[1,-2]`, `[[1],"x"]`, `"<|eot_id|>"`, `[1e3]`, `{"a":1}`, ``} {
		f.Add(seed)
	}
	ld := loadTiny(f)
	const most = 16
	s, err := New(Config{Model: "tiny", Vocab: ld.Model.Config.Vocab, Context: tinyContext(f, ld, 32), Tokenizer: ld.Tokenizer, Embedder: fixedLen(most)})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, input string) {
		seqs, aerr := s.embeddingInputs(json.RawMessage(input))
		if aerr != nil {
			if aerr.status != 400 || aerr.param != "input" || aerr.msg == "" {
				t.Fatalf("%q: status %d param %q %q", input, aerr.status, aerr.param, aerr.msg)
			}
			return
		}
		if len(seqs) == 0 {
			t.Fatalf("%q: accepted with nothing to embed", input)
		}
		for _, q := range seqs {
			if len(q) == 0 || len(q) > most {
				t.Fatalf("%q: a sequence of %d tokens accepted (at most %d)", input, len(q), most)
			}
			for _, id := range q {
				if id < 0 || int(id) >= s.cfg.Vocab {
					t.Fatalf("%q: token %d accepted", input, id)
				}
			}
		}
	})
}
