package grammar

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

func accepts(t *testing.T, g *Grammar, text string) bool {
	t.Helper()
	s := g.Start()
	return s.WriteString(text) && s.Done()
}

// Each grammar against texts it derives and texts it does not, prefixes
// among the latter.
func TestGrammar(t *testing.T) {
	for _, c := range []struct {
		src      string
		yes, no  []string
		prefixes []string // not complete, but still prefixes
	}{
		{`root ::= "yes" | "no"`, []string{"yes", "no"}, []string{"", "ye", "yess", "No", "maybe"}, []string{"y", "n"}},
		{`root ::= [a-z]+ ("," [a-z]+)*`, []string{"a", "abc,de,f"}, []string{"", "abc,", ",a", "aB"}, []string{"ab,"}},
		{`root ::= [^"\\]* "!"`, []string{"!", "héllo wörld!", "日本!"}, []string{"a\"!", "a\\!", "abc"}, []string{"日本"}},
		{`root ::= "a"{2} "b"{1,3} "c"{2,} "d"{,1}`, []string{"aabcc", "aabbbccccd", "aabbccd"}, []string{"abcc", "aabbbbcc", "aabc", "aabccdd"}, []string{"aab"}},
		{"root ::= item (\n  \"+\" item\n)*\nitem ::= [0-9]+ | \"(\" root \")\" # nested\n", []string{"1", "12+(3+4)", "((1))"}, []string{"1+", "(1", "+1", "1)"}, []string{"((1"}},
		{"# a comment\nroot ::= x? y\nx ::= \"x\"\ny ::= \"y\" | \"\"\n", []string{"x", "xy", "y", ""}, []string{"yx", "xx"}, nil},
		{`root ::= . . [\x41-\x43] "\u00e9\n"`, []string{"ab" + "B" + "é\n", "\x00zA" + "é\n"}, []string{"abDé\n", "aBé\n"}, nil},
		{`root ::= [\]\-\^]+`, []string{"]", "-^]"}, []string{"a", ""}, nil},
	} {
		g, err := Parse(c.src)
		if err != nil {
			t.Errorf("%q: %v", c.src, err)
			continue
		}
		for _, y := range c.yes {
			if !accepts(t, g, y) {
				t.Errorf("%q: %q refused", c.src, y)
			}
		}
		for _, n := range c.no {
			if accepts(t, g, n) {
				t.Errorf("%q: %q accepted", c.src, n)
			}
		}
		for _, p := range c.prefixes {
			s := g.Start()
			if !s.WriteString(p) || s.Done() {
				t.Errorf("%q: prefix %q: live %v, done %v", c.src, p, !s.Failed(), s.Done())
			}
		}
	}
}

// Bad grammars are errors naming the problem, never a panic.
func TestParseErrors(t *testing.T) {
	for src, want := range map[string]string{
		``:                                    "no rule named root",
		`rot ::= "a"`:                         "no rule named root",
		`root ::= x`:                          `rule "x"`,
		`root ::= "a`:                         "unterminated string",
		`root ::= [a-`:                        "unterminated character class",
		`root ::= [z-a]`:                      "backwards",
		`root ::= ("a"`:                       "closing )",
		`root ::= "a"{3,1}`:                   "below the least",
		`root ::= "a"{5000}`:                  "at most",
		`root ::= *`:                          "repeats nothing",
		`root = "a"`:                          "::= is wanted",
		"root ::= \"a\"\nroot ::= \"b\"":      "defined twice",
		`root ::= root "a"`:                   "left-recursive",
		"root ::= x \"a\"\nx ::= \"\" | root": "left-recursive",
		`root ::= "\q"`:                       "unknown escape",
		`root ::= "a" )`:                      "unexpected",
		`root ::= "\u12"`:                     "hex digits",
	} {
		_, err := Parse(src)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want one containing %q", src, err, want)
		}
	}
}

type vocab []string

func (v vocab) Piece(id int32, _ bool) (string, error) {
	if int(id) >= len(v) {
		return "", fmt.Errorf("no token %d", id)
	}
	if v[id] == "<eot>" {
		return "", nil
	}
	return v[id], nil
}

func (v vocab) IsEOG(id int32) bool { return int(id) < len(v) && v[id] == "<eot>" }

// The constraint over a vocabulary: tokens that keep a prefix, a code
// point split across tokens, and the end of generation only when complete.
func TestConstraint(t *testing.T) {
	g, err := Parse(`root ::= "é" [0-9]+`)
	if err != nil {
		t.Fatal(err)
	}
	v := vocab{"\xc3", "\xa9", "é", "1", "23", "x", "<eot>", "\xc3\xa8", "\xe0", "\xf0", "\xc0"}
	c := NewTable(v, len(v)+1).New(g) // one token past the vocabulary: refused
	allowed := func() string {
		var ids []int
		for id := range len(v) + 1 {
			if c.Allows(id) {
				ids = append(ids, id)
			}
		}
		return fmt.Sprint(ids)
	}
	for _, step := range []struct {
		pick int
		want string
	}{{0, "[0 2]"}, {1, "[1]"}, {4, "[3 4]"}, {3, "[3 4 6]"}, {6, "[3 4 6]"}} {
		if got := allowed(); got != step.want {
			t.Fatalf("before token %d: allowed %s, want %s", step.pick, got, step.want)
		}
		c.Accept(step.pick)
	}
	if !c.Done() {
		t.Error("the text is complete but the constraint is not done")
	}
}

