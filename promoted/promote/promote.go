// Package promote applies the promotion rule (protocol.Rule) to a recorded
// kernel run and returns the decisions and the rewritten preference list.
// It is the last workbench step; the engine never imports it (it reads the
// committed preferences through package promoted).
package promote

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/damascus-llm/damascus/harness/record"
	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/ledger/gate"
	"github.com/damascus-llm/damascus/promoted"
	"github.com/damascus-llm/damascus/protocol"
)

// Request says what to judge and how.
type Request struct {
	Recs  []record.Record // one kernel run: its gate and kernel records
	Prefs promoted.Preferences
	Reg   *ledger.Registry // the variants this binary can dispatch to
	Rule  protocol.Rule
	Ops   []string // ops to consider; empty: every op timed in Recs
	Only  string   // the one challenger to judge; empty: every variant timed
	// CPU names the machine the run was measured on (promoted.CPUKey:
	// vendor/family): the incumbent is the first preference that applies
	// there. With CPUOnly the promoted entries are limited to its vendor,
	// with FamilyOnly to its vendor and family (an entry for the same
	// variant on any CPU stays).
	CPU        string
	CPUOnly    bool
	FamilyOnly bool
}

// EntryCPU is the cpu field a promoted entry gets: the evidence machine's
// vendor and family (FamilyOnly), its vendor (CPUOnly), else "" (any CPU).
func EntryCPU(cpu string, cpuOnly, familyOnly bool) string {
	switch {
	case familyOnly:
		return cpu
	case cpuOnly:
		return promoted.CPUVendor(cpu)
	}
	return ""
}

// Decide judges, for every op timed in the run, each challenger against the
// incumbent of its precision class (the first preference of that class
// timed in the run, else naive or naive-<precision>) by the rule at every
// real model shape both were timed at (every shape when the run timed no
// real one: the odd tail shapes are there to prove correctness, and at a
// handful of values call overhead decides the race). A challenger is
// promoted only if the rule promotes it at every judged shape and it passed
// the gate everywhere in the run. Promoted challengers go to the front of
// the op's list, fastest first (geometric mean of their median times), each
// citing its promotion record; b receives one promotion record per decision.
func Decide(req Request, b *record.Batch) ([]record.Promotion, promoted.Preferences) {
	run := indexRun(req.Recs, req.Ops)
	out := copyPrefs(req.Prefs)
	var decisions []record.Promotion
	for _, op := range run.opNames() {
		j := judge{req: req, run: run, op: op}
		var wins []win
		for _, ch := range run.byOp[op] {
			p, ok := j.challenge(ch)
			if !ok {
				continue
			}
			rec := b.Add(record.Record{Kind: record.KindPromotion, Promotion: &p.Promotion})
			decisions = append(decisions, p.Promotion)
			if p.Promote {
				wins = append(wins, j.win(p, rec.ID))
			}
		}
		if len(wins) > 0 {
			out.Ops[op] = withWins(out.Ops[op], wins)
		}
	}
	return decisions, out
}

// RunCPU names the machine a run's records were measured on
// (promoted.CPUKey: vendor/family), or "" when the run record lacks it.
func RunCPU(recs []record.Record) string {
	for _, r := range recs {
		if r.Run != nil {
			c := r.Run.Protocol.Machine.CPU
			return promoted.CPUKey(c.Vendor, c.Family)
		}
	}
	return ""
}

type key struct{ op, variant, shape string }

// runIndex is a kernel run's records by op, variant and shape.
type runIndex struct {
	timed  map[key]record.Record // shape "": the variant's first record
	byOp   map[string][]string   // op → variants in first-seen order
	shapes map[string][]string   // op → shapes in first-seen order
	gates  []gate.Result
}

