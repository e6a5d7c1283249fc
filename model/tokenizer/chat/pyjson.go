package chat

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// pyJSON writes the JSON value raw as the templates' tojson filter prints
// it under Python transformers (json.dumps with ensure_ascii=False): keys in
// the order given, ", " and ": " between items without indent, "," and a
// newline with it, only the escapes Python writes, integers as written and
// other numbers as Python's float repr (2.0, 1e-05, 1e+16). llama.cpp's
// Jinja engine prints the same.
func pyJSON(b *strings.Builder, raw json.RawMessage, indent int) error {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	v, err := readValue(d)
	if err != nil {
		return err
	}
	if _, err := d.Token(); err != io.EOF {
		return errors.New("more than one JSON value")
	}
	v.write(b, indent, 0)
	return nil
}

// pyValue is a parsed JSON value that keeps its object keys in order.
type pyValue struct {
	tok  json.Token // a scalar, or json.Delim '{' or '['
	keys []string
	vals []pyValue
}

func readValue(d *json.Decoder) (pyValue, error) {
	t, err := d.Token()
	if err != nil {
		return pyValue{}, err
	}
	v := pyValue{tok: t}
	switch t {
	case json.Delim('{'):
		for d.More() {
			k, err := d.Token()
			if err != nil {
				return v, err
			}
			e, err := readValue(d)
			if err != nil {
				return v, err
			}
			v.keys, v.vals = append(v.keys, k.(string)), append(v.vals, e)
		}
	case json.Delim('['):
		for d.More() {
			e, err := readValue(d)
			if err != nil {
				return v, err
			}
			v.vals = append(v.vals, e)
		}
	default:
		return v, nil
	}
	_, err = d.Token() // the closing delimiter
	return v, err
}

func (v pyValue) write(b *strings.Builder, indent, depth int) {
	open, close := "{", "}"
	switch t := v.tok.(type) {
	case json.Delim:
		if t == '[' {
			open, close = "[", "]"
		}
	case string:
		pyString(b, t)
		return
	case json.Number:
		b.WriteString(pyNumber(string(t)))
		return
	case bool:
		b.WriteString(strconv.FormatBool(t))
		return
	default: // nil
		b.WriteString("null")
		return
	}
	b.WriteString(open)
	if len(v.vals) == 0 {
		b.WriteString(close)
		return
	}
	for i, e := range v.vals {
		switch {
		case indent > 0:
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString("\n" + strings.Repeat(" ", indent*(depth+1)))
		case i > 0:
			b.WriteString(", ")
		}
		if v.keys != nil {
			pyString(b, v.keys[i])
			b.WriteString(": ")
		}
		e.write(b, indent, depth+1)
	}
	if indent > 0 {
		b.WriteString("\n" + strings.Repeat(" ", indent*depth))
	}
	b.WriteString(close)
}

// pyString writes s quoted as json.dumps(s, ensure_ascii=False) does.
func pyString(b *strings.Builder, s string) {
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		default:
			if r < 0x20 {
				fmt.Fprintf(b, `\u%04x`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
}

// pyNumber is a JSON number as Python prints it after json.loads: an
// integer as its digits (without a minus on zero), anything with a fraction
// or an exponent as repr(float): the shortest digits that round-trip, fixed
// notation with ".0" when the point falls within 16 digits, else d.ddde±XX.
func pyNumber(s string) string {
	if !strings.ContainsAny(s, ".eE") {
		if strings.Trim(s, "-0") == "" {
			return "0"
		}
		return s
	}
	f, err := strconv.ParseFloat(s, 64)
	switch {
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	case err != nil:
		return s
	}
	if f == 0 {
		if math.Signbit(f) {
			return "-0.0"
		}
		return "0.0"
	}
	e := strconv.FormatFloat(f, 'e', -1, 64) // -d.ddde±XX
	sign := ""
	if e[0] == '-' {
		sign, e = "-", e[1:]
	}
	mant, exp, _ := strings.Cut(e, "e")
	digits := strings.Replace(mant, ".", "", 1)
	x, _ := strconv.Atoi(exp)
	point := x + 1 // digits before the decimal point
	switch {
	case point > 16 || point <= -4:
		m := digits[:1]
		if len(digits) > 1 {
			m += "." + digits[1:]
		}
		es := "+"
		if x < 0 {
			es, x = "-", -x
		}
		return fmt.Sprintf("%s%se%s%02d", sign, m, es, x)
	case point <= 0:
		return sign + "0." + strings.Repeat("0", -point) + digits
	case point >= len(digits):
		return sign + digits + strings.Repeat("0", point-len(digits)) + ".0"
	}
	return sign + digits[:point] + "." + digits[point:]
}
