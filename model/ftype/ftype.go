// Package ftype holds llama.cpp's model file types (the general.file_type
// key, enum llama_ftype) and the tensor-by-tensor type mix its quantizer
// (llama_tensor_get_type in src/llama-quant.cpp) chooses for the llama
// architecture, so that files made here carry the same types per tensor as
// files made by llama.cpp's own quantizer.
package ftype

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/damascus-llm/damascus/quant"
)

// A FileType is one llama_ftype: a name, its id and the tensor type most
// weights get.
type FileType struct {
	Name string
	ID   uint32     // general.file_type
	Base quant.Type // the default type of quantizable weights
}

// The file types whose rules are mirrored here (dense models, no importance
// matrix). Ids are llama.h's llama_ftype.
var fileTypes = []FileType{
	{"F32", 0, quant.F32},
	{"F16", 1, quant.F16},
	{"Q4_0", 2, quant.Q4_0},
	{"Q4_1", 3, quant.Q4_1},
	{"Q8_0", 7, quant.Q8_0},
	{"Q5_0", 8, quant.Q5_0},
	{"Q5_1", 9, quant.Q5_1},
	{"Q4_K_S", 14, quant.Q4_K},
	{"Q4_K_M", 15, quant.Q4_K},
	{"Q5_K_S", 16, quant.Q5_K},
	{"Q5_K_M", 17, quant.Q5_K},
	{"Q6_K", 18, quant.Q6_K},
	{"BF16", 32, quant.BF16},
}

// Parse returns the file type named s (case-insensitive, e.g. "Q4_K_M").
func Parse(s string) (FileType, error) {
	for _, ft := range fileTypes {
		if strings.EqualFold(ft.Name, s) {
			return ft, nil
		}
	}
	return FileType{}, fmt.Errorf("unknown file type %q (known: %s)", s, strings.Join(Names(), ", "))
}

// Names lists the supported file types.
func Names() []string {
	names := make([]string, len(fileTypes))
	for i, ft := range fileTypes {
		names[i] = ft.Name
	}
	return names
}

func (ft FileType) String() string { return ft.Name }

// A Tensor is what the mix rules look at: name, shape (ne0 first) and the
// type the tensor has now (kept by tensors that are never quantized).
type Tensor struct {
	Name string
	Dims []uint64
	Type quant.Type
}

// layerOf returns the N of a "blk.N." name, or −1, as llama.cpp's
// weight_name_comparer reads it with sscanf.
func layerOf(name string) int {
	rest, ok := strings.CutPrefix(name, "blk.")
	if !ok {
		return -1
	}
	end := 0
	for end < len(rest) && rest[end] >= '0' && rest[end] <= '9' {
		end++
	}
	n, err := strconv.Atoi(rest[:end])
	if err != nil {
		return -1
	}
	return n
}

// Compare orders tensor names as llama.cpp's model loader does (and so its
// quantizer visits and writes them): tensors outside blocks first, then block
// by block, by name within each.
func Compare(a, b string) int {
	if c := cmp.Compare(layerOf(a), layerOf(b)); c != 0 {
		return c
	}
	return strings.Compare(a, b)
}

// Sort sorts tensors into llama.cpp's order (see Compare).
func Sort(tensors []Tensor) {
	slices.SortStableFunc(tensors, func(a, b Tensor) int { return Compare(a.Name, b.Name) })
}

type category int

const (
	catOther category = iota
	catTokenEmbd
	catAttnQ
	catAttnV
	catAttnK
	catAttnQKV
	catAttnKVB
	catAttnOutput
	catFFNUp
	catFFNGate
	catFFNDown
	catOutput
)

// categoryByPart is tensor_get_category's name tests after the exact
// names, in its order: the first part a name contains gives its category.
var categoryByPart = []struct {
	part string
	cat  category
}{
	{"attn_qkv.weight", catAttnQKV},
	{"attn_kv_b.weight", catAttnKVB},
	{"attn_v.weight", catAttnV},
	{"attn_k.weight", catAttnK},
	{"attn_q.weight", catAttnQ},
	{"attn_output.weight", catAttnOutput},
	{"ffn_up", catFFNUp},
	{"ffn_gate", catFFNGate},
	{"ffn_down", catFFNDown},
}

// categoryOf is llama.cpp's tensor_get_category.
func categoryOf(name string) category {
	switch name {
	case "output.weight":
		return catOutput
	case "token_embd.weight", "per_layer_token_embd.weight":
		return catTokenEmbd
	}
	for _, c := range categoryByPart {
		if strings.Contains(name, c.part) {
			return c.cat
		}
	}
	return catOther
}

func (c category) isAttnV() bool { return c == catAttnV || c == catAttnQKV || c == catAttnKVB }

// nDims counts dimensions up to the last one above 1 (ggml_n_dims).
func nDims(dims []uint64) int {
	n := len(dims)
	for n > 1 && dims[n-1] == 1 {
		n--
	}
	return max(n, 1)
}

