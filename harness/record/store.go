package record

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// A store is one JSONL file or a folder of them. The repository's store
// (DefaultStore) is a folder with one file per UTC month of the records'
// Time, 2026-11.jsonl, 2026-12.jsonl, ..., so that no data file grows
// without bound; device scripts write a single file of their own (--store
// $OUT/ledger.jsonl), whose lines `ledger import` then routes into the
// month files. A month that is over may be sealed, compressed in place
// (gzip -9n YYYY-MM.jsonl, leaving YYYY-MM.jsonl.gz), so that the tracked
// data stays small; a sealed month is read as it was, and a record that
// arrives for it later goes to a new YYYY-MM.jsonl beside it.

// IsFolder reports whether the store at path is a folder of month files: an
// existing directory, or, where nothing is at path yet, a name that does not
// end in .jsonl. Anything else at path (a file, a FIFO) is a single-file
// store, written and read as before the folder existed.
func IsFolder(path string) bool {
	if st, err := os.Stat(path); err == nil {
		return st.IsDir()
	}
	return filepath.Ext(path) != ".jsonl"
}

// Home is the directory that holds a store's companions (bench/, charts/,
// baseline.md): results/ for both results/ledger and results/ledger.jsonl.
func Home(store string) string { return filepath.Dir(filepath.Clean(store)) }

// MonthFile is the file of the folder store dir that holds the records of
// time t: the one of its UTC month.
func MonthFile(dir string, t time.Time) string {
	return filepath.Join(dir, t.UTC().Format("2006-01")+".jsonl")
}

// Files lists the files of the store at path in the order they are read:
// path itself for a single file, the *.jsonl files of a folder in name
// order (for month files, calendar order). A missing store is an error
// wrapping fs.ErrNotExist.
func Files(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("results: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("results: %w", err)
	}
	if !st.IsDir() {
		return []string{path}, nil
	}
	entries, err := f.ReadDir(-1)
	if err != nil {
		return nil, fmt.Errorf("results: %w", err)
	}
	var files []string
	for _, e := range entries {
		if n := e.Name(); !e.IsDir() && (strings.HasSuffix(n, ".jsonl") || strings.HasSuffix(n, ".jsonl.gz")) {
			files = append(files, filepath.Join(path, n))
		}
	}
	// In name order, a month's sealed file before the one appended after it.
	slices.SortFunc(files, func(a, b string) int {
		if c := strings.Compare(strings.TrimSuffix(a, ".gz"), strings.TrimSuffix(b, ".gz")); c != 0 {
			return c
		}
		if strings.HasSuffix(a, ".gz") {
			return -1
		}
		return 1
	})
	return files, nil
}

// Append writes records to the store at path, creating it (and its
// directory) if needed: to the file itself, or, for a folder, each record
// to its month's file. Each file gets its records in one write, then is
// synced: a crash leaves them all, none, or a torn last line (a batch that
// spans two months is two writes). A torn line left by an earlier crash is
// closed with a newline first, so the new records start on a line of their
// own (readers skip the fragment; see LoadSkippingDamaged). Existing files
// are only ever appended to.
func Append(path string, recs ...Record) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	lines := make([][]byte, len(recs))
	times := make([]time.Time, len(recs))
	for i, r := range recs {
		start := buf.Len()
		if err := enc.Encode(r); err != nil {
			return fmt.Errorf("results: record %s: %w", r.ID, err)
		}
		lines[i], times[i] = buf.Bytes()[start:], r.Time
	}
	return appendLines(path, times, lines)
}

// appendLines appends lines (each with its newline) to the store at path;
// in a folder, line i goes to the month file of times[i]. Lines keep their
// order within each file.
func appendLines(path string, times []time.Time, lines [][]byte) error {
	if !IsFolder(path) {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return fmt.Errorf("results: %w", err)
		}
		return appendFile(path, bytes.Join(lines, nil))
	}
	if err := os.MkdirAll(path, 0o755); err != nil {
		return fmt.Errorf("results: %w", err)
	}
	var order []string // files in the order of their first line
	data := map[string][]byte{}
	for i, l := range lines {
		f := MonthFile(path, times[i])
		if _, ok := data[f]; !ok {
			order = append(order, f)
		}
		data[f] = append(data[f], l...)
	}
	for _, f := range order {
		if err := appendFile(f, data[f]); err != nil {
			return err
		}
	}
	return nil
}

// appendFile appends data to the regular file at path (created if absent,
// never truncated) in one write and syncs it, first closing a torn last
// line with a newline.
func appendFile(path string, data []byte) error {
	if len(data) == 0 {
		return nil
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("results: %w", err)
	}
	st, err := f.Stat()
	if err == nil && !st.Mode().IsRegular() {
		err = fmt.Errorf("%s is not a regular file", path)
	}
	if err == nil && st.Size() > 0 {
		last := make([]byte, 1)
		if _, err = f.ReadAt(last, st.Size()-1); err == nil && last[0] != '\n' {
			data = append([]byte{'\n'}, data...)
		}
	}
	if err == nil {
		_, err = f.Write(data)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("results: %w", err)
	}
	return nil
}

