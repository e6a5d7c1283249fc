package jsonmode

// A Union is the texts valid under any of its schemas. Unlike anyOf
// inside a schema, its alternatives may begin alike (tool calls: one
// schema a tool, each {"name": its name, "parameters": its own}): every
// alternative is followed byte by byte until the text rules it out.
type Union []*Schema

// A UnionState recognizes prefixes of texts valid under a Union: the
// states of the alternatives the text has not yet ruled out.
type UnionState struct{ live []SchemaState }

// Start returns the state before the first byte.
func (u Union) Start() UnionState {
	st := UnionState{live: make([]SchemaState, 0, len(u))}
	for _, s := range u {
		st.live = append(st.live, s.Start())
	}
	return st
}

// WriteString advances every live alternative over p, drops those it
// rules out, and reports whether one is left.
func (u *UnionState) WriteString(p string) bool {
	live := u.live[:0]
	for _, s := range u.live {
		if s.WriteString(p) {
			live = append(live, s)
		}
	}
	clear(u.live[len(live):])
	u.live = live
	return len(live) > 0
}

// Done reports whether the text is complete under a live alternative.
func (u *UnionState) Done() bool {
	for i := range u.live {
		if u.live[i].Done() {
			return true
		}
	}
	return false
}
