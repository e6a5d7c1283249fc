package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/damascus-llm/damascus/harness/record"
)

// A store whose last line was torn by a killed run (issue 22): `ledger run`
// appends its records on a new line, none lost, and `report` and `promote`
// read the store, skipping the fragment with a warning naming file:line.
func TestTornStoreRecovers(t *testing.T) {
	store, before := kernelRunRecords(t)
	f, err := os.OpenFile(store, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"id":"20261201T000000Z-abcdef/1","run_id":"20261201T000000Z-ab`)
	f.Close()
	torn := len(before) + 1 // the fragment's line
	runFast(t, store, "--op", "rmsnorm", "--variant", "naive", "--shapes", "tails", "--runs", "2")
	var warn strings.Builder
	after, err := record.LoadSkippingDamaged(store, &warn)
	if err != nil {
		t.Fatal(err)
	}
	if len(after) <= len(before) || after[len(before)].Kind != record.KindRun {
		t.Fatalf("%d records before, %d after: the run's first record was lost", len(before), len(after))
	}
	wantWarn := store + ":" + strconv.Itoa(torn) + ": damaged record skipped"
	if !strings.Contains(warn.String(), wantWarn) {
		t.Errorf("warning %q lacks %q", warn.String(), wantWarn)
	}
	out2 := t.TempDir()
	if code, _, errOut := runCLI("report", "--store", store, "--out", out2); code != 0 || !strings.Contains(errOut, wantWarn) {
		t.Errorf("report on a torn store: exit %d\n%s", code, errOut)
	}
	prefs := writePrefs(t)
	// The latest kernel run times naive alone: promote reads the store
	// and finds nothing to judge, rather than refusing the store.
	code, out, errOut := runCLI("promote", "--store", store, "--prefs", prefs, "-n")
	if !strings.Contains(errOut, wantWarn) || !strings.Contains(errOut, "nothing to judge") {
		t.Errorf("promote on a torn store: exit %d\n%s\n%s", code, out, errOut)
	}
}

func TestPromoteMissingStore(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nonexistent.jsonl")
	code, _, errOut := runCLI("promote", "--store", missing, "--prefs", writePrefs(t), "-n")
	if code != 1 || !strings.Contains(errOut, "open "+missing+": no such file or directory") {
		t.Errorf("exit %d: %s", code, errOut)
	}
	code, _, errOut = runCLI("report", "--store", missing)
	if code != 1 || !strings.Contains(errOut, missing+" does not exist") {
		t.Errorf("report: exit %d: %s", code, errOut)
	}
}
