// Package loadtest drives an OpenAI-compatible server on 127.0.0.1 with
// many concurrent streaming clients and reports latency and time to first
// token: issue 21's load test of damascus serve.
package loadtest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Options are one load test's shape.
type Options struct {
	URL       string   // the server, http://127.0.0.1:PORT
	Model     string   // "model" in the requests
	Clients   int      // concurrent clients
	Requests  int      // requests in all
	MaxTokens int      // max_tokens of each
	Prompts   []string // cycled over the requests
	Timeout   time.Duration
}

// Result is what a load test measured. Durations are in milliseconds.
type Result struct {
	Clients, Requests, MaxTokens int
	Errors                       int
	FirstError                   string `json:",omitempty"`
	WallSeconds                  float64
	CompletionTokens             int
	TokensPerSecond              float64 // completion tokens over the wall time
	RequestsPerSecond            float64
	LatencyP50, LatencyP99       float64
	TTFTP50, TTFTP99             float64 // first text chunk
}

// Run sends o.Requests streamed completions from o.Clients goroutines and
// waits for all of them; ctx bounds the whole run. It refuses any address
// other than 127.0.0.1.
func Run(ctx context.Context, o Options) (Result, error) {
	u, err := url.Parse(o.URL)
	if err != nil || u.Scheme != "http" || u.Hostname() != "127.0.0.1" {
		return Result{}, fmt.Errorf("load test URL %q: only http://127.0.0.1:PORT is driven", o.URL)
	}
	if o.Clients < 1 || o.Requests < 1 || o.MaxTokens < 1 || len(o.Prompts) == 0 {
		return Result{}, errors.New("load test: clients, requests, max tokens and prompts must all be positive")
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Minute
	}
	client := &http.Client{Timeout: o.Timeout, Transport: &http.Transport{MaxIdleConnsPerHost: o.Clients}}
	var next atomic.Int64
	lat := make([]float64, o.Requests)
	ttft := make([]float64, o.Requests)
	toks := make([]int, o.Requests)
	errs := make([]error, o.Requests)
	start := time.Now()
	var wg sync.WaitGroup
	for range o.Clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= o.Requests || ctx.Err() != nil {
					return
				}
				lat[i], ttft[i], toks[i], errs[i] = one(ctx, client, o, i)
			}
		}()
	}
	wg.Wait()
	client.CloseIdleConnections()
	r := Result{Clients: o.Clients, Requests: o.Requests, MaxTokens: o.MaxTokens, WallSeconds: time.Since(start).Seconds()}
	var okLat, okTTFT []float64
	for i := range o.Requests {
		if errs[i] == nil && lat[i] == 0 && ctx.Err() != nil {
			errs[i] = ctx.Err() // never sent
		}
		if errs[i] != nil {
			if r.Errors == 0 {
				r.FirstError = fmt.Sprintf("request %d: %v", i, errs[i])
			}
			r.Errors++
			continue
		}
		okLat, okTTFT = append(okLat, lat[i]), append(okTTFT, ttft[i])
		r.CompletionTokens += toks[i]
	}
	r.TokensPerSecond = float64(r.CompletionTokens) / r.WallSeconds
	r.RequestsPerSecond = float64(len(okLat)) / r.WallSeconds
	r.LatencyP50, r.LatencyP99 = quantile(okLat, 0.50), quantile(okLat, 0.99)
	r.TTFTP50, r.TTFTP99 = quantile(okTTFT, 0.50), quantile(okTTFT, 0.99)
	return r, nil
}

// one sends request i and reads its stream to [DONE]: its latency and time
// to first text in milliseconds, and its completion tokens (usage).
func one(ctx context.Context, client *http.Client, o Options, i int) (lat, ttft float64, tokens int, err error) {
	body, _ := json.Marshal(map[string]any{"model": o.Model, "prompt": o.Prompts[i%len(o.Prompts)], "max_tokens": o.MaxTokens,
		"temperature": 0.8, "seed": i, "stream": true})
	req, err := http.NewRequestWithContext(ctx, "POST", o.URL+"/v1/completions", strings.NewReader(string(body)))
	if err != nil {
		return 0, 0, 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	t0 := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return 0, 0, 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var e struct{ Error struct{ Message string } }
		_ = json.NewDecoder(resp.Body).Decode(&e)
		return 0, 0, 0, fmt.Errorf("status %d: %s", resp.StatusCode, e.Error.Message)
	}
	sc := bufio.NewScanner(resp.Body)
	done := false
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if line == "[DONE]" {
			done = true
			break
		}
		var chunk struct {
			Choices []struct{ Text string }
			Usage   *struct {
				CompletionTokens int `json:"completion_tokens"`
			}
			Error *struct{ Message string }
		}
		if err := json.Unmarshal([]byte(line), &chunk); err != nil {
			return 0, 0, 0, fmt.Errorf("chunk %q: %w", line, err)
		}
		if chunk.Error != nil {
			return 0, 0, 0, fmt.Errorf("stream error: %s", chunk.Error.Message)
		}
		if ttft == 0 && len(chunk.Choices) > 0 && chunk.Choices[0].Text != "" {
			ttft = ms(time.Since(t0))
		}
		if chunk.Usage != nil {
			tokens = chunk.Usage.CompletionTokens
		}
	}
	if err := sc.Err(); err != nil {
		return 0, 0, 0, err
	}
	if !done {
		return 0, 0, 0, errors.New("the stream ended without [DONE]")
	}
	lat = ms(time.Since(t0))
	if ttft == 0 {
		ttft = lat // no text (a stop token first): the answer's end is its first token
	}
	return lat, ttft, tokens, nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// quantile is the q-quantile of xs by the nearest rank (0 for none).
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	k := int(q*float64(len(s))+0.999999) - 1
	return s[max(0, min(k, len(s)-1))]
}
