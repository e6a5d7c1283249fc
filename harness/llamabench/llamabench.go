// Package llamabench is the llama-bench protocol over any engine: each ppN
// or tgN test gets a fresh context, an untimed warmup (the whole prompt, or
// one generated token), then timed repetitions, each from the same cache
// (empty, or a depth prompt made once per test); random tokens from a
// seeded generator, the first of a sequence the engine's BOS. Damascus
// (harness/enginebench) and llama.cpp (harness/llamacpp) are its adapters,
// so their numbers compare test for test.
package llamabench

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"github.com/damascus-llm/damascus/protocol"
	"github.com/damascus-llm/damascus/protocol/stats"
)

// An Engine is a loaded model the driver measures.
type Engine interface {
	// NewSession opens a fresh context, its KV cache empty, for nCtx tokens.
	NewSession(nCtx int) (Session, error)
	// Vocab is the number of tokens.
	Vocab() int32
	// BOS is the token a sequence starts with; -1 for none.
	BOS() int32
}

// A Session is one context of an Engine.
type Session interface {
	// Eval evaluates toks after the cached ones and returns when the
	// engine is done with them.
	Eval(toks []int32) error
	// Truncate drops the cache to its first n tokens.
	Truncate(n int) error
	Close() error
}

// A ThreadSwitcher is a Session that can run part of its work on other
// threads than it was opened with: the untimed depth prompt on many cores,
// the timed tests on the protocol's (Plan.DepthThreads).
type ThreadSwitcher interface {
	// WithThreads runs f with evaluations on n threads, then goes back.
	WithThreads(n int, f func() error) error
}

// A Snapshotter is a Session that can write its KV cache to a file and
// read it back (Plan.DepthSnapshot): a long depth prompt filled once serves
// the later processes of a run, each of which would otherwise spend most
// of its time on the untimed fill.
type Snapshotter interface {
	// SnapshotKey names what a snapshot depends on besides its tokens: the
	// engine, the model file and the cache type.
	SnapshotKey() string
	// SaveSnapshot writes the cache, which holds toks, to path.
	SaveSnapshot(path string, toks []int32) error
	// LoadSnapshot fills the empty cache from path; it must hold toks.
	LoadSnapshot(path string, toks []int32) error
}

// Plan is what one bench process measures.
type Plan struct {
	Prompt []int // ppN sizes
	Gen    []int // tgN lengths
	Reps   int   // timed repetitions per test
	// NoWarmup skips the untimed warmup; WarmupPrompt, when > 0, is the
	// tokens of a prefill test's warmup instead of the whole prompt.
	NoWarmup     bool
	WarmupPrompt int
	// Depth, when > 0, is the tokens of a random prompt in the KV cache
	// before each test (llama-bench's -d).
	Depth int
	// DepthThreads, when > 0, is the threads the depth prompt runs on (the
	// session must be a ThreadSwitcher); the timed tests run on the
	// session's own.
	DepthThreads int
	// DepthSnapshot, when set, is a directory of depth prompts' caches: a
	// test reads its snapshot from there when one was written (by an
	// earlier process of the run), else fills the depth and writes it. The
	// tokens drawn are the same either way. The session must be a
	// Snapshotter.
	DepthSnapshot string
	// Seed and Stream seed the random tokens; each engine keeps its own
	// stream, so its runs before this driver existed draw the same tokens.
	Seed, Stream uint64
}

// Check reports a plan that cannot run.
func (p Plan) Check() error {
	if len(p.Prompt)+len(p.Gen) == 0 {
		return errors.New("no tests (give prompt sizes or generation lengths)")
	}
	for _, n := range append(append([]int(nil), p.Prompt...), p.Gen...) {
		if n <= 0 {
			return fmt.Errorf("test size %d must be positive", n)
		}
	}
	if p.Depth < 0 {
		return fmt.Errorf("depth %d must not be negative", p.Depth)
	}
	if p.DepthThreads < 0 {
		return fmt.Errorf("depth threads %d must not be negative", p.DepthThreads)
	}
	if p.DepthSnapshot != "" {
		// Checked before the fill, which may take minutes.
		if p.Depth == 0 {
			return errors.New("a depth snapshot directory without a depth")
		}
		if st, err := os.Stat(p.DepthSnapshot); err != nil || !st.IsDir() {
			return fmt.Errorf("depth snapshot directory %s: not a directory (%v)", p.DepthSnapshot, err)
		}
	}
	return nil
}