func indexRun(recs []record.Record, ops []string) runIndex {
	ri := runIndex{timed: map[key]record.Record{}, byOp: map[string][]string{}, shapes: map[string][]string{}}
	for _, r := range recs {
		if r.Gate != nil {
			ri.gates = append(ri.gates, *r.Gate)
		}
		k := r.Kernel
		if k == nil || (len(ops) > 0 && !slices.Contains(ops, k.Op)) {
			continue
		}
		if !ri.has(k.Op, k.Variant) {
			ri.byOp[k.Op] = append(ri.byOp[k.Op], k.Variant)
			ri.timed[key{k.Op, k.Variant, ""}] = r
		}
		if !slices.Contains(ri.shapes[k.Op], k.Shape) {
			ri.shapes[k.Op] = append(ri.shapes[k.Op], k.Shape)
		}
		ri.timed[key{k.Op, k.Variant, k.Shape}] = r
	}
	return ri
}

// has reports whether the run timed variant for op.
func (ri runIndex) has(op, variant string) bool {
	_, ok := ri.timed[key{op, variant, ""}]
	return ok
}

func (ri runIndex) opNames() []string {
	return slices.Sorted(maps.Keys(ri.byOp))
}

func copyPrefs(prefs promoted.Preferences) promoted.Preferences {
	out := promoted.Preferences{Note: prefs.Note, Ops: map[string][]promoted.Choice{}}
	for op, list := range prefs.Ops {
		out.Ops[op] = append([]promoted.Choice(nil), list...)
	}
	for _, b := range prefs.Bundles {
		b.Kernels = maps.Clone(b.Kernels)
		out.Bundles = append(out.Bundles, b)
	}
	return out
}

// judge decides the challengers of one op.
type judge struct {
	req Request
	run runIndex
	op  string
}

func (j judge) precision(name string) ledger.Precision {
	v, _ := j.req.Reg.Lookup(j.op, name)
	return v.Precision
}

// incumbent is what a challenger of precision prec must beat: the first
// preference of that class timed in the run, else what the engine runs
// without one; "" when none was timed.
func (j judge) incumbent(prec ledger.Precision) string {
	for _, c := range j.req.Prefs.Ops[j.op] {
		if !c.AppliesTo(j.req.CPU) || j.precision(c.Variant) != prec || !j.run.has(j.op, c.Variant) {
			continue
		}
		if v, ok := j.req.Reg.Lookup(j.op, c.Variant); !ok || v.Status != ledger.Retired {
			return c.Variant
		}
	}
	// What the engine runs without a preference: the matvec loop for
	// matmul, the matvec over chunks of rows for batched decode, the
	// per-token loop for batched attention, the naive variant (of the
	// class) otherwise.
	incumbent := "naive"
	if prec != "" {
		incumbent = "naive-" + string(prec)
	} else if j.run.has(j.op, promoted.MatVecLoopName) && strings.HasPrefix(j.op, "matmul/") {
		incumbent = promoted.MatVecLoopName
	} else if j.run.has(j.op, promoted.MatVecChunksName) && ledger.IsMatVecBatch(j.op) {
		incumbent = promoted.MatVecChunksName
	} else if j.run.has(j.op, promoted.PerTokenName) && j.op == ledger.OpAttentionBatch {
		incumbent = promoted.PerTokenName
	}
	if !j.run.has(j.op, incumbent) {
		return "" // none timed in this run: nothing to compare with
	}
	return incumbent
}

// judged is a decision with the mean log of the challenger's median times.
type judged struct {
	record.Promotion
	logNs float64
}

