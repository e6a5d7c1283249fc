package serve

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// POST /completion, llama-server's own: the answer /v1/completions gives
// at temperature 0, for a prompt as text or as its token ids; streamed as
// content events and a last one with stop: true, without [DONE]; what it
// does not provide (n_probs, grammar) and bad ids are 400s.
func TestNativeCompletion(t *testing.T) {
	ts, _ := testServer(t, Config{MaxQueue: 4})
	_, oai, _ := post(t, ts, "/v1/completions", `{"prompt":"Once upon a time","max_tokens":12,"temperature":0}`)
	want := oai["choices"].([]any)[0].(map[string]any)["text"].(string)
	_, tk, _ := post(t, ts, "/tokenize", `{"content":"Once upon a time","add_special":true}`)
	ids, _ := json.Marshal(tk["tokens"])
	for _, prompt := range []string{`"Once upon a time"`, string(ids)} {
		code, v, raw := post(t, ts, "/completion", fmt.Sprintf(`{"prompt":%s,"n_predict":12,"temperature":0,"repeat_penalty":1}`, prompt))
		if code != 200 {
			t.Fatalf("%s: status %d: %s", prompt, code, raw)
		}
		if v["content"] != want || v["stop"] != true || v["tokens_predicted"] != oai["usage"].(map[string]any)["completion_tokens"] ||
			v["tokens_evaluated"] != float64(len(tk["tokens"].([]any))) || v["stop_type"] != "limit" || v["timings"] == nil {
			t.Errorf("%s: %s\nwant content %q", prompt, raw, want)
		}
	}
	resp, err := http.Post(ts.URL+"/completion", "application/json", strings.NewReader(`{"prompt":"Once upon a time","n_predict":12,"temperature":0,"repeat_penalty":1,"stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var streamed strings.Builder
	var last map[string]any
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if line == "[DONE]" {
			t.Error("a [DONE] line in /completion's stream")
		}
		last = nil
		if err := json.Unmarshal([]byte(line), &last); err != nil {
			t.Fatalf("event %q: %v", line, err)
		}
		if last["stop"] == false {
			streamed.WriteString(last["content"].(string))
		}
	}
	if streamed.String() != want || last["stop"] != true || last["stop_type"] != "limit" {
		t.Errorf("streamed %q, last %v; want %q", streamed.String(), last, want)
	}
	code, v, raw := post(t, ts, "/completion", `{"prompt":"A pet:","n_predict":60,"json_schema":{"type":"object","properties":{"pet":{"enum":["cat","dog"]}},"required":["pet"]}}`)
	var pet struct{ Pet string }
	if code != 200 || json.Unmarshal([]byte(v["content"].(string)), &pet) != nil || (pet.Pet != "cat" && pet.Pet != "dog") {
		t.Errorf("json_schema: %d %s", code, raw)
	}
	for body, want := range map[string]string{
		`{"prompt":[1,-1]}`:                     "prompt[1]: token -1",
		`{"prompt":[]}`:                         "no tokens",
		`{"prompt":["a"]}`:                      "array of token ids",
		`{"prompt":"x","n_probs":3}`:            "n_probs",
		`{"prompt":"x","grammar":"root ::= x"}`: "not GBNF",
		`{"prompt":"x","n_predict":0}`:          "nothing to generate",
		`{"prompt":"x","repeat_penalty":-1}`:    "repeat penalty",
		`{"prompt":"x","n_predict":100000}`:     "exceeds the context",
	} {
		if code, _, raw := post(t, ts, "/completion", body); code != 400 || !strings.Contains(raw, want) {
			t.Errorf("%s: %d %s, want 400 and %q", body, code, raw, want)
		}
	}
}
