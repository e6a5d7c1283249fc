package serve

import (
	"encoding/json"
	"fmt"
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
	events, done := sseEvents(t, ts.URL+"/completion", `{"prompt":"Once upon a time","n_predict":12,"temperature":0,"repeat_penalty":1,"stream":true}`)
	if done || len(events) == 0 {
		t.Fatalf("%d events, [DONE] %v: llama-server ends with the stop event", len(events), done)
	}
	var streamed strings.Builder
	for _, e := range events[:len(events)-1] {
		if e["stop"] != false {
			t.Errorf("event %v before the last", e)
		}
		streamed.WriteString(e["content"].(string))
	}
	last := events[len(events)-1]
	if streamed.String() != want || last["stop"] != true || last["stop_type"] != "limit" {
		t.Errorf("streamed %q, last %v; want %q", streamed.String(), last, want)
	}
	code, v, raw := post(t, ts, "/completion", `{"prompt":"A pet:","n_predict":60,"json_schema":{"type":"object","properties":{"pet":{"enum":["cat","dog"]}},"required":["pet"]}}`)
	var pet struct{ Pet string }
	if code != 200 || json.Unmarshal([]byte(v["content"].(string)), &pet) != nil || (pet.Pet != "cat" && pet.Pet != "dog") {
		t.Errorf("json_schema: %d %s", code, raw)
	}
	// A GBNF grammar (llama-server's "grammar"): the answer is one of the
	// texts it derives, whatever the pseudo-random model prefers.
	code, v, raw = post(t, ts, "/completion", `{"prompt":"A pet:","n_predict":60,"grammar":"root ::= (\"cat\" | \"dog\") [0-9]{2} \"!\""}`)
	if c, ok := v["content"].(string); code != 200 || !ok || len(c) != 6 || (c[:3] != "cat" && c[:3] != "dog") || c[3] < '0' || c[3] > '9' || c[4] < '0' || c[4] > '9' || c[5] != '!' ||
		v["stop_type"] != "eos" {
		t.Errorf("grammar: %d %s", code, raw)
	}
	// The same on the OpenAI endpoints, which llama-server lets take it too.
	code, v, raw = post(t, ts, "/v1/chat/completions", `{"messages":[{"role":"user","content":"A pet?"}],"max_tokens":60,"temperature":0,"grammar":"root ::= \"a \" (\"cat\" | \"dog\")"}`)
	if code != 200 || !strings.Contains(raw, `"content":"a cat"`) && !strings.Contains(raw, `"content":"a dog"`) || !strings.Contains(raw, `"finish_reason":"stop"`) {
		t.Errorf("chat grammar: %d %s", code, raw)
	}
	for body, want := range map[string]string{
		`{"prompt":[1,-1]}`:                     "prompt[1]: token -1",
		`{"prompt":[]}`:                         "no tokens",
		`{"prompt":["a"]}`:                      "array of token ids",
		`{"prompt":"x","n_probs":3}`:            "n_probs",
		`{"prompt":"x","grammar":"root ::= x"}`: `grammar: rule \"x\"`,
		`{"prompt":"x","grammar":"root ::= \"a","json_schema":{"type":"object"}}`: "one constraint a request",
		`{"prompt":"x","n_predict":0}`:                                            "nothing to generate",
		`{"prompt":"x","repeat_penalty":-1}`:                                      "repeat penalty",
		`{"prompt":"x","n_predict":100000}`:                                       "exceeds the context",
	} {
		if code, _, raw := post(t, ts, "/completion", body); code != 400 || !strings.Contains(raw, want) {
			t.Errorf("%s: %d %s, want 400 and %q", body, code, raw, want)
		}
	}
}
