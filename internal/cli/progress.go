package cli

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// A Progress reports a count towards a total on w: a bar redrawn in place
// on a terminal; elsewhere (a log file, a pipe, CI) a plain line at the
// start, at each tenth of the way and at the end, because carriage-return
// redraws written to a file are hundreds of lines of noise. Its methods may
// be called from several goroutines.
type Progress struct {
	mu      sync.Mutex
	w       io.Writer
	total   int64
	done    int64
	desc    string
	bytes   bool
	bar     *progressbar.ProgressBar // nil when plain
	shown   int64                    // tenths reported so far (plain), -1 before the first line
	started time.Time
}

// NewProgress starts a progress report of total units (bytes when bytes is
// true) described by desc.
func NewProgress(w io.Writer, total int64, desc string, bytes bool) *Progress {
	p := &Progress{w: w, total: total, desc: desc, bytes: bytes, shown: -1, started: time.Now()}
	if IsTerminal(w) {
		opts := []progressbar.Option{
			progressbar.OptionSetWriter(w),
			progressbar.OptionSetDescription(desc),
			progressbar.OptionSetWidth(30),
			progressbar.OptionThrottle(100 * time.Millisecond),
			progressbar.OptionOnCompletion(func() { fmt.Fprintln(w) }),
		}
		if bytes {
			opts = append(opts, progressbar.OptionShowBytes(true), progressbar.OptionSetPredictTime(true))
		} else {
			opts = append(opts, progressbar.OptionShowCount())
		}
		p.bar = progressbar.NewOptions64(total, opts...)
		return p
	}
	p.plain()
	return p
}

// IsTerminal reports whether w is a terminal.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// Set moves the count to done and, when desc is not empty, the description.
func (p *Progress) Set(done int64, desc string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if desc != "" {
		p.desc = desc
		if p.bar != nil {
			p.bar.Describe(desc)
		}
	}
	p.add(done - p.done)
}

// Add advances the count by n.
func (p *Progress) Add(n int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.add(n)
}

func (p *Progress) add(n int64) {
	p.done += n
	if p.bar != nil {
		_ = p.bar.Add64(n)
		return
	}
	p.plain()
}

// Finish completes the report (the bar full, or the last plain line).
func (p *Progress) Finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar != nil {
		_ = p.bar.Finish()
		return
	}
	p.add(p.total - p.done)
}

// plain writes a line when the count has crossed into a new tenth.
func (p *Progress) plain() {
	tenth := int64(10)
	if p.total > 0 {
		tenth = min(10, 10*p.done/p.total)
	}
	if tenth <= p.shown {
		return
	}
	p.shown = tenth
	count := fmt.Sprintf("%d/%d", p.done, p.total)
	if p.bytes {
		count = fmt.Sprintf("%.1f/%.1f MiB", float64(p.done)/(1<<20), float64(p.total)/(1<<20))
	}
	fmt.Fprintf(p.w, "%s: %s (%d%%) %s\n", p.desc, count, 10*tenth, time.Since(p.started).Round(time.Second))
}
