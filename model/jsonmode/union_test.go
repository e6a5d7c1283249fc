package jsonmode

import (
	"fmt"
	"testing"
)

// A union follows alternatives that begin alike until the text tells
// them apart; from then on only the survivor's schema holds.
func TestUnion(t *testing.T) {
	compile := func(s string) *Schema {
		t.Helper()
		sch, err := CompileSchema([]byte(s))
		if err != nil {
			t.Fatal(err)
		}
		return sch
	}
	u := Union{
		compile(`{"type":"object","properties":{"name":{"const":"ab"},"p":{"type":"object","properties":{"unit":{"enum":["c","f"]}},"required":["unit"]}},"required":["name","p"]}`),
		compile(`{"type":"object","properties":{"name":{"const":"ac"},"p":{"type":"object"}},"required":["name","p"]}`),
	}
	for text, want := range map[string]bool{
		`{"name":"ab","p":{"unit":"c"}}`:   true,
		`{"name":"ab","p":{"other":1}}`:    false, // ab's parameters hold
		`{"name":"ac","p":{"other":1}}`:    true,  // ac's are any object
		`{"name":"ad","p":{}}`:             false, // neither name
		`{"name":"ab","p":{"unit":"c"}} `:  false, // nothing after the value
		`{"name":"ac","p":{"unit":"c"}}`:   true,
		`{"name":"ab","p":{"unit":"c"}`:    false, // not yet complete
		`{"name": "ac", "p": {"x": [1]}}`:  true,
		`{"name":"ab","p":{"unit":"c"}}}}`: false,
	} {
		st := u.Start()
		got := st.WriteString(text) && st.Done()
		if got != want {
			t.Errorf("%s: valid %v, want %v", text, got, want)
		}
	}

	// The constraint over a union: "b" and "c" both allowed after `"a`, and
	// after "b" the first schema's enum alone.
	v := vocab{`{"name":"a`, `b`, `c`, `d`, `","p":{"unit":"`, `x`, `"}}`, "<eot>"}
	c := NewTable(v, len(v)).NewUnion(u)
	allowed := func() string {
		var ids []int
		for id := range len(v) {
			if c.Allows(id) {
				ids = append(ids, id)
			}
		}
		return fmt.Sprint(ids)
	}
	for _, step := range []struct {
		pick int
		want string
	}{{0, "[0]"}, {1, "[1 2]"}, {4, "[4]"}, {2, "[2]"}, {6, "[6]"}, {7, "[7]"}} {
		if got := allowed(); got != step.want {
			t.Fatalf("before token %d: allowed %s, want %s", step.pick, got, step.want)
		}
		c.Accept(step.pick)
	}
	if !c.Done() {
		t.Error("the call is closed but the constraint is not done")
	}
}
