package main

// Assembler macros for the avo-built files. A block that several kernels
// (or several places of one kernel) repeat is written once, as a #define
// of a generated header of its package, from the same avo description that
// built it inline: the body runs in a throwaway context and its
// instructions are printed as the macro's text, with the parameters'
// sample operands replaced by the parameters' names. The kernels then emit
// one line, the macro's invocation, an instruction whose opcode avo prints
// as it is (as raw's are), and the file includes the header.
//
// A macro belongs to one package's header; where another package's kernel
// uses the same helper, the helper emits the body inline (asmMacro.use).

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/mmcloughlin/avo/build"
	"github.com/mmcloughlin/avo/ir"
	. "github.com/mmcloughlin/avo/operand"
)

// header is the generated header of variants/avx512 and of variants/avx2.
const header = "macros_amd64.h"

func init() {
	for _, pkg := range []string{"avx2", "avx512"} {
		registerText(pkg, header, func() []byte {
			return headerText("macro.go", pkg, header,
				"// The blocks that this package's generated kernels share, written once",
				"// as macros from their avo descriptions in variants/_gen.")
		})
	}
}

// def512 defines a macro of variants/avx512's header.
func def512(sig, doc string, body func(), samples ...string) *asmMacro {
	return defMacro("avx512", header, sig, doc, body, samples...)
}

// twin is a macro of both headers, its body (run with curPkg set) at each
// package's width.
type twin map[string]*asmMacro

// defTwin defines sig in both headers; samples gives the samples at the
// package's width (curPkg).
func defTwin(sig, doc string, body func(), samples func() []string) twin {
	t := twin{}
	for _, pkg := range []string{"avx2", "avx512"} {
		var ss []string
		if samples != nil {
			saved := curPkg
			curPkg = pkg
			ss = samples()
			curPkg = saved
		}
		t[pkg] = defMacro(pkg, header, sig, doc, body, ss...)
	}
	return t
}

// here reports whether the file being written is of a package with the
// macro.
func (t twin) here() bool { return t[curPkg] != nil }

// use is asmMacro.use of the file's package's macro (inline elsewhere).
func (t twin) use(inline func(), args ...any) {
	if m := t[curPkg]; m != nil {
		m.use(inline, args...)
		return
	}
	inline()
}

// name is the macro's name.
func (t twin) name() string { return t["avx512"].name }

// asmMacro is one #define of a generated header.
type asmMacro struct {
	pkg, header string // the package directory's base name and the header
	name        string
	params      []string // the parameters' names, in order
	doc         string   // what it does, after the name
	// body emits the body with sample operands; samples[i] is the text of
	// params[i]'s sample as avo prints it, replaced by the parameter's name
	// where it stands as a whole operand or operand part.
	body    func()
	samples []string
	row     bool // a row of a table: written on its #define line
}

// macros are every header's macros, in the order of definition (and of
// the headers).
var macros []*asmMacro

// curPkg is the package whose file generate is writing; usedHeaders the
// headers its macros come from.
var (
	curPkg      string
	usedHeaders = map[string]bool{}
)

// defMacro defines the macro sig ("NAME" or "NAME(a, b)") of pkg's header
// hdr: body with samples standing for the parameters.
func defMacro(pkg, hdr, sig, doc string, body func(), samples ...string) *asmMacro {
	name, params := sig, []string(nil)
	if i := strings.Index(sig, "("); i >= 0 {
		name = sig[:i]
		for _, p := range strings.Split(strings.TrimSuffix(sig[i+1:], ")"), ",") {
			params = append(params, strings.TrimSpace(p))
		}
	}
	if len(params) != len(samples) {
		panic(fmt.Sprintf("macro %s: %d parameters, %d samples", sig, len(params), len(samples)))
	}
	m := &asmMacro{pkg: pkg, header: hdr, name: name, params: params, doc: doc, body: body, samples: samples}
	macros = append(macros, m)
	return m
}

// here reports whether the macro can be invoked in the file being written
// (it is of that file's package).
func (m *asmMacro) here() bool { return m.pkg == curPkg }

// use invokes the macro with args (operands, or text as it is) where it is
// of the package being written, else runs inline, which emits the body.
func (m *asmMacro) use(inline func(), args ...any) {
	if !m.here() {
		inline()
		return
	}
	if len(args) != len(m.params) {
		panic(fmt.Sprintf("macro %s: %d parameters, %d arguments", m.name, len(m.params), len(args)))
	}
	invoke(m.header, m.name, args...)
}

// invoke emits NAME(args) as one instruction and notes that the file
// includes hdr.
func invoke(hdr, name string, args ...any) {
	usedHeaders[hdr] = true
	op := name
	if len(args) > 0 {
		s := make([]string, len(args))
		for i, x := range args {
			s[i] = argText(x)
		}
		op += "(" + strings.Join(s, ", ") + ")"
	}
	a.Instruction(&ir.Instruction{Opcode: op})
}