// Import appends the records of the JSONL file src to the store at path,
// each line byte for byte as it stands in src (routed to its month's file
// when the store is a folder). Damaged lines of src, and of the store, are
// skipped and reported to warn. Records whose id the store already holds
// are left out, so importing a file twice adds its records once. It
// returns how many records it added and how many were already there.
func Import(path, src string, warn io.Writer) (added, present int, err error) {
	have, err := LoadSkippingDamaged(path, warn)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return 0, 0, err
	}
	ids := make(map[string]bool, len(have))
	for _, r := range have {
		ids[r.ID] = true
	}
	f, err := os.Open(src)
	if err != nil {
		return 0, 0, fmt.Errorf("results: %w", err)
	}
	defer f.Close()
	var times []time.Time
	var lines [][]byte
	err = scan(f, src, warnDamaged(warn), func(r Record, line []byte) {
		if ids[r.ID] {
			present++
			return
		}
		times, lines = append(times, r.Time), append(lines, append(line, '\n'))
	})
	if err != nil {
		return 0, 0, err
	}
	if err := appendLines(path, times, lines); err != nil {
		return 0, 0, err
	}
	return len(lines), present, nil
}

// Load reads every record of the store at path. A missing store is empty;
// a damaged line is an error (see LoadSkippingDamaged).
func Load(path string) ([]Record, error) {
	recs, err := load(path, func(d Damaged) error { return d })
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return recs, err
}

// Read decodes JSONL records; name is used in errors. A damaged line is an
// error naming name:line.
func Read(r io.Reader, name string) ([]Record, error) {
	return read(r, name, func(d Damaged) error { return d })
}

// A Damaged line of a store: a record torn by a run killed mid-write, or
// edited by hand.
type Damaged struct {
	File string
	Line int
	Err  error
}

func (d Damaged) Error() string { return fmt.Sprintf("results: %s:%d: %v", d.File, d.Line, d.Err) }

// LoadSkippingDamaged reads the records of the store at path that a command
// needs to exist: a missing store is an error (wrapping fs.ErrNotExist), and
// each damaged line is skipped and reported to warn (naming its file and
// line), so that one torn record does not make the whole store unreadable.
func LoadSkippingDamaged(path string, warn io.Writer) ([]Record, error) {
	return load(path, warnDamaged(warn))
}

// warnDamaged reports each damaged line to warn and reads on.
func warnDamaged(warn io.Writer) func(Damaged) error {
	return func(d Damaged) error {
		fmt.Fprintf(warn, "warning: %s:%d: damaged record skipped: %v\n", d.File, d.Line, d.Err)
		return nil
	}
}

// load reads the files of the store at path in order, handing each damaged
// line to damaged.
func load(path string, damaged func(Damaged) error) ([]Record, error) {
	files, err := Files(path)
	if err != nil {
		return nil, err
	}
	var all []Record
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return nil, fmt.Errorf("results: %w", err)
		}
		var r io.Reader = f
		if strings.HasSuffix(name, ".gz") {
			zr, err := gzip.NewReader(f)
			if err != nil {
				f.Close()
				return nil, fmt.Errorf("results: %s: %w", name, err)
			}
			r = zr
		}
		recs, err := read(r, name, damaged)
		f.Close()
		if err != nil {
			return nil, err
		}
		all = append(all, recs...)
	}
	return all, nil
}

// maxLine bounds one record; a longer line is damaged.
const maxLine = 64 << 20

// read decodes JSONL records, handing each damaged line to damaged; an
// error from it ends the read.
func read(r io.Reader, name string, damaged func(Damaged) error) ([]Record, error) {
	var recs []Record
	err := scan(r, name, damaged, func(rec Record, _ []byte) { recs = append(recs, rec) })
	if err != nil {
		return nil, err
	}
	return recs, nil
}

// scan decodes JSONL records, handing each to keep with its line (without
// the newline; keep may retain it) and each damaged line to damaged; an
// error from damaged ends the scan.
func scan(r io.Reader, name string, damaged func(Damaged) error, keep func(Record, []byte)) error {
	br := bufio.NewReaderSize(r, 1<<20)
	for line := 1; ; line++ {
		b, tooLong, err := readLine(br)
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("results: %s: %w", name, err)
		}
		if len(b) > 0 || tooLong {
			var rec Record
			var bad error
			if tooLong {
				bad = fmt.Errorf("line longer than %d bytes", maxLine)
			} else if jerr := json.Unmarshal(b, &rec); jerr != nil {
				bad = jerr
				if errors.Is(err, io.EOF) {
					bad = fmt.Errorf("incomplete last line (a run killed while writing?): %w", jerr)
				}
			}
			if bad != nil {
				if derr := damaged(Damaged{File: name, Line: line, Err: bad}); derr != nil {
					return derr
				}
			} else {
				keep(rec, b)
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
	}
}

// readLine returns the next line without its newline (io.EOF with the last
// one, which may lack it). A line over maxLine is consumed and reported
// tooLong. The line is a fresh slice, not the reader's buffer.
func readLine(br *bufio.Reader) (line []byte, tooLong bool, err error) {
	for {
		chunk, err := br.ReadSlice('\n')
		if !tooLong {
			line = append(line, chunk...)
			if len(line) > maxLine {
				line, tooLong = nil, true
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if len(line) > 0 && line[len(line)-1] == '\n' {
			line = line[:len(line)-1]
		}
		return line, tooLong, err
	}
}