// quantizable is llama.cpp's tensor_allows_quantization for the tensors a
// llama-family file can hold: 2-D weights except norms and a few small
// special tensors.
func quantizable(t Tensor) bool {
	if nDims(t.Dims) < 2 || !strings.HasSuffix(t.Name, "weight") {
		return false
	}
	for _, s := range []string{"_norm.weight", "ffn_gate_inp.weight", "altup", "laurel",
		"per_layer_model_proj", "ssm_conv1d", "shortconv.conv.weight", "attn_rel_b.weight",
		".position_embd", ".rel_pos", ".patch_embd"} {
		if strings.Contains(t.Name, s) {
			return false
		}
	}
	return t.Name != "position_embd.weight" && t.Name != "token_types.weight"
}

// useMoreBits is llama.cpp's use_more_bits: the first and last eighth of the
// layers and every third one between get more bits.
func useMoreBits(i, n int) bool {
	return i < n/8 || i >= 7*n/8 || (i-n/8)%3 == 2
}

// Plan returns the type each tensor gets in a file of type ft, aligned with
// tensors. It visits them in llama.cpp's order (Compare), whose running
// counts of attn_v and ffn_down tensors decide which layers get more bits;
// nLayer is the model's block count.
func (ft FileType) Plan(tensors []Tensor, nLayer int) ([]quant.Type, error) {
	order := make([]int, len(tensors))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return Compare(tensors[a].Name, tensors[b].Name) })

	st := state{ft: ft, tied: true, nFFNDown: nLayer}
	for _, t := range tensors {
		c := categoryOf(t.Name)
		if c.isAttnV() {
			st.nAttnV++
		}
		if c == catOutput {
			st.tied = false
		}
	}
	types := make([]quant.Type, len(tensors))
	for _, i := range order {
		t := tensors[i]
		if !quantizable(t) {
			types[i] = t.Type
			continue
		}
		typ := ft.Base
		if quantized(typ) {
			typ = st.choose(t, typ)
			var err error
			if typ, err = fallback(t, typ); err != nil {
				return nil, err
			}
		}
		types[i] = typ
	}
	return types, nil
}

func quantized(t quant.Type) bool { return t.BlockSize() > 1 }

// state carries llama.cpp's quantize_state_impl counters.
type state struct {
	ft                 FileType
	tied               bool // no output.weight: token_embd doubles as the output head
	nAttnV, iAttnV     int
	nFFNDown, iFFNDown int
}

// choose is llama_tensor_get_type_impl restricted to the file types above,
// for dense (non-expert) models that are not Falcon or 70B.
func (st *state) choose(t Tensor, typ quant.Type) quant.Type {
	c := categoryOf(t.Name)
	name := st.ft.Name
	switch {
	case c == catOutput || (st.tied && c == catTokenEmbd):
		if t.Dims[0]%uint64(typ.BlockSize()) != 0 {
			return quant.Q8_0
		}
		if typ != quant.Q8_0 {
			return quant.Q6_K
		}
	case c == catTokenEmbd:
		// Untied embeddings keep the base type for these file types.
	case c.isAttnV():
		switch {
		case (name == "Q4_K_M" || name == "Q5_K_M") && useMoreBits(st.iAttnV, st.nAttnV):
			typ = quant.Q6_K
		case name == "Q4_K_S" && st.iAttnV < 4:
			typ = quant.Q5_K
		}
		st.iAttnV++
	case c == catFFNDown:
		i, n := st.iFFNDown, st.nFFNDown
		switch {
		case name == "Q4_K_M" && useMoreBits(i, n):
			typ = quant.Q6_K
		case name == "Q5_K_M" && useMoreBits(i, n):
			typ = quant.Q6_K
		case name == "Q4_K_S" && i < n/8:
			typ = quant.Q5_K
		}
		st.iFFNDown++
	}
	return typ
}

// fallback is llama.cpp's tensor_type_fallback: a row length that is not a
// whole number of blocks moves to a type with 32-value blocks, or to F16.
func fallback(t Tensor, typ quant.Type) (quant.Type, error) {
	ncols := t.Dims[0]
	if ncols%uint64(typ.BlockSize()) == 0 {
		return typ, nil
	}
	var alt quant.Type
	switch typ {
	case quant.Q2_K, quant.Q3_K:
		alt = quant.Q4_0
	case quant.Q4_K:
		alt = quant.Q5_0
	case quant.Q5_K:
		alt = quant.Q5_1
	case quant.Q6_K:
		alt = quant.Q8_0
	default:
		return 0, fmt.Errorf("tensor %s: rows of %d values do not fit %s blocks and llama.cpp defines no fallback", t.Name, ncols, typ)
	}
	if ncols%uint64(alt.BlockSize()) != 0 {
		alt = quant.F16
	}
	return alt, nil
}
