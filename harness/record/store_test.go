package record

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// spanningMonths is sampleRecords timed in November but for the last three,
// in December, so that one batch spans two month files.
func spanningMonths() []Record {
	recs := sampleRecords()
	for i := range recs {
		recs[i].Time = time.Date(2026, 11, 29, 16, 0, i, 0, time.UTC)
		if i >= len(recs)-3 {
			recs[i].Time = time.Date(2026, 12, 1, 0, 0, i, 0, time.UTC)
		}
	}
	// December in local time, November in UTC: the month is the UTC one.
	recs[1].Time = time.Date(2026, 12, 1, 0, 30, 0, 0, time.FixedZone("UTC+1", 3600))
	return recs
}

// idsOf lists the IDs of recs in order: all of them (month 0), or those of
// one month (UTC).
func idsOf(recs []Record, month time.Month) []string {
	var ids []string
	for _, r := range recs {
		if month == 0 || r.Time.UTC().Month() == month {
			ids = append(ids, r.ID)
		}
	}
	return ids
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.SplitAfter(string(data), "\n")[:strings.Count(string(data), "\n")]
}

// A folder store routes each record to the file of its UTC month and reads
// the month files back in name order, records in the order written.
func TestFolderStoreRoutesByMonth(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "results", "ledger")
	if !IsFolder(dir) {
		t.Fatalf("IsFolder(%s) = false for a new name without .jsonl", dir)
	}
	recs := spanningMonths()
	if err := Append(dir, recs...); err != nil {
		t.Fatal(err)
	}
	files, err := Files(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(dir, "2026-11.jsonl"), filepath.Join(dir, "2026-12.jsonl")}
	if strings.Join(files, " ") != strings.Join(want, " ") {
		t.Fatalf("files %v, want %v", files, want)
	}
	nov, dec := readLines(t, want[0]), readLines(t, want[1])
	if len(nov) != len(recs)-3 || len(dec) != 3 {
		t.Fatalf("%d November lines and %d December, want %d and 3", len(nov), len(dec), len(recs)-3)
	}
	if !strings.Contains(nov[1], `"id":"`+recs[1].ID+`"`) || !strings.Contains(dec[0], `"id":"`+recs[len(recs)-3].ID+`"`) {
		t.Errorf("records out of order:\n%s\n%s", nov[1], dec[0])
	}
	if Home(dir) != filepath.Dir(dir) || Home(dir+"/") != filepath.Dir(dir) {
		t.Errorf("Home(%s) = %s, want %s", dir, Home(dir), filepath.Dir(dir))
	}

	got, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	ids := idsOf(got, 0)
	wantIDs := append(idsOf(recs, time.November), idsOf(recs, time.December)...) // November's in order, then December's
	if strings.Join(ids, " ") != strings.Join(wantIDs, " ") {
		t.Errorf("read back\n%v\nwant\n%v", ids, wantIDs)
	}
}

// The folder reader takes every *.jsonl file in name order and nothing else;
// a damaged line is named by its month file.
func TestFolderStoreReadsJSONLInNameOrder(t *testing.T) {
	dir := t.TempDir()
	recs := sampleRecords()
	// Written out of name order, to files the writer would not choose.
	for _, f := range []struct {
		name string
		recs []Record
	}{{"b.jsonl", recs[2:4]}, {"a.jsonl", recs[:2]}, {"c.jsonl", recs[4:]}} {
		if err := Append(filepath.Join(dir, f.name), f.recs...); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("not a store\n"), 0o644)
	os.Mkdir(filepath.Join(dir, "old.jsonl"), 0o755)
	got, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(recs) {
		t.Fatalf("read %d records, want %d", len(got), len(recs))
	}
	for i := range recs {
		if got[i].ID != recs[i].ID {
			t.Fatalf("record %d is %s, want %s", i, got[i].ID, recs[i].ID)
		}
	}
	os.WriteFile(filepath.Join(dir, "b.jsonl"), []byte("{torn\n"), 0o644)
	var warn bytes.Buffer
	if got, err := LoadSkippingDamaged(dir, &warn); err != nil || len(got) != len(recs)-2 ||
		!strings.Contains(warn.String(), filepath.Join(dir, "b.jsonl")+":1: damaged record skipped") {
		t.Errorf("%d records, %v, warnings %q", len(got), err, warn.String())
	}
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "b.jsonl:1:") {
		t.Errorf("Load of a damaged folder: %v", err)
	}

	missing := filepath.Join(dir, "none")
	if recs, err := Load(missing); err != nil || recs != nil {
		t.Errorf("missing folder: %v, %v", recs, err)
	}
	if _, err := LoadSkippingDamaged(missing, &warn); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing folder: %v, want ErrNotExist", err)
	}
	empty := filepath.Join(dir, "empty")
	os.Mkdir(empty, 0o755)
	if recs, err := LoadSkippingDamaged(empty, &warn); err != nil || len(recs) != 0 {
		t.Errorf("empty folder: %v, %v", recs, err)
	}
}

