package llamabench

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// fake records what the driver asks of an engine.
type fake struct {
	ctxs   []int
	evals  [][]int32 // every Eval's tokens, all sessions
	truncs []int
}

func (f *fake) NewSession(nCtx int) (Session, error) {
	f.ctxs = append(f.ctxs, nCtx)
	return fakeSession{f}, nil
}
func (f *fake) Vocab() int32 { return 100 }
func (f *fake) BOS() int32   { return 7 }

type fakeSession struct{ f *fake }

func (s fakeSession) Eval(toks []int32) error {
	s.f.evals = append(s.f.evals, append([]int32(nil), toks...))
	return nil
}
func (s fakeSession) Truncate(n int) error { s.f.truncs = append(s.f.truncs, n); return nil }
func (s fakeSession) Close() error         { return nil }

// TestRunFollowsTheProtocol: a fresh context per test sized for depth and
// test, the depth prompt once (BOS first), then warmup and repetitions each
// truncated back to the depth.
func TestRunFollowsTheProtocol(t *testing.T) {
	f := &fake{}
	tests, err := Run(f, Plan{Prompt: []int{8}, Gen: []int{3}, Reps: 2, Depth: 5, WarmupPrompt: 4, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(tests) != 2 || tests[0].Name != "pp8@d5" || tests[1].Name != "tg3@d5" {
		t.Fatalf("tests %+v", tests)
	}
	for _, tt := range tests {
		if len(tt.TokensPerSec) != 2 || len(tt.SamplesNs) != 2 || tt.AvgTS <= 0 {
			t.Errorf("%s: %+v", tt.Name, tt)
		}
	}
	if !reflect.DeepEqual(f.ctxs, []int{13, 8}) {
		t.Errorf("contexts %v, want [13 8]", f.ctxs)
	}
	// pp8: depth 5, warmup 4, 2×8; tg3: depth 5, warmup 1, 2×3 single tokens.
	var sizes []int
	for _, e := range f.evals {
		sizes = append(sizes, len(e))
	}
	want := []int{5, 4, 8, 8, 5, 1, 1, 1, 1, 1, 1, 1}
	if !reflect.DeepEqual(sizes, want) {
		t.Errorf("eval sizes %v, want %v", sizes, want)
	}
	if f.evals[0][0] != 7 || f.evals[4][0] != 7 {
		t.Errorf("depth prompts do not start with BOS: %v, %v", f.evals[0], f.evals[4])
	}
	if !reflect.DeepEqual(f.truncs, []int{5, 5, 5, 5, 5, 5}) {
		t.Errorf("truncations %v", f.truncs)
	}
}

// switcher is a fake session that runs work on other threads on request,
// noting the threads each Eval ran on.
type switcher struct {
	fakeSession
	threads *int
	log     *[]int // per Eval: its tokens times the threads it ran on
}

func (s switcher) Eval(toks []int32) error {
	*s.log = append(*s.log, len(toks)**s.threads)
	return s.fakeSession.Eval(toks)
}

func (s switcher) WithThreads(n int, f func() error) error {
	old := *s.threads
	*s.threads = n
	defer func() { *s.threads = old }()
	return f()
}

type switchEngine struct {
	*fake
	threads int
	log     []int
}

func (e *switchEngine) NewSession(nCtx int) (Session, error) {
	s, _ := e.fake.NewSession(nCtx)
	return switcher{s.(fakeSession), &e.threads, &e.log}, nil
}

// Plan.DepthThreads runs the depth prompt, and only it, on its threads; an
// engine that cannot switch is refused with an error naming the depth prompt.
func TestDepthThreads(t *testing.T) {
	e := &switchEngine{fake: &fake{}, threads: 1}
	if _, err := Run(e, Plan{Gen: []int{2}, Reps: 2, Depth: 6, DepthThreads: -1}); err == nil {
		t.Error("negative depth threads accepted")
	}
	if _, err := Run(e, Plan{Gen: []int{2}, Reps: 2, Depth: 6, DepthThreads: 16}); err != nil {
		t.Fatal(err)
	}
	// depth 6 on 16 threads, then warmup 1 and 2×2 single tokens on 1.
	if want := []int{6 * 16, 1, 1, 1, 1, 1}; !reflect.DeepEqual(e.log, want) {
		t.Errorf("tokens×threads per Eval %v, want %v", e.log, want)
	}
	_, err := Run(&fake{}, Plan{Gen: []int{2}, Reps: 1, Depth: 6, DepthThreads: 16})
	if err == nil || !strings.Contains(err.Error(), "depth prompt") {
		t.Errorf("an engine without WithThreads: %v", err)
	}
	if _, err := Run(&fake{}, Plan{Gen: []int{2}, Reps: 1, Depth: 6}); err != nil {
		t.Errorf("no depth threads asked: %v", err)
	}
}

func TestPlanCheck(t *testing.T) {
	file := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []Plan{{}, {Prompt: []int{0}}, {Gen: []int{4}, Depth: -1}, {Gen: []int{4}, DepthThreads: -2},
		{Gen: []int{4}, DepthSnapshot: t.TempDir()}, {Gen: []int{4}, Depth: 8, DepthSnapshot: file},
		{Gen: []int{4}, Depth: 8, DepthSnapshot: filepath.Join(file, "none")}} {
		if p.Check() == nil {
			t.Errorf("%+v accepted", p)
		}
	}
	if _, err := Run(&fake{}, Plan{}); err == nil {
		t.Error("Run without tests")
	}
}

func TestIntsRoundTrip(t *testing.T) {
	var got []int
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.Var(Ints(&got), "p", "")
	if err := fs.Parse([]string{"-p=" + JoinInts([]int{512, 1024})}); err != nil || !reflect.DeepEqual(got, []int{512, 1024}) {
		t.Errorf("got %v, %v", got, err)
	}
	if err := fs.Parse([]string{"-p=x"}); err == nil {
		t.Error("-p=x accepted")
	}
}

// snapper is a fake session that keeps its "cache" (the tokens evaluated)
// in snapshot files.
type snapper struct {
	fakeSession
	key   string
	cache *[]int32
}

func (s snapper) Eval(toks []int32) error {
	*s.cache = append(*s.cache, toks...)
	return s.fakeSession.Eval(toks)
}

func (s snapper) SnapshotKey() string { return s.key }

func (s snapper) SaveSnapshot(path string, toks []int32) error {
	if !reflect.DeepEqual(*s.cache, toks) {
		return fmt.Errorf("saving %d tokens, the cache holds %d", len(toks), len(*s.cache))
	}
	return os.WriteFile(path, []byte(fmt.Sprint(toks)), 0o644)
}

func (s snapper) LoadSnapshot(path string, toks []int32) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if string(b) != fmt.Sprint(toks) {
		return errors.New("the snapshot holds other tokens")
	}
	*s.cache = append((*s.cache)[:0], toks...)
	return nil
}

type snapEngine struct {
	*fake
	key   string
	cache []int32
}

func (e *snapEngine) NewSession(nCtx int) (Session, error) {
	s, _ := e.fake.NewSession(nCtx)
	e.cache = e.cache[:0]
	return snapper{s.(fakeSession), e.key, &e.cache}, nil
}

// Plan.DepthSnapshot: the first process fills the depth and writes its
// snapshot, the next reads it instead of evaluating the depth and then
// evaluates the same timed tokens; another key (model, cache type) fills
// again; an engine without snapshots is refused naming them, and no
// half-written file is left behind.
func TestDepthSnapshot(t *testing.T) {
	dir := t.TempDir()
	plan := Plan{Gen: []int{2}, Reps: 1, Depth: 6, DepthSnapshot: dir, Seed: 3}
	first := &snapEngine{fake: &fake{}, key: "m1"}
	tests, err := Run(first, plan)
	if err != nil {
		t.Fatal(err)
	}
	if tests[0].Depth != "filled, snapshot written" {
		t.Errorf("first run: depth %q", tests[0].Depth)
	}
	second := &snapEngine{fake: &fake{}, key: "m1"}
	if tests, err = Run(second, plan); err != nil {
		t.Fatal(err)
	}
	if tests[0].Depth != "snapshot read" {
		t.Errorf("second run: depth %q", tests[0].Depth)
	}
	if len(second.evals) != len(first.evals)-1 || !reflect.DeepEqual(second.evals, first.evals[1:]) {
		t.Errorf("second run evaluated %v, want the first's %v without the depth", second.evals, first.evals)
	}
	third := &snapEngine{fake: &fake{}, key: "m2"}
	if tests, err = Run(third, plan); err != nil || tests[0].Depth != "filled, snapshot written" {
		t.Errorf("another key: %v, %+v", err, tests)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	if len(files) != 2 {
		t.Errorf("snapshot directory holds %v, want two snapshots", files)
	}
	// A snapshot that holds other tokens is an error, not a silent fill.
	name := SnapshotName("m1", first.evals[0])
	if err := os.WriteFile(filepath.Join(dir, name), []byte("junk"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(&snapEngine{fake: &fake{}, key: "m1"}, plan); err == nil || !strings.Contains(err.Error(), "reading the snapshot") {
		t.Errorf("a bad snapshot: %v", err)
	}
	_, err = Run(&fake{}, plan)
	if err == nil || !strings.Contains(err.Error(), "snapshot") {
		t.Errorf("an engine without snapshots: %v", err)
	}
}
