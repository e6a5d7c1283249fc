package jsonmode

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

func feed(s string) (st State, at int) {
	for i := 0; i < len(s); i++ {
		if !st.WriteString(s[i : i+1]) {
			return st, i
		}
	}
	return st, -1
}

// Objects are accepted to the end and done; other texts are refused at the
// byte that breaks them.
func TestState(t *testing.T) {
	for _, c := range []struct {
		in   string
		bad  int // the byte refused, -1 none
		done bool
	}{
		{`{}`, -1, true},
		{`{"a": 1}`, -1, true},
		{` {}`, 0, false},
		{`{"a":[1,-2.5e+3,0.0,1E9,true,false,null,"x\n\u00e9\"",{"b":[]}]}`, -1, true},
		{`{"a":{"b":{"c":"d"}}`, -1, false},
		{`{"k":"é中😀"}`, -1, true},
		{`{"a":1`, -1, false},
		{`{"a":-`, -1, false},
		{`[1]`, 0, false},
		{`"x"`, 0, false},
		{`{a:1}`, 1, false},
		{`{"a" 1}`, 5, false},
		{`{"a":01}`, 6, false},
		{`{"a":1.}`, 7, false},
		{`{"a":1e}`, 7, false},
		{`{"a":tru}`, 8, false},
		{`{"a":1,}`, 7, false},
		{`{"a":[1,]}`, 8, false},
		{`{"a":[1}`, 7, false},
		{`{"a":"\x"}`, 7, false},
		{`{"a":"\u12g4"}`, 10, false},
		{"{\"a\":\"\x01\"}", 6, false},
		{"{\"a\":\"\xc0\xaf\"}", 6, false},     // overlong
		{"{\"a\":\"\xed\xa0\x80\"}", 7, false}, // a surrogate
		{`{} `, 2, false},
		{`{}{}`, 2, false},
		{"{\n" + strings.Repeat(" ", MaxIndent) + "}", -1, true},
		{"{\n\t" + strings.Repeat(" ", MaxIndent) + "}", MaxIndent + 2, false},
		{"{ \"a\" :\n  1 ,\n\t\"b\": [ 2 ]\n}", -1, true},
		{"{  }", 2, false},
		{"{\n\n}", 2, false},
		{"{\r\n}", 1, false},
		{`{"a":` + strings.Repeat("[", MaxDepth-1) + strings.Repeat("]", MaxDepth-1) + "}", -1, true},
		{`{"a":` + strings.Repeat("[", MaxDepth), 5 + MaxDepth - 1, false},
	} {
		st, at := feed(c.in)
		if at != c.bad || st.Done() != c.done {
			t.Errorf("%q: refused at %d, done %v; want %d, %v", c.in, at, st.Done(), c.bad, c.done)
		}
		if c.bad >= 0 && (!st.Failed() || st.WriteString("}")) {
			t.Errorf("%q: accepts bytes after a refused one", c.in)
		}
	}
}

// FuzzState checks the recognizer against encoding/json: a text within the
// recognizer's bounds (valid UTF-8, its whitespace rule, nesting within
// MaxDepth) is accepted and done exactly when it is
// valid JSON with an object at the top and nothing before or after it;
// every prefix of such a text is accepted.
func FuzzState(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":[1,2,{"b":null}],"c":"d\u0041"}`, ` {"x":-0.5e-7}`, `{"a":1}x`, `[1]`, `{"a":"é"}`, `{"a" : true ,"b":false}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) || strings.Count(s, "{")+strings.Count(s, "[") > MaxDepth || !wsOK(s) {
			return
		}
		want := json.Valid([]byte(s)) && strings.HasPrefix(s, "{") && strings.TrimRight(s, " \t\r\n") == s
		st, at := feed(s)
		if got := at < 0 && st.Done(); got != want {
			t.Fatalf("%q: accepted and done %v (refused at %d), encoding/json says %v", s, got, at, want)
		}
	})
}

// wsOK reports whether every run of whitespace in s (strings' contents
// included: a generous filter) is a space, or a newline and an indent of
// MaxIndent at most.
func wsOK(s string) bool {
	for i := 0; i < len(s); {
		if !isWS(s[i]) {
			i++
			continue
		}
		j := i
		for j < len(s) && isWS(s[j]) {
			j++
		}
		run := s[i:j]
		if run != " " && !(run[0] == '\n' && len(run) <= MaxIndent+1 && strings.Trim(run[1:], " \t") == "") {
			return false
		}
		i = j
	}
	return true
}

// vocab is a toy vocabulary: token i is pieces[i]; the last one ends
// generation.
type vocab []string

func (v vocab) Piece(id int32, _ bool) (string, error) {
	if int(id) >= len(v) {
		return "", fmt.Errorf("token %d out of range", id)
	}
	return v[id], nil
}
func (v vocab) IsEOG(id int32) bool { return int(id) == len(v)-1 }

// The constraint lets through the tokens that keep an object's prefix,
// none with no text, and only the end once the object is closed.
func TestConstraint(t *testing.T) {
	v := vocab{`{"`, `a`, `":`, ` 1`, `}`, `]`, ``, `{`, "<eot>"}
	c := NewTable(v, len(v)+1).New() // one token past the vocabulary: refused
	allowed := func() (ids []int) {
		for id := range len(v) + 1 {
			if c.Allows(id) {
				ids = append(ids, id)
			}
		}
		return ids
	}
	for _, step := range []struct {
		pick int
		want string
	}{{0, "[0 7]"}, {1, "[0 1 2 3 4 5 7]"}, {2, "[0 1 2 3 4 5 7]"}, {3, "[0 2 3 7]"}, {4, "[4]"}, {8, "[8]"}} {
		if got := fmt.Sprint(allowed()); got != step.want {
			t.Fatalf("before token %d: allowed %s, want %s", step.pick, got, step.want)
		}
		c.Accept(step.pick)
	}
	if !c.Done() {
		t.Error("the object is closed but the constraint is not done")
	}
}