// challenge applies the rule to challenger ch at every judged shape; false
// when there is nothing to judge (not dispatchable, no incumbent, no shape
// timed by both).
func (j judge) challenge(ch string) (judged, bool) {
	if j.req.Only != "" && ch != j.req.Only {
		return judged{}, false
	}
	if _, ok := j.req.Reg.Lookup(j.op, ch); !ok {
		return judged{}, false // not in this binary: it could not be dispatched to
	}
	incumbent := j.incumbent(j.precision(ch))
	if incumbent == "" || ch == incumbent {
		return judged{}, false
	}
	p := judged{Promotion: record.Promotion{Op: j.op, Challenger: ch, Incumbent: incumbent, Rule: j.req.Rule, Promote: true}}
	gatePassed := gate.Passed(j.run.gates, j.op, ch)
	var gainSum float64
	for _, s := range judgedShapes(j.op, j.run.shapes[j.op]) {
		ri, ok1 := j.run.timed[key{j.op, incumbent, s}]
		rc, ok2 := j.run.timed[key{j.op, ch, s}]
		if !ok1 || !ok2 {
			continue
		}
		d := j.req.Rule.Decide(ri.Kernel.NsPerOp, rc.Kernel.NsPerOp, gatePassed)
		p.Shapes = append(p.Shapes, record.ShapeDecision{Shape: s, Decision: d})
		p.Evidence = append(p.Evidence, ri.ID, rc.ID)
		p.Promote = p.Promote && d.Promote
		gainSum += d.Gain
		p.logNs += math.Log(d.ChallengerMedian)
	}
	if len(p.Shapes) == 0 {
		return judged{}, false
	}
	p.Reason = reason(p.Promotion, gatePassed, gainSum/float64(len(p.Shapes)))
	return p, true
}

// reason says why a decision went the way it did.
func reason(p record.Promotion, gatePassed bool, meanGain float64) string {
	switch {
	case !gatePassed:
		return "did not pass the gate at every shape of the run"
	case p.Promote:
		return fmt.Sprintf("rule met at all %d shapes (mean gain %.1f%%)", len(p.Shapes), 100*meanGain)
	}
	var lost []string
	for _, s := range p.Shapes {
		if !s.Decision.Promote {
			lost = append(lost, s.Shape)
		}
	}
	return fmt.Sprintf("rule not met at %d of %d shapes (%s)", len(lost), len(p.Shapes), strings.Join(lost, ", "))
}

// A win is a promoted challenger's new preference entry.
type win struct {
	choice promoted.Choice
	speed  float64 // geometric mean of median ns over the judged shapes
}

func (j judge) win(p judged, evidence string) win {
	cpu := EntryCPU(j.req.CPU, j.req.CPUOnly, j.req.FamilyOnly)
	return win{promoted.Choice{Variant: p.Challenger, Evidence: evidence, Over: p.Incumbent,
		Date: time.Now().UTC().Format("2006-01-02"), CPU: cpu}, p.logNs / float64(len(p.Shapes))}
}

// withWins puts each win just ahead of the incumbent it beat (the end of
// the list when that is not in it: naive or a fallback), fastest first
// among the wins over one incumbent, replacing entries of the same variant
// and CPU. A win proves nothing against the entries above its incumbent
// (for another CPU, or left out of the run, as when features were hidden
// to time the kernels of CPUs without them), so it does not pass them; in
// a run that timed the op's first preference that is the front.
func withWins(old []promoted.Choice, wins []win) []promoted.Choice {
	sort.SliceStable(wins, func(i, j int) bool { return wins[i].speed < wins[j].speed })
	var list []promoted.Choice
	for _, c := range old {
		dup := false
		for _, w := range wins {
			dup = dup || (w.choice.Variant == c.Variant && w.choice.CPU == c.CPU)
		}
		if !dup {
			list = append(list, c)
		}
	}
	placed := map[string]int{} // incumbent → wins already placed ahead of it
	for _, w := range wins {
		at := len(list)
		for i, c := range list {
			if c.Variant == w.choice.Over {
				at = i
				break
			}
		}
		if at < len(list) {
			at -= placed[w.choice.Over] // after the faster wins over it
		}
		list = slices.Insert(list, at, w.choice)
		placed[w.choice.Over]++
	}
	return list
}

// judgedShapes returns the real model shapes among keys, or all keys when
// none is real.
func judgedShapes(op string, keys []string) []string {
	o, ok := ledger.LookupOp(op)
	if !ok {
		return keys
	}
	var real []string
	for _, k := range keys {
		if s, ok := o.Shape(k); ok && s.Real() {
			real = append(real, k)
		}
	}
	if len(real) == 0 {
		return keys
	}
	return real
}