// Appending to a folder never rewrites what is there: an existing month
// file keeps its bytes as the prefix, a torn last line is closed first.
func TestFolderStoreAppendsOnly(t *testing.T) {
	dir := t.TempDir()
	recs := spanningMonths()
	nov := filepath.Join(dir, "2026-11.jsonl")
	old := "{\"id\":\"kept\"}\n{\"id\":\"torn\",\"ki"
	if err := os.WriteFile(nov, []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Append(dir, recs...); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(nov)
	if !bytes.HasPrefix(data, []byte(old+"\n")) {
		t.Fatalf("existing month file rewritten:\n%.200s", data)
	}
	if n := bytes.Count(data, []byte("\n")); n != 2+len(recs)-3 {
		t.Errorf("%d lines in %s, want the 2 old ones and %d new", n, nov, len(recs)-3)
	}
	if err := Append(dir, recs[len(recs)-1]); err != nil {
		t.Fatal(err)
	}
	if dec := readLines(t, filepath.Join(dir, "2026-12.jsonl")); len(dec) != 4 {
		t.Errorf("December has %d lines after a second append, want 4", len(dec))
	}
}

// A store named *.jsonl, or any existing file, is one file as before: no
// folder, no month routing.
func TestSingleFileStoreUnchanged(t *testing.T) {
	dir := t.TempDir()
	recs := spanningMonths()
	for _, path := range []string{filepath.Join(dir, "out", "ledger.jsonl"), filepath.Join(dir, "plain")} {
		if strings.HasSuffix(path, "plain") {
			os.WriteFile(path, nil, 0o644) // an existing file without the ending
		}
		if IsFolder(path) {
			t.Fatalf("IsFolder(%s) = true", path)
		}
		if err := Append(path, recs...); err != nil {
			t.Fatal(err)
		}
		if lines := readLines(t, path); len(lines) != len(recs) {
			t.Errorf("%s: %d lines, want %d", path, len(lines), len(recs))
		}
		got, err := Load(path)
		if err != nil || len(got) != len(recs) || got[len(got)-1].ID != recs[len(recs)-1].ID {
			t.Errorf("%s: read back %d records (%v)", path, len(got), err)
		}
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "*", "20*.jsonl")); len(m) != 0 {
		t.Errorf("month files made for a single-file store: %v", m)
	}
}

// Import copies a file's lines byte for byte into the month files, skips
// its damaged lines, and leaves out records the store already holds.
func TestImportRoutesLinesUnchanged(t *testing.T) {
	tmp := t.TempDir()
	src := filepath.Join(tmp, "device", "ledger.jsonl")
	recs := spanningMonths()
	if err := Append(src, recs...); err != nil {
		t.Fatal(err)
	}
	f, _ := os.OpenFile(src, os.O_WRONLY|os.O_APPEND, 0)
	// A field this build does not know survives, as it would not if the
	// import decoded and encoded the record again.
	extra := `{"id":"x/1","run_id":"x","kind":"e2e","time":"2026-12-02T10:00:00Z","future_field":{"a":1}}`
	f.WriteString(extra + "\n" + `{"id":"torn`)
	f.Close()
	srcLines := readLines(t, src)

	store := filepath.Join(tmp, "results", "ledger")
	var warn bytes.Buffer
	added, present, err := Import(store, src, &warn)
	if err != nil || added != len(recs)+1 || present != 0 {
		t.Fatalf("Import: %d added, %d present, %v", added, present, err)
	}
	if !strings.Contains(warn.String(), src+":") || strings.Count(warn.String(), "\n") != 1 {
		t.Errorf("warnings %q, want one for the torn line", warn.String())
	}
	nov, dec := readLines(t, MonthFile(store, recs[0].Time)), readLines(t, filepath.Join(store, "2026-12.jsonl"))
	if got, want := strings.Join(append(nov, dec...), ""), strings.Join(srcLines, ""); got != want {
		// Every month here follows the one before, so the month files
		// joined are the source without its torn tail.
		t.Errorf("month files differ from the source:\n%s\nwant\n%s", got, want)
	}
	if dec[len(dec)-1] != extra+"\n" {
		t.Errorf("last December line %q, want %q", dec[len(dec)-1], extra)
	}

	before, _ := Load(store)
	added, present, err = Import(store, src, &warn)
	if err != nil || added != 0 || present != len(recs)+1 {
		t.Errorf("second Import: %d added, %d present, %v; want 0 and %d", added, present, err, len(recs)+1)
	}
	if after, _ := Load(store); len(after) != len(before) {
		t.Errorf("second Import changed the store: %d records, was %d", len(after), len(before))
	}
	if _, _, err := Import(store, filepath.Join(tmp, "none.jsonl"), &warn); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Import of a missing file: %v", err)
	}
}

// A sealed month (YYYY-MM.jsonl.gz) is read as it was written, before the
// records that reached that month's plain file after it was sealed; a new
// record for the month goes to the plain file, never into the .gz.
func TestFolderStoreReadsSealedMonths(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ledger")
	recs := spanningMonths()
	if err := Append(dir, recs...); err != nil {
		t.Fatal(err)
	}
	nov := filepath.Join(dir, "2026-11.jsonl")
	plain, err := os.ReadFile(nov)
	if err != nil {
		t.Fatal(err)
	}
	var z bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&z, gzip.BestCompression)
	zw.Write(plain)
	zw.Close()
	if err := os.WriteFile(nov+".gz", z.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Remove(nov)
	late := recs[0]
	late.ID += "-late"
	if err := Append(dir, late); err != nil {
		t.Fatal(err)
	}
	files, err := Files(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{nov + ".gz", nov, filepath.Join(dir, "2026-12.jsonl")}
	if strings.Join(files, " ") != strings.Join(want, " ") {
		t.Fatalf("files %v, want %v", files, want)
	}
	if gz, _ := os.ReadFile(nov + ".gz"); !bytes.Equal(gz, z.Bytes()) {
		t.Fatal("appending changed the sealed file")
	}
	got, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	ids := idsOf(got, 0)
	wantIDs := append(append(idsOf(recs, time.November), late.ID), idsOf(recs, time.December)...)
	if strings.Join(ids, " ") != strings.Join(wantIDs, " ") {
		t.Fatalf("read %v, want %v", ids, wantIDs)
	}
	os.WriteFile(nov+".gz", []byte("not gzip"), 0o644)
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "2026-11.jsonl.gz") {
		t.Errorf("a damaged sealed month: %v, want an error naming it", err)
	}
}
