package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// MeasuredCommand is the ledger subcommand that wraps a bench so its peak
// RSS is measured from inside the process: the kernel's rusage of a child
// also counts the parent's memory at fork time (exec inherits the
// high-water mark), so ru_maxrss of a spawned bench would report the
// ledger's own size. VmHWM after exec is the new program's alone.
const MeasuredCommand = "measured"

// MeasuredOutput is what MeasuredCommand prints: the wrapped command's JSON
// output and the process's peak RSS.
type MeasuredOutput struct {
	PeakRSSBytes int64           `json:"peak_rss_bytes"` // VmHWM; -1 when unreadable
	Output       json.RawMessage `json:"output"`
}

// PeakRSS reads this process's peak resident set size (VmHWM) from
// /proc/self/status; -1 when unreadable.
func PeakRSS() int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1
	}
	return vmHWM(data)
}

// spawned is a finished child process.
type spawned struct {
	stdout []byte
	wall   time.Duration
	maxRSS int64 // bytes, from inside the child (measured); -1 when unknown
}

// spawn runs exe with args (and extra environment) to completion.
func spawn(ctx context.Context, exe string, args, env []string) (*spawned, error) {
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	sp := &spawned{stdout: stdout.Bytes(), wall: time.Since(start), maxRSS: -1}
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if len(msg) > 2000 {
			msg = "..." + msg[len(msg)-2000:]
		}
		return sp, fmt.Errorf("%s %s: %w: %s", filepath.Base(exe), strings.Join(args[:min(2, len(args))], " "), err, msg)
	}
	if len(args) > 0 && args[0] == MeasuredCommand {
		var m MeasuredOutput
		if err := json.Unmarshal(sp.stdout, &m); err != nil {
			return sp, fmt.Errorf("reading %s output: %w", MeasuredCommand, err)
		}
		sp.stdout, sp.maxRSS = m.Output, m.PeakRSSBytes
	}
	return sp, nil
}
