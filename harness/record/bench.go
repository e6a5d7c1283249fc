package record

import (
	"fmt"
	"io"
	"strings"

	"golang.org/x/perf/benchfmt"

	"github.com/damascus-llm/damascus/ledger"
)

// BenchName is the benchstat name of a kernel record, the same as `go test
// -bench` gives it: "MatVec/type=Q4_K/variant=avx512/shape=2048x2048", or
// "RMSNorm/variant=naive/shape=n2048" for untyped ops.
func BenchName(op, variant, shape string) string {
	o, ok := ledger.LookupOp(op)
	if !ok {
		return fmt.Sprintf("Kernel/op=%s/variant=%s/shape=%s", strings.ReplaceAll(op, "/", "_"), variant, shape)
	}
	if o.Kind == ledger.KindMatVec || o.Kind == ledger.KindMatMul || o.Kind == ledger.KindQuantize || o.Kind == ledger.KindDequantize {
		return fmt.Sprintf("%s/type=%s/variant=%s/shape=%s", o.Kind, o.Type, variant, shape)
	}
	return fmt.Sprintf("%s/variant=%s/shape=%s", o.Kind, variant, shape)
}

// WriteBench writes kernel and end-to-end records in the Go benchmark
// format, one line per raw sample, so `benchstat old.txt new.txt` compares
// runs. Kernels report sec/op plus GB/s and GFLOP/s; end-to-end tests report
// their own unit (tok/s, sec/op for cold start, B for peak RSS). Unit lines
// tell benchstat that higher throughput is better.
func WriteBench(w io.Writer, recs []Record) error {
	bw := benchfmt.NewWriter(w)
	cfg := benchConfig(recs)
	for _, unit := range []string{"GB/s", "GFLOP/s", "tok/s"} {
		if err := bw.Write(&benchfmt.UnitMetadata{UnitMetadataKey: benchfmt.UnitMetadataKey{Unit: unit, Key: "better"}, OrigUnit: unit, Value: "higher"}); err != nil {
			return err
		}
	}
	for _, r := range recs {
		switch {
		case r.Kernel != nil:
			k := r.Kernel
			for _, ns := range k.NsPerOp {
				res := &benchfmt.Result{Config: cfg, Name: benchfmt.Name(BenchName(k.Op, k.Variant, k.Shape)), Iters: k.Iters,
					Values: []benchfmt.Value{{Value: ns * 1e-9, Unit: "sec/op", OrigValue: ns, OrigUnit: "ns/op"}}}
				if ns > 0 {
					res.Values = append(res.Values,
						benchfmt.Value{Value: k.Bytes / ns, Unit: "GB/s"},
						benchfmt.Value{Value: k.FLOPs / ns, Unit: "GFLOP/s"})
				}
				if err := bw.Write(res); err != nil {
					return err
				}
			}
		case r.E2E != nil:
			e := r.E2E
			unit := e.Unit
			if unit == "s" {
				unit = "sec/op"
			}
			for _, v := range e.Samples {
				res := &benchfmt.Result{Config: cfg, Name: benchfmt.Name(fmt.Sprintf("E2E/engine=%s/test=%s", e.Engine, e.Test)), Iters: 1,
					Values: []benchfmt.Value{{Value: v, Unit: unit}}}
				if err := bw.Write(res); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// benchConfig is the file configuration benchstat prints and groups by.
func benchConfig(recs []Record) []benchfmt.Config {
	var cfg []benchfmt.Config
	add := func(k, v string) {
		if v != "" {
			cfg = append(cfg, benchfmt.Config{Key: k, Value: []byte(v), File: true})
		}
	}
	for _, r := range recs {
		if r.Run != nil {
			m := r.Run.Protocol.Machine
			add("goos", m.OS.GOOS)
			add("goarch", m.OS.GOARCH)
			add("cpu", m.CPU.Model)
			if len(m.GPU.Devices) > 0 {
				add("gpu", m.GPU.Devices[0].Name)
			}
			if len(r.Run.Protocol.Engines) > 0 {
				add("devices", Devices(r.Run)) // a GPU run and a CPU run are not one configuration
			}
			add("commit", m.Repo.Commit)
			add("run", r.RunID)
			break
		}
	}
	return cfg
}
