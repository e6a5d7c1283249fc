package record

import (
	"testing"

	"github.com/damascus-llm/damascus/protocol"
)

func TestLatestE2ERunsKeepsOnePerModelAndTests(t *testing.T) {
	run := func(id, sha string) Record {
		return Record{RunID: id, Kind: KindRun, Run: &Run{Protocol: protocol.Record{Model: &protocol.Model{SHA256: sha}}}}
	}
	e2e := func(id, test string) Record {
		return Record{RunID: id, Kind: KindE2E, E2E: &E2E{Engine: "damascus", Test: test}}
	}
	recs := []Record{
		run("a", "1b"), e2e("a", "pp1024"), e2e("a", "tg256"), // full 1B run
		run("b", "3b"), e2e("b", "tg256"), // 3B decode
		run("c", "1b"), e2e("c", "tg256"), // 1B decode only: does not hide a
		run("d", "3b"), e2e("d", "tg256"), // newer 3B decode: replaces b
	}
	var got []string
	for _, r := range LatestE2ERuns(recs) {
		got = append(got, r[0].RunID)
	}
	want := []string{"d", "c", "a"}
	if len(got) != len(want) {
		t.Fatalf("runs %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("runs %v, want %v", got, want)
		}
	}
}