// hex32 is n as a macro argument that a body uses as a 32-bit immediate.
func hex32(n uint32) string { return fmt.Sprintf("0x%08x", n) }

// argText is a macro argument as the assembler reads it.
func argText(x any) string {
	switch x := x.(type) {
	case string:
		return x
	case Op:
		return x.Asm()
	case int:
		return fmt.Sprint(x)
	}
	panic(fmt.Sprintf("macro argument %v (%T)", x, x))
}

// placeholder emits a parameter that stands for instructions (a macro's
// invocation or nothing) in a macro's body.
func placeholder(param string) { a.Instruction(&ir.Instruction{Opcode: param}) }

// capture runs emit in a throwaway context and returns its instructions
// and labels as assembly text, one a line.
func capture(emit func()) []string {
	saved := a
	defer func() { a = saved }()
	a = build.NewContext()
	a.Function("capture")
	a.SignatureExpr("func()")
	emit()
	f, err := a.Result()
	if err != nil {
		panic(fmt.Sprintf("capture: %v", err))
	}
	var out []string
	for _, n := range f.Functions()[0].Nodes {
		switch n := n.(type) {
		case *ir.Instruction:
			s := n.OpcodeWithSuffixes()
			if len(n.Operands) > 0 {
				ops := make([]string, len(n.Operands))
				for i, o := range n.Operands {
					ops[i] = o.Asm()
				}
				s += " " + strings.Join(ops, ", ")
			}
			out = append(out, s)
		case ir.Label:
			out = append(out, string(n)+":")
		}
	}
	return out
}

// text is the macro's body: its captured lines with the samples replaced
// by the parameters' names. A sample is an operand's text (a register, a
// symbol, a parameter of the Go signature: replaced where it is a whole
// word), a memory operand's base and index as "(R14)(R15*1)" (replaced
// after its displacement, set apart from it by a space), or "#N": the
// displacements and constants N+k for k below 65536, replaced by the
// parameter (k = 0) or (param+k).
func (m *asmMacro) text() []string {
	ls := capture(m.body)
	for i, s := range m.samples {
		p := m.params[i]
		for j, l := range ls {
			switch {
			case strings.HasPrefix(s, "#"):
				var n0 int
				fmt.Sscan(s[1:], &n0)
				l = numRE.ReplaceAllStringFunc(l, func(t string) string {
					var n int
					fmt.Sscan(t, &n)
					switch {
					case n < n0 || n >= n0+1<<16:
						return t
					case n == n0:
						return p
					}
					return fmt.Sprintf("(%s+%d)", p, n-n0)
				})
			case strings.HasPrefix(s, "("):
				for k := strings.Index(l, s); k >= 0; k = strings.Index(l, s) {
					sep := ""
					if k > 0 && (l[k-1] == ')' || wordRE.MatchString(l[k-1:k])) {
						sep = " "
					}
					l = l[:k] + sep + p + l[k+len(s):]
				}
			default:
				l = wordRE.ReplaceAllStringFunc(l, func(t string) string {
					if t == s {
						return p
					}
					return t
				})
			}
			ls[j] = l
		}
	}
	return ls
}

var (
	// numRE is a decimal number that is not part of a word.
	numRE = regexp.MustCompile(`\b[0-9]+\b`)
	// wordRE is a name, a register or a number of the Go assembler.
	wordRE = regexp.MustCompile(`[A-Za-z0-9_\x{00b7}]+`)
)

// headerText writes pkg's generated header hdr (by src): intro, then its
// macros, each with its doc comment.
func headerText(src, pkg, hdr string, intro ...string) []byte {
	saved := curPkg
	curPkg = pkg
	defer func() { curPkg = saved }()
	var ms []macro
	for _, m := range macros {
		if m.pkg != pkg || m.header != hdr {
			continue
		}
		sig := m.name
		if len(m.params) > 0 {
			sig += "(" + strings.Join(m.params, ", ") + ")"
		}
		body := m.text()
		if m.row {
			ms = append(ms, macro{sig + " " + strings.Join(body, "; "), m.doc, func(*lines) {}})
			continue
		}
		ms = append(ms, macro{sig, m.doc, func(l *lines) {
			for _, s := range body {
				if strings.HasSuffix(s, ":") {
					l.e("%s", s)
				} else {
					l.e("\t%s", s)
				}
			}
		}})
	}
	return macroHeader(src, intro, ms)
}

// addIncludes adds the headers the file's macros come from to f.
func addIncludes(f *ir.File) {
	var hs []string
	for h := range usedHeaders {
		hs = append(hs, h)
	}
	sort.Strings(hs)
	f.Includes = append(f.Includes, hs...)
}
