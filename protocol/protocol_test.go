package protocol

import (
	"encoding/json"
	"strings"
	"testing"
)

func seq(base, step float64, n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = base + step*float64(i%5) // a little spread
	}
	return v
}

func TestRule(t *testing.T) {
	r := DefaultRule()
	inc := seq(100, 1, 10)
	for _, tc := range []struct {
		name    string
		ch      []float64
		gate    bool
		promote bool
		reason  string
	}{
		{"clearly faster", seq(80, 1, 10), true, true, "below incumbent p5"},
		{"failed gate", seq(50, 1, 10), false, false, "gate"},
		{"slower", seq(110, 1, 10), true, false, "not faster"},
		{"same", seq(100, 1, 10), true, false, "not faster"},
		{"2% faster", seq(98, 1, 10), true, false, ""},
		{"faster, few runs", seq(80, 1, 4), true, true, "Mann-Whitney"},
	} {
		d := r.Decide(inc, tc.ch, tc.gate)
		if d.Promote != tc.promote || !strings.Contains(d.Reason, tc.reason) {
			t.Errorf("%s: promote %v (%s), want %v (%q)", tc.name, d.Promote, d.Reason, tc.promote, tc.reason)
		}
	}
	// Significant but small, ranges overlapping (one fast incumbent outlier):
	// Mann-Whitney alone is not enough under 5%.
	inc = []float64{90, 100.1, 100.2, 100.3, 100.4, 100.5, 100.6, 100.7, 100.8, 100.9}
	ch := []float64{97, 97.1, 97.2, 97.3, 97.4, 97.5, 97.6, 97.7, 97.8, 97.9}
	if d := r.Decide(inc, ch, true); d.Promote || !strings.Contains(d.Reason, "below 5%") {
		t.Errorf("small gain: %+v", d)
	}
}

func TestE2EValidate(t *testing.T) {
	if err := DefaultE2E().Validate(); err != nil {
		t.Error(err)
	}
	bad := DefaultE2E()
	bad.Runs = 0
	if err := bad.Validate(); err == nil {
		t.Error("zero runs accepted")
	}
	bad = DefaultE2E()
	bad.DepthThreads = 16
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "without a depth") {
		t.Errorf("depth threads without a depth: %v", err)
	}
	bad.Depth = 4096
	if err := bad.Validate(); err != nil {
		t.Errorf("depth 4096 filled on 16 threads: %v", err)
	}
	bad.DepthThreads = -1
	if err := bad.Validate(); err == nil {
		t.Error("negative depth threads accepted")
	}
	if DefaultE2E().PromptTest() != "pp1024" || DefaultE2E().GenTest() != "tg256" {
		t.Error("test names")
	}
}

func TestTestNames(t *testing.T) {
	for _, c := range []struct {
		e             E2E
		prompt, gen   string
		named, named0 string
	}{
		{E2E{PromptTokens: 1024, GenTokens: 256}, "pp1024", "tg256", "pp1024", "tg256"},
		{E2E{PromptTokens: 0, GenTokens: 64, Depth: 4096}, "pp0@d4096", "tg64@d4096", "tg64@d4096", "tg64@d4096"},
		{E2E{PromptTokens: 512, Depth: 8}, "pp512@d8", "tg0@d8", "pp512@d8", "tg0@d8"},
	} {
		if got := c.e.PromptTest(); got != c.prompt {
			t.Errorf("%+v: PromptTest %q, want %q", c.e, got, c.prompt)
		}
		if got := c.e.GenTest(); got != c.gen {
			t.Errorf("%+v: GenTest %q, want %q", c.e, got, c.gen)
		}
		if got := TestName(c.e.PromptTokens, c.e.GenTokens, c.e.Depth); got != c.named {
			t.Errorf("%+v: TestName %q, want %q", c.e, got, c.named)
		}
		if got := TestName(0, c.e.GenTokens, c.e.Depth); got != c.named0 {
			t.Errorf("%+v: TestName of its decode test %q, want %q", c.e, got, c.named0)
		}
	}
	if err := (E2E{GenTokens: 4, Runs: 1, Threads: 1, Depth: -1}).Validate(); err == nil {
		t.Error("negative depth validated")
	}
}

// TestE2ERepsPerRound: a negative count is refused, 0 and 1 both mean one
// sample per round, and a record of one leaves the field out of the JSON.
func TestE2ERepsPerRound(t *testing.T) {
	e := DefaultE2E()
	e.RepsPerRound = -1
	if err := e.Validate(); err == nil || !strings.Contains(err.Error(), "repetitions per round -1") {
		t.Errorf("negative repetitions per round: %v", err)
	}
	for reps, want := range map[int]int{0: 1, 1: 1, 4: 4} {
		e.RepsPerRound = reps
		if err := e.Validate(); err != nil {
			t.Errorf("reps %d refused: %v", reps, err)
		}
		if e.Reps() != want {
			t.Errorf("reps %d: Reps() %d, want %d", reps, e.Reps(), want)
		}
	}
	for reps, want := range map[int]bool{0: false, 4: true} {
		e.RepsPerRound = reps
		data, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(string(data), `"reps_per_round":4`); got != want || (!want && strings.Contains(string(data), "reps_per_round")) {
			t.Errorf("reps %d: JSON %s", reps, data)
		}
	}
}
