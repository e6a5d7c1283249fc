package e2e

import (
	"strings"
	"testing"

	"github.com/damascus-llm/damascus/harness/enginebench"
)

func TestPlacementNote(t *testing.T) {
	for _, c := range []struct {
		res  enginebench.Result
		want string
	}{
		{enginebench.Result{Config: enginebench.Config{Weights: "huge"}, Placement: "huge", FileReleased: true}, "huge pages (--weights huge), file map released"},
		{enginebench.Result{Config: enginebench.Config{Weights: "mmap"}, Placement: "mmap"}, "mmap'd from the file (--weights mmap)"},
		{enginebench.Result{Config: enginebench.Config{Weights: "huge"}, Placement: "mmap", PlacementNotice: "THP never"}, "--weights huge fell back (THP never)"},
	} {
		if got := placementNote(c.res); !strings.Contains(got, c.want) {
			t.Errorf("placementNote(%+v) = %q, want it to contain %q", c.res, got, c.want)
		}
	}
}

func TestParseLlamaConfigs(t *testing.T) {
	cs, err := parseLlamaConfigs("", "icelake", true)
	if err != nil || len(cs) != 1 || cs[0].name != "llama.cpp" || cs[0].variant != "icelake" || !cs[0].huge {
		t.Errorf("default: %+v, %v", cs, err)
	}
	cs, err = parseLlamaConfigs("default, sapphirerapids+huge", "", false)
	if err != nil || len(cs) != 2 || cs[0].variant != "" || cs[1].name != "llama.cpp/sapphirerapids+huge" || cs[1].variant != "sapphirerapids" || !cs[1].huge {
		t.Errorf("list: %+v, %v", cs, err)
	}
	for _, bad := range []string{"a,a", "x/y"} {
		if _, err := parseLlamaConfigs(bad, "", false); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
