package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/damascus-llm/damascus/harness/record"
	"github.com/damascus-llm/damascus/internal/testdata"
)

// TestABTiny runs an engine A/B on the tiny preset: the promoted kernels
// beside an arm of naive matvecs (every machine has them), gated first,
// recorded with the arm's overrides; `ledger promote --bundle` then judges
// the arm from the store and refuses it (two rounds prove nothing).
func TestABTiny(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns the engine several times")
	}
	testdata.Llama3TokenizerJSON.Require(t)
	testdata.Llama32Template.Require(t)
	dir := t.TempDir()
	store := filepath.Join(dir, "ledger.jsonl")
	arm := "matvec/q4_k=naive,matvec/q6_k=naive"
	code, out, errOut := runCLI("ab", "--preset", "tiny", "--cache", filepath.Join(dir, "cache"), "--pp", "16", "--tg", "4",
		"--runs", "2", "--threads", "1", "--gate-shapes", "tails", "--store", store, "--arm", "slow="+arm)
	if code != 0 {
		t.Fatalf("ab: exit %d\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{"arm slow", "pp16", "tg4", "peak RSS", "tg4      paired by round: median", "bundle rule: would refuse"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	recs, err := record.Load(store)
	if err != nil {
		t.Fatal(err)
	}
	run := recs[0].Run
	if run == nil || run.Protocol.AB == nil || len(run.Protocol.Engines) != 2 || run.Protocol.Engines[1].Overrides != arm {
		t.Fatalf("run record: %+v", run)
	}
	gates, samples := 0, map[string]int{}
	for _, r := range recs {
		if r.Gate != nil {
			gates++
		}
		if r.E2E != nil {
			samples[r.E2E.Engine+" "+r.E2E.Test] = len(r.E2E.Samples)
		}
	}
	if gates == 0 {
		t.Error("no gate records")
	}
	for _, k := range []string{"damascus pp16", "damascus+slow pp16", "damascus tg4", "damascus+slow tg4", "damascus+slow peak-rss"} {
		if samples[k] != 2 {
			t.Errorf("%s: %d samples, want 2 (%v)", k, samples[k], samples)
		}
	}
	code, out, errOut = runCLI("promote", "--bundle", "slow", "--store", store, "--prefs", "../../promoted/preferences.json", "-n")
	if code == 0 || !strings.Contains(errOut, "was not promoted") || !strings.Contains(out, "refused") {
		t.Errorf("promote --bundle: exit %d\n%s\n%s", code, out, errOut)
	}
	// An arm that only moves the small-batch crossover: timed and recorded,
	// never a bundle.
	store2 := filepath.Join(dir, "ledger2.jsonl")
	code, out, errOut = runCLI("ab", "--preset", "tiny", "--cache", filepath.Join(dir, "cache"), "--pp", "16", "--tg", "",
		"--runs", "1", "--threads", "1", "--store", store2, "--arm-small-batch", "mat=0", "--arm-batch-chunk", "c32=32", "--arm-deal-run", "r4=4")
	if code != 0 || !strings.Contains(out, "DAMASCUS_SMALL_BATCH=0") || !strings.Contains(out, "DAMASCUS_BATCH_CHUNK=32") || !strings.Contains(out, "DAMASCUS_DEAL_RUN=4") {
		t.Fatalf("ab --arm-small-batch --arm-batch-chunk --arm-deal-run: exit %d\n%s\n%s", code, out, errOut)
	}
	if recs, err := record.Load(store2); err != nil || recs[0].Run == nil || len(recs[0].Run.Protocol.Engines) != 4 ||
		recs[0].Run.Protocol.Engines[1].BatchChunk != "32" || recs[0].Run.Protocol.Engines[2].SmallBatch != "0" ||
		recs[0].Run.Protocol.Engines[3].DealRun != "4" {
		t.Errorf("knob arms not recorded: %v %+v", err, recs)
	}
	for _, arm := range []string{"mat", "c32", "r4"} {
		code, _, errOut = runCLI("promote", "--bundle", arm, "--store", store2, "--prefs", "../../promoted/preferences.json", "-n")
		if code == 0 || !strings.Contains(errOut, "not a bundle of kernels") {
			t.Errorf("promote --bundle of knob arm %s: exit %d, %s", arm, code, errOut)
		}
	}
	code, _, errOut = runCLI("ab", "--preset", "tiny", "--arm-batch-chunk", "c=24")
	if code == 0 || !strings.Contains(errOut, "multiple of 16") {
		t.Errorf("a batch chunk of 24 rows: exit %d, %s", code, errOut)
	}
	code, _, errOut = runCLI("ab", "--preset", "tiny", "--arm-deal-run", "r=0")
	if code == 0 || !strings.Contains(errOut, "positive count of chunks") {
		t.Errorf("a deal run of 0: exit %d, %s", code, errOut)
	}
	code, _, errOut = runCLI("ab", "--preset", "tiny", "--arm", "bad=matvec/q4_k=nope")
	if code == 0 || !strings.Contains(errOut, "not registered") {
		t.Errorf("an unregistered variant: exit %d, %s", code, errOut)
	}
}
