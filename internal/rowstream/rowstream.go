// Package rowstream writes a large tensor row by row, producing rows on
// several goroutines while earlier ones are being written.
package rowstream

import (
	"fmt"
	"io"
	"sync"
)

// chunkBytes is roughly how much of a tensor one worker produces at a time.
const chunkBytes = 1 << 20

// Write writes nrows rows of rowBytes bytes each to w, in order. fill
// produces row r into dst (len rowBytes); rows are filled by workers
// goroutines in parallel while the previous batch is being written, and
// progress (if not nil) is told how many bytes were written each time.
// fill must depend only on r, so the output does not depend on workers.
func Write(w io.Writer, nrows, rowBytes, workers int, fill func(dst []byte, r int) error, progress func(n int64)) error {
	workers = max(workers, 1)
	perChunk := max(1, chunkBytes/max(rowBytes, 1))
	batchRows := perChunk * workers
	bufs := [2][]byte{make([]byte, min(batchRows, nrows)*rowBytes), make([]byte, min(batchRows, nrows)*rowBytes)}

	type batch struct{ data []byte }
	todo := make(chan batch, 1)
	written := make(chan error, 1)
	go func() {
		var err error
		for b := range todo {
			if err == nil {
				_, err = w.Write(b.data)
				if err == nil && progress != nil {
					progress(int64(len(b.data)))
				}
			}
			written <- err
		}
		close(written)
	}()

	pending := 0 // batches handed to the writer and not yet acknowledged
	var fillErr error
	for k, row0 := 0, 0; row0 < nrows && fillErr == nil; k, row0 = k+1, row0+batchRows {
		n := min(batchRows, nrows-row0)
		buf := bufs[k%2][:n*rowBytes]
		if pending == 2 { // buf is still queued for writing: wait for it
			if err := <-written; err != nil {
				fillErr = err
				break
			}
			pending--
		}
		var wg sync.WaitGroup
		errs := make([]error, workers)
		for wk := 0; wk < workers; wk++ {
			lo, hi := wk*perChunk, min((wk+1)*perChunk, n)
			if lo >= hi {
				break
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				for r := lo; r < hi; r++ {
					if err := fill(buf[r*rowBytes:(r+1)*rowBytes], row0+r); err != nil {
						errs[wk] = fmt.Errorf("row %d: %w", row0+r, err)
						return
					}
				}
			}()
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil && fillErr == nil {
				fillErr = err
			}
		}
		if fillErr != nil {
			break
		}
		todo <- batch{buf}
		pending++
	}
	close(todo)
	var writeErr error
	for err := range written {
		if err != nil && writeErr == nil {
			writeErr = err
		}
	}
	if fillErr != nil {
		return fillErr
	}
	return writeErr
}
