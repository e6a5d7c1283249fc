package e2e

import (
	"fmt"
	"io"
	"slices"

	"github.com/damascus-llm/damascus/internal/cli"
	"github.com/damascus-llm/damascus/protocol"
	"github.com/damascus-llm/damascus/protocol/stats"
)

// alternate returns cs, reversed on odd rounds.
func alternate(cs []*contender, round int) []*contender {
	if round%2 == 0 {
		return cs
	}
	out := make([]*contender, len(cs))
	for i, c := range cs {
		out[len(cs)-1-i] = c
	}
	return out
}

// interleavedRounds runs the prefill and decode tests: one fresh process per
// engine and round, the order reversed every other round. Each process
// times p.Reps() samples of each test (after one depth prompt, when there
// is a depth), so sample j of every engine comes from round j / p.Reps(),
// repetition j % p.Reps(): the engines' samples j are paired. afterRound,
// when not nil, runs after each round's processes (the per-round probe).
func interleavedRounds(cs []*contender, p protocol.E2E, log io.Writer, afterRound func()) error {
	var prompt, gen []int
	var want []string // the tests each process must report, p.Reps() samples each
	if p.PromptTokens > 0 {
		prompt = []int{p.PromptTokens}
		want = append(want, p.PromptTest())
	}
	if p.GenTokens > 0 {
		gen = []int{p.GenTokens}
		want = append(want, p.GenTest())
	}
	reps := p.Reps()
	perRound := ""
	if reps > 1 {
		perRound = fmt.Sprintf(" ×%d reps", reps)
	}
	pb := cli.NewProgress(log, int64(p.Runs*len(cs)), "e2e", false)
	for r := range p.Runs {
		for i, c := range alternate(cs, r) {
			pb.Set(int64(len(cs)*r+i), fmt.Sprintf("e2e round %d/%d%s %-12s %s %s", r+1, p.Runs, perRound, c.name, p.PromptTest(), p.GenTest()))
			out, sp, err := c.bench(benchSpec{prompt: prompt, gen: gen, reps: reps, seed: 1, depth: p.Depth})
			if err != nil {
				return err
			}
			// Pairing sample j of each engine needs every process to give
			// exactly its repetitions.
			for _, test := range want {
				if n := len(out.tests[test]); n != reps {
					return fmt.Errorf("%s round %d: %d samples of %s, asked for %d repetitions", c.name, r+1, n, test, reps)
				}
			}
			c.s.add(out, sp, r, c.name, log)
		}
		if afterRound != nil {
			afterRound()
		}
	}
	pb.Set(int64(p.Runs*len(cs)), "e2e")
	return nil
}

// add keeps one round's samples (its repetitions in order) and the
// process's account of itself.
func (s *engineSamples) add(out *benchOut, sp *spawned, round int, name string, log io.Writer) {
	for test, tps := range out.tests {
		s.tests[test] = append(s.tests[test], tps...)
		// Each sample is also logged as it comes, so that a run cut
		// short (a time limit, a crash) still leaves its raw data.
		depth := ""
		if out.depth != "" {
			depth = " (depth " + out.depth + ")"
		}
		fmt.Fprintf(log, "sample round %d %s %s%s: %v tok/s\n", round+1, name, test, depth, tps)
	}
	if sp.maxRSS > 0 {
		s.rss = append(s.rss, float64(sp.maxRSS))
	}
	s.huge, s.kernels, s.variant, s.libDir = out.huge, out.kernels, out.variant, out.libDir
	s.device, s.deviceInfo = out.device, out.deviceInfo
	if out.llamaBench != nil {
		s.llamaBench = out.llamaBench
	}
	if out.placement != "" && !slices.Contains(s.placement, out.placement) {
		s.placement = append(s.placement, out.placement)
	}
}

// coldStarts times fresh processes that load the model evicted from the
// page cache and evaluate one token; the whole wall time is the sample. It
// returns the page cache state of the run, for its record.
func coldStarts(cs []*contender, path string, runs int, log io.Writer) (string, error) {
	pageCache := "warm: the model file stays cached between runs"
	for r := range runs {
		for _, c := range alternate(cs, r) {
			if err := evict(path); err != nil {
				pageCache = "cold start: eviction failed (" + err.Error() + "), page cache state unknown"
			} else {
				pageCache = "tests warm; cold start after posix_fadvise(POSIX_FADV_DONTNEED) of the model file"
			}
			fmt.Fprintf(log, "cold start %d/%d: %s\n", r+1, runs, c.name)
			_, sp, err := c.bench(benchSpec{prompt: []int{1}, reps: 1, noWarmup: true, seed: 1})
			if err != nil {
				return "", fmt.Errorf("cold start: %w", err)
			}
			c.s.cold = append(c.s.cold, sp.wall.Seconds())
		}
	}
	return pageCache, nil
}

// sustainedDecode runs windows of about SustainedWindow seconds back to
// back, each engine alone on the machine.
func sustainedDecode(cs []*contender, p protocol.E2E, log io.Writer) error {
	if p.SustainedSeconds <= 0 || p.GenTokens <= 0 {
		return nil
	}
	for _, c := range cs {
		rate := stats.Summarize(c.s.tests[p.GenTest()]).Median
		n := max(8, int(rate*float64(p.SustainedWindow)))
		windows := max(2, p.SustainedSeconds/max(p.SustainedWindow, 1))
		fmt.Fprintf(log, "sustained decode: %s, %d windows of tg%d\n", c.name, windows, n)
		out, _, err := c.bench(benchSpec{gen: []int{n}, reps: windows, seed: 2})
		if err != nil {
			return fmt.Errorf("sustained: %w", err)
		}
		c.s.sustain = out.tests[fmt.Sprintf("tg%d", n)]
	}
	return nil
}
