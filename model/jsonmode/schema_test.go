package jsonmode

import (
	"encoding/json"
	"strings"
	"testing"
)

const testSchema = `{"type":"object","title":"a person","properties":{
	"name":{"type":"string"},
	"age":{"type":"integer","description":"years"},
	"tags":{"type":"array","items":{"type":"string"},"maxItems":2},
	"kind":{"enum":["a","b",1,null]},
	"meta":{"type":"object"},
	"ok":{"type":["boolean","null"]},
	"pair":{"type":"array","items":{"type":"number"},"minItems":2,"maxItems":2}},
	"required":["name","age"],"additionalProperties":false}`

func mustSchema(t testing.TB, raw string) *Schema {
	t.Helper()
	s, err := CompileSchema([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func feedSchema(s *Schema, text string) (SchemaState, int) {
	st := s.Start()
	for i := 0; i < len(text); i++ {
		if !st.WriteString(text[i : i+1]) {
			return st, i
		}
	}
	return st, -1
}

// Texts valid under the schema (properties in its order, optional ones
// left out) are accepted and complete; others are refused at the byte
// that breaks them.
func TestSchemaState(t *testing.T) {
	s := mustSchema(t, testSchema)
	for _, c := range []struct {
		in   string
		bad  int
		done bool
	}{
		{`{"name":"x","age":3}`, -1, true},
		{`{ "name" : "é" , "age":-30 }`, -1, true},
		{`{"name":"x","age":3,"tags":["a","b"],"kind":"b","meta":{"any":[1,{"z":null}],"n":-2.5e3},"ok":null,"pair":[1.5,-2]}`, -1, true},
		{`{"name":"x","age":3,"ok":true}`, -1, true},
		{`{"name":"x","age":3,"kind":1}`, -1, true},
		{`{"name":"x","age":3,"kind":null}`, -1, true},
		{`{"name":"x","age":3,"meta":{}}`, -1, true},
		{`{"name":"x"`, -1, false},
		{`{"age":3,"name":"x"}`, 2, false},
		{`{"name":"x"}`, 11, false},
		{`{"name":"x","age":3.5}`, 19, false},
		{`{"name":"x","age":3,"tags":["a","b","c"]}`, 35, false},
		{`{"name":"x","age":3,"kind":"c"}`, 28, false},
		{`{"name":"x","age":3,"kind":12}`, 28, false},
		{`{"name":1,"age":3}`, 8, false},
		{`{"name":"x","age":3,"extra":1}`, 21, false},
		{`{"name":"x","age":3,"ok":"yes"}`, 25, false},
		{`{"name":"x","age":3,"pair":[1]}`, 29, false},
		{`{"name":"x","age":3,"ok":true,"tags":[]}`, 31, false},
		{` {"name":"x","age":3}`, 0, false},
		{`{"name":"x","age":3} `, 20, false},
		{`["name"]`, 0, false},
	} {
		st, at := feedSchema(s, c.in)
		if at != c.bad || st.Done() != c.done {
			t.Errorf("%s: refused at %d, done %v; want %d, %v", c.in, at, st.Done(), c.bad, c.done)
		}
	}
}

// Schemas outside the subset are refused, naming what is wrong.
func TestCompileSchemaRefuses(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"type":"string"}`, "root must be an object or an array"},
		{`{"type":"object","properties":{"a":{"type":"string","pattern":"^x"}}}`, `"pattern" is not supported`},
		{`{"type":"object","properties":{"a":{"type":"integer","minimum":0}}}`, `"minimum" is not supported`},
		{`{"type":"object","properties":{"a":{"anyOf":[{"type":"string"},{"enum":["x"]}]}}}`, "anyOf alternatives must begin differently"},
		{`{"type":"object","properties":{"a":{"oneOf":[{"type":"object"},{"type":"object"}]}}}`, "oneOf alternatives must begin differently"},
		{`{"type":"object","properties":{"a":{"$ref":"#/$defs/x"}}}`, "no such definition"},
		{`{"type":"object","properties":{"a":{"$ref":"other.json#/x"}}}`, "only #/$defs/NAME"},
		{`{"type":"object","properties":{"a":{"allOf":[{"type":"string"},{"type":"null"}]}}}`, "allOf of 2 schemas"},
		{`{"type":"object","properties":{"a":{"type":"string","anyOf":[{"type":"null"}]}}}`, `anyOf beside "type"`},
		{`{"type":"object","properties":{"a":{}},"required":["b"]}`, `required property "b"`},
		{`{"type":"object","properties":{"a":{"type":"text"}}}`, `type "text" is not a JSON type`},
		{`{"type":"array","minItems":3,"maxItems":2}`, "maxItems 2 is below minItems 3"},
		{`{"type":"object","properties":{"a":{"enum":[]}}}`, "enum must list"},
		{`{"type":"object"`, "schema:"},
		{`{"type":"object","type":"array"}`, "repeated"},
	} {
		if _, err := CompileSchema([]byte(c.in)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error naming %q", c.in, err, c.want)
		}
	}
}

// validPerson is testSchema checked by hand over the decoded text: the
// oracle of FuzzSchemaState.
func validPerson(text string) bool {
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	v, err := decodeOrdered(dec)
	if err != nil {
		return false
	}
	if _, err := dec.Token(); err == nil {
		return false
	}
	o, ok := v.(*omap)
	if !ok {
		return false
	}
	order := []string{"name", "age", "tags", "kind", "meta", "ok", "pair"}
	i := 0
	for _, k := range o.keys {
		for i < len(order) && order[i] != k {
			i++
		}
		if i == len(order) {
			return false // unknown, or out of order
		}
	}
	if _, ok := o.vals["name"].(string); !ok {
		return false
	}
	if n, ok := o.vals["age"].(json.Number); !ok || strings.ContainsAny(string(n), ".eE") {
		return false
	}
	if x, ok := o.vals["tags"]; ok {
		l, ok := x.([]any)
		if !ok || len(l) > 2 {
			return false
		}
		for _, e := range l {
			if _, ok := e.(string); !ok {
				return false
			}
		}
	}
	if x, ok := o.vals["kind"]; ok {
		b, _ := json.Marshal(x)
		if s := string(b); s != `"a"` && s != `"b"` && s != "1" && s != "null" {
			return false
		}
	}
	if x, ok := o.vals["meta"]; ok {
		if _, ok := x.(*omap); !ok {
			return false
		}
	}
	if x, ok := o.vals["ok"]; ok {
		if _, isBool := x.(bool); !isBool && x != nil {
			return false
		}
	}
	if x, ok := o.vals["pair"]; ok {
		l, ok := x.([]any)
		if !ok || len(l) != 2 {
			return false
		}
		for _, e := range l {
			if _, ok := e.(json.Number); !ok {
				return false
			}
		}
	}
	return true
}

// FuzzSchemaState checks the schema recognizer against validPerson: a text
// within the bounds (valid JSON, the whitespace rule, none before or
// after) is accepted and complete exactly when it validates,
// and every prefix of a valid one is accepted.
func FuzzSchemaState(f *testing.F) {
	for _, s := range []string{`{"name":"x","age":3}`, `{"name":"x","age":3,"tags":["a"],"kind":null,"meta":{"q":[1]},"ok":false,"pair":[0,1e2]}`,
		`{"name":"x","age":3,"kind":"c"}`, `{"age":1,"name":"y"}`} {
		f.Add(s)
	}
	s := mustSchema(f, testSchema)
	f.Fuzz(func(t *testing.T, text string) {
		if !json.Valid([]byte(text)) || !wsOK(text) || strings.TrimSpace(text) != text ||
			strings.Count(text, "{")+strings.Count(text, "[") > MaxDepth/2 {
			return
		}
		st, at := feedSchema(s, text)
		got, want := at < 0 && st.Done(), validPerson(text)
		if got != want {
			t.Fatalf("%s: accepted and done %v (refused at %d), the oracle says %v", text, got, at, want)
		}
	})
}

// A schema as Pydantic writes one: definitions, references (recursive
// too), Optional fields as anyOf with null, a one-schema allOf.
func TestSchemaPydantic(t *testing.T) {
	s := mustSchema(t, `{"$defs":{
		"Pet":{"properties":{"name":{"title":"Name","type":"string"},"kind":{"enum":["cat","dog"],"title":"Kind","type":"string"}},"required":["name","kind"],"title":"Pet","type":"object"},
		"Node":{"type":"object","properties":{"v":{"type":"integer"},"kids":{"type":"array","items":{"$ref":"#/$defs/Node"}}},"required":["v"]}},
		"properties":{
		"owner":{"anyOf":[{"type":"string"},{"type":"null"}],"default":null,"title":"Owner"},
		"pet":{"allOf":[{"$ref":"#/$defs/Pet"}]},
		"tree":{"$ref":"#/$defs/Node"},
		"n":{"oneOf":[{"type":"integer"},{"type":"array","items":{"type":"integer"}}]}},
		"required":["pet"],"title":"Model","type":"object"}`)
	for _, c := range []struct {
		in   string
		bad  int
		done bool
	}{
		{`{"owner":null,"pet":{"name":"Rex","kind":"dog"}}`, -1, true},
		{`{"owner":"Ann","pet":{"name":"Tom","kind":"cat"},"tree":{"v":1,"kids":[{"v":2},{"v":3,"kids":[]}]},"n":[1,2]}`, -1, true},
		{`{"pet":{"name":"Tom","kind":"cat"},"n":7}`, -1, true},
		{`{"owner":3}`, 9, false},
		{`{"pet":{"name":"Tom","kind":"cow"}}`, 30, false},
		{`{"pet":{"name":"Tom","kind":"cat"},"tree":{"kids":[]}}`, 44, false},
		{`{"pet":{"name":"Tom","kind":"cat"},"n":"7"}`, 39, false},
	} {
		st, at := feedSchema(s, c.in)
		if at != c.bad || st.Done() != c.done {
			t.Errorf("%s: refused at %d, done %v; want %d, %v", c.in, at, st.Done(), c.bad, c.done)
		}
	}
}
