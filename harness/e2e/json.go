package e2e

import (
	"encoding/json"

	"github.com/damascus-llm/damascus/harness/record"
	"github.com/damascus-llm/damascus/protocol"
)

// JSON renders a comparison's records: per engine and test the samples,
// median and p95, and the Damascus/llama.cpp ratios of the medians.
func JSON(b *record.Batch) ([]byte, error) {
	type testOut struct {
		Unit    string    `json:"unit"`
		Samples []float64 `json:"samples"`
		Median  float64   `json:"median"`
		P95     float64   `json:"p95"`
		Stddev  float64   `json:"stddev"`
		Notes   string    `json:"notes,omitempty"`
	}
	out := struct {
		RunID    string                        `json:"run_id"`
		Protocol protocol.Record               `json:"protocol"`
		Engines  map[string]map[string]testOut `json:"engines"`
		Ratios   map[string]float64            `json:"ratios"` // damascus median / llama.cpp median
		// Paired damascus/llama.cpp ratios, sample by sample, sorted
		// (rounds interleave the engines, so sample i of each comes from
		// the same round: round i, or with the protocol's reps_per_round
		// N > 1, round i / N and repetition i % N of it).
		PairedRatios map[string][]float64 `json:"paired_ratios,omitempty"`
	}{RunID: b.RunID, Engines: map[string]map[string]testOut{}, Ratios: map[string]float64{}, PairedRatios: map[string][]float64{}}
	recs := map[string]map[string]*record.E2E{} // test → engine → record
	for _, r := range b.Recs {
		if r.Run != nil {
			out.Protocol = r.Run.Protocol
		}
		if e := r.E2E; e != nil {
			if recs[e.Test] == nil {
				recs[e.Test] = map[string]*record.E2E{}
			}
			recs[e.Test][e.Engine] = e
			if out.Engines[e.Engine] == nil {
				out.Engines[e.Engine] = map[string]testOut{}
			}
			out.Engines[e.Engine][e.Test] = testOut{Unit: e.Unit, Samples: e.Samples, Median: e.Summary.Median,
				P95: e.Summary.P95, Stddev: e.Summary.Stddev, Notes: e.Notes}
		}
	}
	for test, d := range out.Engines["damascus"] {
		if l, ok := out.Engines["llama.cpp"][test]; ok && l.Median != 0 {
			out.Ratios[test] = d.Median / l.Median
		}
		if r := record.PairedRatios(recs[test]["damascus"], recs[test]["llama.cpp"]); r != nil {
			out.PairedRatios[test] = r
		}
	}
	data, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(data, '\n'), nil
}
