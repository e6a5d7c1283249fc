package rowstream

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// Rows come out in order and complete whatever the number of workers, with
// progress adding up to the bytes written.
func TestWriteOrder(t *testing.T) {
	const rows, rowBytes = 5000, 700 // several batches of several chunks
	fill := func(dst []byte, r int) error {
		for i := range dst {
			dst[i] = byte(r*31 + i)
		}
		return nil
	}
	var want bytes.Buffer
	if err := Write(&want, rows, rowBytes, 1, fill, nil); err != nil {
		t.Fatal(err)
	}
	if want.Len() != rows*rowBytes {
		t.Fatalf("wrote %d bytes, want %d", want.Len(), rows*rowBytes)
	}
	for r := 0; r < rows; r += 997 {
		if got := want.Bytes()[r*rowBytes+3]; got != byte(r*31+3) {
			t.Fatalf("row %d byte 3 = %d", r, got)
		}
	}
	for _, workers := range []int{2, 3, 8} {
		var got bytes.Buffer
		var progress int64
		if err := Write(&got, rows, rowBytes, workers, fill, func(n int64) { progress += n }); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), want.Bytes()) || progress != int64(got.Len()) {
			t.Errorf("%d workers: output differs or progress %d ≠ %d", workers, progress, got.Len())
		}
	}
}

type failingWriter struct{ n int }

func (w *failingWriter) Write(b []byte) (int, error) {
	if w.n++; w.n > 2 {
		return 0, errors.New("disk full")
	}
	return len(b), nil
}

func TestWriteErrors(t *testing.T) {
	boom := errors.New("boom")
	err := Write(&bytes.Buffer{}, 100, 10, 2, func(dst []byte, r int) error {
		if r == 57 {
			return boom
		}
		return nil
	}, nil)
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "row 57") {
		t.Errorf("fill error: %v", err)
	}
	err = Write(&failingWriter{}, 100000, 1000, 2, func([]byte, int) error { return nil }, nil)
	if err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("write error: %v", err)
	}
}
