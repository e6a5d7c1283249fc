package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/damascus-llm/damascus/harness/record"
)

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
