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

// A device run's single-file store joins a folder store through `ledger
// import`: its lines land unchanged in their month's file, a second import
// adds nothing, and `report` reads the folder and writes beside it.
func TestImportIntoFolderStore(t *testing.T) {
	src, recs := kernelRunRecords(t)
	srcData, _ := os.ReadFile(src)
	home := t.TempDir()
	store := filepath.Join(home, "ledger")
	code, out, errOut := runCLI("import", "--store", store, src)
	if code != 0 || !strings.Contains(out, strconv.Itoa(len(recs))+" records added") {
		t.Fatalf("import: exit %d\n%s\n%s", code, out, errOut)
	}
	month := record.MonthFile(store, recs[0].Time)
	if data, err := os.ReadFile(month); err != nil || string(data) != string(srcData) {
		t.Errorf("%s (%v) is not the imported file byte for byte", month, err)
	}
	code, out, errOut = runCLI("import", "--store", store, src)
	if code != 0 || !strings.Contains(out, "0 records added") || !strings.Contains(out, strconv.Itoa(len(recs))+" already there") {
		t.Errorf("second import: exit %d\n%s\n%s", code, out, errOut)
	}
	if after, _ := record.Load(store); len(after) != len(recs) {
		t.Errorf("store has %d records after two imports, want %d", len(after), len(recs))
	}
	if code, out, errOut := runCLI("report", "--store", store); code != 0 {
		t.Fatalf("report on a folder: exit %d\n%s\n%s", code, out, errOut)
	}
	if doc, err := os.ReadFile(filepath.Join(home, "baseline.md")); err != nil || !strings.Contains(string(doc), "speedy") {
		t.Errorf("baseline.md beside the folder (%v):\n%.300s", err, doc)
	}
	if code, _, _ := runCLI("import", "--store", store); code != 2 {
		t.Errorf("import without a file: exit %d, want 2", code)
	}
	if code, _, errOut := runCLI("import", "--store", store, filepath.Join(home, "none.jsonl")); code != 1 || !strings.Contains(errOut, "no such file") {
		t.Errorf("import of a missing file: exit %d: %s", code, errOut)
	}
}
