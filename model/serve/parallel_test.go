package serve

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// completionText posts a temperature-0 completion and returns its text.
func completionText(t *testing.T, url, prompt string, maxTokens int) string {
	t.Helper()
	resp, err := http.Post(url+"/v1/completions", "application/json",
		strings.NewReader(fmt.Sprintf(`{"prompt":%q,"max_tokens":%d,"temperature":0}`, prompt, maxTokens)))
	if err != nil {
		t.Error(err)
		return ""
	}
	defer resp.Body.Close()
	var v struct {
		Choices []struct{ Text string }
		Usage   struct {
			CompletionTokens int `json:"completion_tokens"`
		}
	}
	if err := decodeJSON(resp, &v); err != nil || resp.StatusCode != 200 || len(v.Choices) != 1 {
		t.Errorf("%q: status %d, %v", prompt, resp.StatusCode, err)
		return ""
	}
	return fmt.Sprintf("%d:%s", v.Usage.CompletionTokens, v.Choices[0].Text)
}

// waitIdle waits for the scheduler's goroutine to end and every slot token
// to be back: nothing lingers after the requests.
func waitIdle(t *testing.T, s *Server) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		s.sched.mu.Lock()
		running := s.sched.running
		s.sched.mu.Unlock()
		if !running && len(s.slot) == 0 && s.waiting.Load() == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not idle: scheduler running %v, %d slots held, %d waiting", running, len(s.slot), s.waiting.Load())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

var parallelPrompts = []string{"Once upon a time", "The quick brown fox jumps over", "Hello", "In a galaxy far, far away there lived",
	"1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30", "Why is the sky blue?", "a", "Tell me a story about a dragon and a knight"}

// Requests decoded together on 3 slots (16 at once: 13 queue and join the
// running batch as slots free) answer at temperature 0 what each answers
// alone, streamed or not; the slots' caches, reused between requests,
// change nothing either.
func TestParallelSameAnswers(t *testing.T) {
	ts, s := testServerSlots(t, Config{MaxQueue: 16}, 3)
	alone := make([]string, len(parallelPrompts))
	for i, p := range parallelPrompts {
		alone[i] = completionText(t, ts.URL, p, 12)
	}
	waitIdle(t, s)
	together := make([]string, len(parallelPrompts))
	streamed := make([]string, len(parallelPrompts))
	var wg sync.WaitGroup
	for i, p := range parallelPrompts {
		wg.Add(2)
		go func() { defer wg.Done(); together[i] = completionText(t, ts.URL, p, 12) }()
		go func() { defer wg.Done(); streamed[i] = streamText(t, ts.URL, p, 12) }()
	}
	wg.Wait()
	for i := range parallelPrompts {
		if together[i] != alone[i] {
			t.Errorf("prompt %d: %q together, %q alone", i, together[i], alone[i])
		}
		if _, text, _ := strings.Cut(alone[i], ":"); streamed[i] != text {
			t.Errorf("prompt %d: streamed %q, alone %q", i, streamed[i], text)
		}
	}
	waitIdle(t, s)
}

// streamText posts a streamed temperature-0 completion and joins its text.
func streamText(t *testing.T, url, prompt string, maxTokens int) string {
	t.Helper()
	resp, err := http.Post(url+"/v1/completions", "application/json",
		strings.NewReader(fmt.Sprintf(`{"prompt":%q,"max_tokens":%d,"temperature":0,"stream":true}`, prompt, maxTokens)))
	if err != nil {
		t.Error(err)
		return ""
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("%q streamed: status %d", prompt, resp.StatusCode)
		return ""
	}
	var b strings.Builder
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || line == "[DONE]" {
			continue
		}
		var chunk struct{ Choices []struct{ Text string } }
		if err := decodeString(line, &chunk); err != nil || len(chunk.Choices) != 1 {
			t.Errorf("chunk %q: %v", line, err)
			continue
		}
		b.WriteString(chunk.Choices[0].Text)
	}
	return b.String()
}

// A client that leaves mid-stream frees its slot at the next step: with
// both slots streaming long answers, cancelling them lets two new requests
// through at once, and nothing lingers after.
func TestParallelCancelFreesSlot(t *testing.T) {
	ts, s := testServerSlots(t, Config{MaxQueue: 0}, 2)
	var cancels []context.CancelFunc
	for range 2 {
		ctx, cancel := context.WithCancel(context.Background())
		cancels = append(cancels, cancel)
		req, _ := http.NewRequestWithContext(ctx, "POST", ts.URL+"/v1/completions",
			strings.NewReader(`{"prompt":"Once upon a time","max_tokens":200,"temperature":0,"stream":true}`))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() && !strings.Contains(sc.Text(), `"text":"`) { // the first token's chunk
		}
	}
	// Both slots busy and no queue: a third is refused.
	if code, _, raw := post(t, ts, "/v1/completions", `{"prompt":"hi","max_tokens":2}`); code != http.StatusServiceUnavailable {
		t.Errorf("a third request with both slots streaming: %d %s, want 503", code, raw)
	}
	for _, c := range cancels {
		c()
	}
	waitIdle(t, s)
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if got := completionText(t, ts.URL, parallelPrompts[i], 4); got == "" {
				t.Errorf("request %d after the cancellations failed", i)
			}
		}()
	}
	wg.Wait()
	waitIdle(t, s)
}

func decodeJSON(resp *http.Response, v any) error { return json.NewDecoder(resp.Body).Decode(v) }

func decodeString(s string, v any) error { return json.Unmarshal([]byte(s), v) }

// With every slot held and no queue, a request is answered 503 at once.
func TestBusyIs503Batch(t *testing.T) {
	ts, s := testServerSlots(t, Config{MaxQueue: 0}, 3)
	for range 3 {
		s.slot <- struct{}{}
		s.waiting.Add(1)
	}
	defer func() {
		for range 3 {
			<-s.slot
			s.waiting.Add(-1)
		}
	}()
	code, _, raw := post(t, ts, "/v1/completions", `{"prompt":"hi","max_tokens":2}`)
	if code != http.StatusServiceUnavailable || !strings.Contains(raw, "server busy") {
		t.Errorf("%d %s, want 503 server busy", code, raw)
	}
}
