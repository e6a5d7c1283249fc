package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/damascus-llm/damascus/internal/testdata"
	"github.com/damascus-llm/damascus/model/llama/chat"
)

// The second turn reuses the KV cache of the first; its greedy reply must be
// the one a fresh context gives for the whole rendered conversation.
func TestChatReusesCacheExactly(t *testing.T) {
	model := testdata.Stories260KGGUF.Require(t)
	var stdout, stderr bytes.Buffer
	in := strings.NewReader("Once upon a time\nThe dog ran\n")
	if err := runChat([]string{"-m", model, "--chat-format", "chatml", "--temp", "0", "-n", "12", "--ctx-size", "256"}, in, &stdout, &stderr); err != nil {
		t.Fatalf("%v: %s", err, stderr.String())
	}
	replies := strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n")
	if len(replies) < 2 {
		t.Fatalf("want two replies, got %q", stdout.String())
	}
	first, second := replies[0], replies[len(replies)-1]
	tmpl, _ := chat.Detect("", "chatml")
	prompt, _ := tmpl.Render([]chat.Message{{Role: "user", Content: "Once upon a time"}, {Role: "assistant", Content: first}, {Role: "user", Content: "The dog ran"}}, true)
	if fresh, _ := mustRun(t, "generate", "-m", model, "-p", prompt, "--temp", "0", "-n", "12"); fresh != second {
		t.Errorf("second reply with the cache reused %q, from scratch %q", second, fresh)
	}
	if !strings.Contains(stderr.String(), "tokens per second") {
		t.Errorf("no timing summary: %q", stderr.String())
	}
}
