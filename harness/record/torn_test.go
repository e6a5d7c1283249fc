//go:build unix

package record

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A run killed mid-write leaves a torn last line (issue 22): the next
// Append starts on a new line, so its records are not glued to the
// fragment and lost, and the lenient reader skips the fragment, naming it.
func TestAppendAfterTornTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.jsonl")
	recs := sampleRecords()
	if err := Append(path, recs[:2]...); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"id":"torn","run_id":"x","kind":"ker`) // killed here
	f.Close()
	if err := Append(path, recs[2:]...); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	if !bytes.HasSuffix(data, []byte("\n")) || bytes.Count(data, []byte("\n")) != len(recs)+1 {
		t.Fatalf("store has %d lines, want %d records and the fragment on its own line", bytes.Count(data, []byte("\n")), len(recs))
	}
	var warn bytes.Buffer
	got, err := LoadSkippingDamaged(path, &warn)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(recs) || got[2].ID != recs[2].ID {
		t.Fatalf("read back %d records, want all %d", len(got), len(recs))
	}
	if w := warn.String(); strings.Count(w, "\n") != 1 || !strings.Contains(w, path+":3: damaged record skipped") {
		t.Errorf("warnings %q, want one naming %s:3", w, path)
	}
	// The strict reader still refuses, naming the line.
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), path+":3:") {
		t.Errorf("Load: %v", err)
	}
}

func TestLoadSkippingDamaged(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ledger.jsonl")
	recs := sampleRecords()
	if err := Append(path, recs[:1]...); err != nil {
		t.Fatal(err)
	}
	f, _ := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString("not json\n\n")
	f.Close()
	if err := Append(path, recs[1:2]...); err != nil {
		t.Fatal(err)
	}
	f, _ = os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString(`{"id":"half`)
	f.Close()
	var warn bytes.Buffer
	got, err := LoadSkippingDamaged(path, &warn)
	if err != nil || len(got) != 2 {
		t.Fatalf("%d records, %v; want 2", len(got), err)
	}
	w := warn.String()
	for _, want := range []string{path + ":2: damaged record skipped", path + ":5: damaged record skipped: incomplete last line"} {
		if !strings.Contains(w, want) {
			t.Errorf("warnings lack %q:\n%s", want, w)
		}
	}
	if _, err := LoadSkippingDamaged(filepath.Join(dir, "none.jsonl"), &warn); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing store: %v, want ErrNotExist", err)
	}
}

func TestAppendRefusesFIFO(t *testing.T) {
	p := filepath.Join(t.TempDir(), "ff")
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Skip(err)
	}
	if err := Append(p, sampleRecords()[:1]...); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("Append to a FIFO: %v", err)
	}
}
