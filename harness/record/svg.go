package record

import (
	"fmt"
	"html"
	"io"
	"math"
	"strings"
)

// Chart is a grouped bar chart: one group per shape, one bar per variant.
type Chart struct {
	Title    string
	Unit     string // axis label, e.g. "GB/s"
	Groups   []string
	Series   []string
	Values   [][]float64 // Values[series][group]; NaN for a missing bar
	Subtitle string
}

// KernelChart builds the chart of one op from kernel records: GB/s for
// matvec and the elementwise ops (bandwidth-bound), GFLOP/s for matmul.
func KernelChart(recs []Record, op string) (Chart, bool) {
	c := Chart{Title: op}
	gi, si := map[string]int{}, map[string]int{}
	type point struct {
		g, s int
		v    float64
	}
	var pts []point
	for _, r := range recs {
		k := r.Kernel
		if k == nil || k.Op != op {
			continue
		}
		if strings.HasPrefix(op, "matmul/") {
			c.Unit = "GFLOP/s"
		} else {
			c.Unit = "GB/s"
		}
		if _, ok := gi[k.Label]; !ok {
			gi[k.Label] = len(c.Groups)
			c.Groups = append(c.Groups, k.Label)
		}
		if _, ok := si[k.Variant]; !ok {
			si[k.Variant] = len(c.Series)
			c.Series = append(c.Series, k.Variant)
		}
		v := k.GBps
		if c.Unit == "GFLOP/s" {
			v = k.GFLOPS
		}
		pts = append(pts, point{gi[k.Label], si[k.Variant], v})
	}
	if len(pts) == 0 {
		return c, false
	}
	c.Values = make([][]float64, len(c.Series))
	for s := range c.Values {
		c.Values[s] = make([]float64, len(c.Groups))
		for g := range c.Values[s] {
			c.Values[s][g] = math.NaN()
		}
	}
	for _, p := range pts {
		c.Values[p.s][p.g] = p.v
	}
	c.Subtitle = fmt.Sprintf("median of the interleaved runs, %s (higher is better)", c.Unit)
	return c, true
}

var palette = []string{"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"}

// WriteSVG draws the chart as a self-contained SVG document.
func (c Chart) WriteSVG(w io.Writer) error {
	const (
		left, right, top, bottom = 70, 20, 60, 130
		barW, groupGap, plotH    = 14, 18, 300
	)
	nS := max(len(c.Series), 1)
	groupW := nS*barW + groupGap
	width := left + right + max(len(c.Groups)*groupW, 200)
	legendH := 18 * ((len(c.Series) + 3) / 4)
	height := top + plotH + bottom + legendH
	maxV := 0.0
	for _, s := range c.Values {
		for _, v := range s {
			if !math.IsNaN(v) {
				maxV = math.Max(maxV, v)
			}
		}
	}
	step := niceStep(maxV / 5)
	top5 := step * math.Ceil(maxV/step)
	if top5 == 0 {
		top5 = 1
	}
	y := func(v float64) float64 { return float64(top+plotH) - v/top5*plotH }

	var b strings.Builder
	esc := html.EscapeString
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="11">`+"\n", width, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%d" y="22" font-size="15" font-weight="bold">%s</text>`+"\n", left, esc(c.Title))
	fmt.Fprintf(&b, `<text x="%d" y="40" fill="#555">%s</text>`+"\n", left, esc(c.Subtitle))
	for v := 0.0; v <= top5+step/2 && step > 0; v += step {
		fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", left, width-right, y(v), y(v))
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", left-6, y(v)+4, trimFloat(v))
	}
	fmt.Fprintf(&b, `<text transform="translate(16 %d) rotate(-90)" text-anchor="middle">%s</text>`+"\n", top+plotH/2, esc(c.Unit))
	for g, name := range c.Groups {
		x0 := left + g*groupW + groupGap/2
		for s := range c.Series {
			v := c.Values[s][g]
			if math.IsNaN(v) {
				continue
			}
			x := x0 + s*barW
			fmt.Fprintf(&b, `<rect x="%d" y="%.1f" width="%d" height="%.1f" fill="%s"><title>%s %s: %.3g %s</title></rect>`+"\n",
				x, y(v), barW-2, float64(top+plotH)-y(v), palette[s%len(palette)], esc(c.Series[s]), esc(name), v, esc(c.Unit))
		}
		cx := x0 + nS*barW/2
		fmt.Fprintf(&b, `<text transform="translate(%d %d) rotate(-40)" text-anchor="end">%s</text>`+"\n", cx, top+plotH+14, esc(name))
	}
	fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="#333"/>`+"\n", left, width-right, top+plotH, top+plotH)
	for s, name := range c.Series {
		lx := left + (s%4)*170
		ly := top + plotH + bottom + 18*(s/4)
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="12" height="12" fill="%s"/><text x="%d" y="%d">%s</text>`+"\n",
			lx, ly-10, palette[s%len(palette)], lx+16, ly, esc(name))
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// niceStep rounds x up to 1, 2 or 5 times a power of ten.
func niceStep(x float64) float64 {
	if x <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(x)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= x {
			return m * p
		}
	}
	return 10 * p
}

func trimFloat(v float64) string { return strings.TrimSuffix(fmt.Sprintf("%.4g", v), ".0") }