// Any grammar text and any generated text: an error or an answer, never a
// panic or a hang.
func FuzzGrammar(f *testing.F) {
	f.Add(`root ::= [a-z]+ ("," [a-z]+)*`, "ab,c")
	f.Add("root ::= item (\n \"+\" item)*\nitem ::= [0-9]+ | \"(\" root \")\"", "(1+2)+3")
	f.Add(`root ::= [^\x00-\x7f]{1,3} .`, "日本語!")
	f.Add(`root ::= ("a" | "a" "b"?)* "c"{2,4}`, "aabacc")
	f.Fuzz(func(t *testing.T, src, text string) {
		g, err := Parse(src)
		if err != nil {
			return
		}
		s := g.Start()
		s.WriteString(text)
		_ = s.Done()
		// The constraint over the text's bytes and pairs, agreeing with
		// the plain walk at its start.
		var v vocab
		for i := range min(len(text), 16) {
			v = append(v, text[i:i+1], text[i:min(len(text), i+2)])
		}
		c := NewTable(v, len(v)).New(g)
		for id, p := range v {
			if got, want := c.Allows(id), g.Start().WriteString(p); got != want {
				t.Fatalf("piece %q: allowed %v, the plain walk %v", p, got, want)
			}
		}
	})
}

// A grammar whose readings multiply past maxStacks keeps following the
// readings it holds: the text is still one it derives.
func TestManyReadings(t *testing.T) {
	// Each "a" may close any of the open groups: the readings grow with
	// the text.
	g, err := Parse(`root ::= x*
x ::= "a" | "a" x "b" | "a" "a" x`)
	if err != nil {
		t.Fatal(err)
	}
	s := g.Start()
	if !s.WriteString(strings.Repeat("a", 40)) || len(s.stacks) > maxStacks {
		t.Fatalf("live %v with %d stacks", !s.Failed(), len(s.stacks))
	}
	if len(s.stacks) < maxStacks/2 {
		t.Fatalf("%d stacks: the test no longer reaches the bound", len(s.stacks))
	}
	if !s.Done() {
		t.Error("a run of a's is one root derives")
	}
}

// The constraint's memoized walk agrees with the plain one: for each
// grammar, at each prefix of its texts, every piece of a vocabulary of
// their substrings (and a few others, partial UTF-8 among them).
func TestConstraintAgrees(t *testing.T) {
	for _, c := range []struct {
		src   string
		texts []string
	}{
		{`root ::= [a-z]+ ("," [a-z]+)*`, []string{"ab,cd,e"}},
		{`root ::= [^"\\]* "!"`, []string{"héllo wörld!", "日本!"}},
		{"root ::= item (\"+\" item)*\nitem ::= [0-9]+ | \"(\" root \")\"", []string{"12+(3+4)", "((1))"}},
		{`root ::= "{" ws "\"k\":" ws s ws "}"
ws ::= [ \t\n]*
s ::= "\"" [^"\\]* "\""`, []string{`{ "k": "a b" }`}},
		{`root ::= ("a" | "a" "b"?)* "c"{2,4}`, []string{"aabacc"}},
	} {
		g, err := Parse(c.src)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		var v vocab
		add := func(p string) {
			if p != "" && !seen[p] {
				seen[p] = true
				v = append(v, p)
			}
		}
		for _, text := range c.texts {
			for i := range len(text) {
				for j := i + 1; j <= min(len(text), i+4); j++ {
					add(text[i:j])
				}
			}
		}
		for _, p := range []string{"\xe6", "\xe6\x97", "x", "!!", "\"}", "<eot>", "\xc3"} {
			add(p)
		}
		tab := NewTable(v, len(v))
		for _, text := range c.texts {
			con := tab.New(g)
			for i := 0; i <= len(text); i++ {
				ref := g.Start()
				ref.WriteString(text[:i])
				for id, p := range v {
					if p == "<eot>" {
						continue
					}
					want := !ref.Failed() && ref.Clone().WriteString(p)
					if got := con.Allows(id); got != want {
						t.Fatalf("%q after %q: piece %q allowed %v, the plain walk %v", c.src, text[:i], p, got, want)
					}
				}
				if i < len(text) {
					id := slices.Index(v, text[i:i+1])
					con.Accept(id)
				}
			}
		}
	}
}
