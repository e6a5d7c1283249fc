package loadtest

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

func TestQuantile(t *testing.T) {
	xs := []float64{5, 1, 4, 2, 3, 10, 9, 8, 7, 6}
	for q, want := range map[float64]float64{0.5: 5, 0.99: 10, 0.1: 1, 0.9: 9} {
		if got := quantile(xs, q); got != want {
			t.Errorf("quantile %.2f = %v, want %v", q, got, want)
		}
	}
	if quantile(nil, 0.5) != 0 {
		t.Error("quantile of nothing is not 0")
	}
}

// Only 127.0.0.1 is driven, and bad shapes are refused.
func TestRefusals(t *testing.T) {
	for _, o := range []Options{
		{URL: "http://example.com:80", Clients: 1, Requests: 1, MaxTokens: 1, Prompts: []string{"a"}},
		{URL: "http://localhost:80", Clients: 1, Requests: 1, MaxTokens: 1, Prompts: []string{"a"}},
		{URL: "http://127.0.0.1:1", Clients: 0, Requests: 1, MaxTokens: 1, Prompts: []string{"a"}},
	} {
		if _, err := Run(context.Background(), o); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
}

// Against a fake streaming server that fails every 7th request: every
// request is sent once, failures are counted, usage tokens summed.
func TestRunCounts(t *testing.T) {
	var n atomic.Int64
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1)%7 == 0 {
			w.WriteHeader(503)
			fmt.Fprint(w, `{"error":{"message":"busy"}}`)
			return
		}
		fmt.Fprint(w, "data: {\"choices\":[{\"text\":\"hi\"}]}\n\ndata: {\"choices\":[{\"text\":\"\"}],\"usage\":{\"completion_tokens\":3}}\n\ndata: [DONE]\n\n")
	}))
	defer ts.Close()
	r, err := Run(context.Background(), Options{URL: ts.URL, Clients: 8, Requests: 70, MaxTokens: 3, Prompts: []string{"a", "b"}})
	if err != nil {
		t.Fatal(err)
	}
	if n.Load() != 70 || r.Errors != 10 || r.CompletionTokens != 60*3 || !strings.Contains(r.FirstError, "busy") {
		t.Errorf("%d sent, %+v", n.Load(), r)
	}
	if r.LatencyP50 <= 0 || r.TTFTP99 > r.LatencyP99*1.0001+1 {
		t.Errorf("latencies %+v", r)
	}
}
