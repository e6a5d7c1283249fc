package serve

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// openaiDir holds the pinned openai npm package (make baseline) and the
// script that drives a server with it.
const openaiDir = "../../baseline/openai"

// The official OpenAI client library for JavaScript against a server of 4
// slots on 127.0.0.1 (baseline/openai/integration.mjs): models, chat and
// completions streamed and not, 16 concurrent requests answering what
// each did alone, one cancelled mid-stream, log-probabilities and the
// usage chunk, a JSON schema, a tool call and its result, an over-long
// prompt, a wrong-typed field, n = 2 and a malformed body (400s). Skips without node or the
// package.
func TestOpenAIClient(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: the openai client test needs Node.js")
	}
	if _, err := os.Stat(filepath.Join(openaiDir, "node_modules", "openai", "package.json")); err != nil {
		t.Skipf("the openai npm package is not installed in %s: run make baseline", openaiDir)
	}
	ts, s := testServerSized(t, Config{MaxQueue: 16}, 4, 1024)
	if !strings.HasPrefix(ts.URL, "http://127.0.0.1:") {
		t.Fatalf("the test server is at %s, not on 127.0.0.1", ts.URL)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "integration.mjs")
	cmd.Dir = openaiDir
	cmd.Env = append(os.Environ(), "DAMASCUS_URL="+ts.URL, "DAMASCUS_MODEL=tiny")
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	if err != nil {
		t.Fatalf("the openai client script: %v", err)
	}
	waitIdle(t, s) // the cancelled stream's slot is back, nothing lingers
}