// Test is one ppN or tgN test.
type Test struct {
	Name      string  `json:"name"` // "pp512", "tg128", "tg128@d4096"
	NPrompt   int     `json:"n_prompt"`
	NGen      int     `json:"n_gen"`
	SamplesNs []int64 `json:"samples_ns"` // one per repetition
	// TokensPerSec are the per-repetition rates, tokens / seconds.
	TokensPerSec []float64 `json:"tokens_per_sec"`
	// AvgTS and StdevTS: mean and sample standard deviation of
	// TokensPerSec, as llama-bench reports them.
	AvgTS   float64 `json:"avg_ts"`
	StdevTS float64 `json:"stdev_ts"`
	// Depth says where the depth prompt's cache came from: "filled" (and
	// "filled, snapshot written" under Plan.DepthSnapshot) or "snapshot read".
	Depth string `json:"depth,omitempty"`
}

// Run measures every test of p on e: the prefill tests, then the decode tests.
func Run(e Engine, p Plan) ([]Test, error) {
	if err := p.Check(); err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(p.Seed, p.Stream))
	var out []Test
	for _, n := range p.Prompt {
		t, err := runTest(e, p, n, 0, rng)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	for _, n := range p.Gen {
		t, err := runTest(e, p, 0, n, rng)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// runTest runs one ppN (nPrompt > 0) or tgN test in a fresh session.
func runTest(e Engine, p Plan, nPrompt, nGen int, rng *rand.Rand) (Test, error) {
	t := Test{NPrompt: nPrompt, NGen: nGen, Name: protocol.TestName(nPrompt, nGen, p.Depth)}
	s, err := e.NewSession(p.Depth + nPrompt + nGen)
	if err != nil {
		return t, fmt.Errorf("%s: %w", t.Name, err)
	}
	defer s.Close()
	f := feeder{s: s, rng: rng, vocab: e.Vocab(), bos: e.BOS()}
	if p.Depth > 0 {
		how, err := f.depth(p)
		if err != nil {
			return t, fmt.Errorf("%s: depth prompt: %w", t.Name, err)
		}
		t.Depth = how
	}
	run := func(warm bool) error {
		if err := f.truncate(p.Depth); err != nil {
			return err
		}
		switch {
		case nPrompt > 0 && warm && p.WarmupPrompt > 0:
			return f.prompt(min(p.WarmupPrompt, nPrompt))
		case nPrompt > 0:
			return f.prompt(nPrompt)
		case warm:
			return f.gen(1)
		}
		return f.gen(nGen)
	}
	if !p.NoWarmup {
		if err := run(true); err != nil {
			return t, fmt.Errorf("%s warmup: %w", t.Name, err)
		}
	}
	for range p.Reps {
		start := time.Now()
		err := run(false)
		ns := time.Since(start).Nanoseconds()
		if err != nil {
			return t, fmt.Errorf("%s: %w", t.Name, err)
		}
		t.SamplesNs = append(t.SamplesNs, ns)
		t.TokensPerSec = append(t.TokensPerSec, float64(nPrompt+nGen)*1e9/float64(ns))
	}
	sum := stats.Summarize(t.TokensPerSec)
	t.AvgTS, t.StdevTS = sum.Mean, sum.Stddev
	return t, nil
}

// feeder feeds a session random tokens, a BOS first in an empty cache.
type feeder struct {
	s     Session
	rng   *rand.Rand
	vocab int32
	bos   int32
	pos   int // tokens in the cache
}

func (f *feeder) first() int32 {
	if f.bos >= 0 && f.bos < f.vocab {
		return f.bos
	}
	return f.rng.Int32N(f.vocab)
}

func (f *feeder) truncate(n int) error {
	if err := f.s.Truncate(n); err != nil {
		return err
	}
	f.pos = n
	return nil
}

// depth puts p.Depth random tokens in the empty cache: evaluated on
// p.DepthThreads, or read from the snapshot that p.DepthSnapshot holds for
// them (written after the fill when it holds none). It says which.
func (f *feeder) depth(p Plan) (string, error) {
	toks := f.draw(p.Depth)
	var path string
	var snap Snapshotter
	if p.DepthSnapshot != "" {
		var ok bool
		if snap, ok = f.s.(Snapshotter); !ok {
			return "", errors.New("this engine cannot keep its KV cache in a snapshot")
		}
		path = filepath.Join(p.DepthSnapshot, SnapshotName(snap.SnapshotKey(), toks))
		if _, err := os.Stat(path); err == nil {
			if err := snap.LoadSnapshot(path, toks); err != nil {
				return "", fmt.Errorf("reading the snapshot %s: %w", path, err)
			}
			f.pos = len(toks)
			return "snapshot read", nil
		}
	}
	fill := func() error { return f.eval(toks) }
	var err error
	switch ts, ok := f.s.(ThreadSwitcher); {
	case p.DepthThreads == 0:
		err = fill()
	case ok:
		err = ts.WithThreads(p.DepthThreads, fill)
	default:
		err = errors.New("this engine cannot run the depth prompt on other threads than the tests")
	}
	if err != nil || snap == nil {
		return "filled", err
	}
	// Written aside and renamed: a process that stops half-way leaves no
	// snapshot that a later one would take for whole.
	tmp := fmt.Sprintf("%s.%d.tmp", path, os.Getpid())
	if err := snap.SaveSnapshot(tmp, toks); err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("writing the snapshot %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("writing the snapshot: %w", err)
	}
	return "filled, snapshot written", nil
}

// ModelIdentity names a model file for a SnapshotKey: its absolute path,
// size and modification time, so that a rewritten file is another model.
func ModelIdentity(path string) string {
	id := path
	if abs, err := filepath.Abs(id); err == nil {
		id = abs
	}
	if st, err := os.Stat(id); err == nil {
		id += fmt.Sprintf(" (%d bytes, modified %s)", st.Size(), st.ModTime().UTC().Format(time.RFC3339Nano))
	}
	return id
}

// SnapshotName is the file name of a depth snapshot: a hash of the
// engine's key and the tokens, so that no other model, cache type, engine
// or token stream ever reads it.
func SnapshotName(key string, toks []int32) string {
	h := fnv.New64a()
	h.Write([]byte(key))
	binary.Write(h, binary.LittleEndian, toks)
	return fmt.Sprintf("depth%d-%016x.kv", len(toks), h.Sum64())
}

// draw is n random tokens, a BOS first in an empty cache.
func (f *feeder) draw(n int) []int32 {
	toks := make([]int32, n)
	for i := range toks {
		toks[i] = f.rng.Int32N(f.vocab)
	}
	if f.pos == 0 {
		toks[0] = f.first()
	}
	return toks
}

// prompt evaluates n random tokens in one batch.
func (f *feeder) prompt(n int) error { return f.eval(f.draw(n)) }

// eval evaluates toks in one batch after the cached ones.
func (f *feeder) eval(toks []int32) error {
	n := len(toks)
	if err := f.s.Eval(toks); err != nil {
		return err
	}
	f.pos += n
	return nil
}

// gen evaluates n tokens one at a time, as decoding does.
func (f *feeder) gen(n int) error {
	tok := []int32{f.first()}
	for range n {
		if err := f.s.Eval(tok); err != nil {
			return err
		}
		f.pos++
		tok[0] = f.rng.Int32N(f.vocab)
	}
	return nil
}
