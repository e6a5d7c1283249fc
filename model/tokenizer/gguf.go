package tokenizer

import (
	"fmt"

	"github.com/damascus-llm/damascus/gguf"
)

// metadata is what the loader needs from a GGUF file (or a list of KVs).
type metadata interface {
	Lookup(key string) (gguf.Value, bool)
}

// FromGGUF builds the tokenizer stored in a GGUF file's tokenizer.* keys.
func FromGGUF(f *gguf.File) (*Tokenizer, error) {
	return fromMetadata(f)
}

// FromKV builds a tokenizer from metadata entries (for instance
// llama3vocab's), without a file.
func FromKV(kvs []gguf.KV) (*Tokenizer, error) {
	m := make(kvMap, len(kvs))
	for _, kv := range kvs {
		m[kv.Key] = kv.Value
	}
	return fromMetadata(m)
}

type kvMap map[string]gguf.Value

func (m kvMap) Lookup(key string) (gguf.Value, bool) {
	v, ok := m[key]
	return v, ok
}

// SpecFromGGUF reads the tokenizer.* keys into a Spec.
func SpecFromGGUF(f *gguf.File) (Spec, error) { return specFrom(f) }

func fromMetadata(md metadata) (*Tokenizer, error) {
	spec, err := specFrom(md)
	if err != nil {
		return nil, err
	}
	return New(spec)
}

func specFrom(md metadata) (Spec, error) {
	var s Spec
	var err error
	if s.Model, err = str(md, "tokenizer.ggml.model", true); err != nil {
		return s, err
	}
	if s.Pre, err = str(md, "tokenizer.ggml.pre", false); err != nil {
		return s, err
	}
	if s.ChatTemplate, err = str(md, "tokenizer.chat_template", false); err != nil {
		return s, err
	}
	v, ok := md.Lookup("tokenizer.ggml.tokens")
	if !ok {
		return s, fmt.Errorf("%w: cannot find tokenizer vocab (tokenizer.ggml.tokens)", ErrInvalid)
	}
	if s.Tokens, ok = v.Slice().([]string); !ok {
		return s, fmt.Errorf("%w: tokenizer.ggml.tokens is %s, want an array of strings", ErrInvalid, v.Type())
	}
	if v, ok := md.Lookup("tokenizer.ggml.scores"); ok {
		switch a := v.Slice().(type) {
		case []float32:
			s.Scores = a
		case []int32:
			s.Scores = make([]float32, len(a))
			for i, x := range a {
				s.Scores[i] = float32(x)
			}
		default:
			return s, fmt.Errorf("%w: tokenizer.ggml.scores is %s, want f32 or i32 array", ErrInvalid, v.Type())
		}
	}
	if v, ok := md.Lookup("tokenizer.ggml.token_type"); ok {
		a, ok := v.Slice().([]int32)
		if !ok {
			return s, fmt.Errorf("%w: tokenizer.ggml.token_type is not an i32 array", ErrInvalid)
		}
		s.Types = make([]TokenType, len(a))
		for i, x := range a {
			s.Types[i] = TokenType(x)
		}
	}
	if v, ok := md.Lookup("tokenizer.ggml.merges"); ok {
		if s.Merges, ok = v.Slice().([]string); !ok {
			return s, fmt.Errorf("%w: tokenizer.ggml.merges is not an array of strings", ErrInvalid)
		}
	}
	for key, dst := range map[string]**uint32{
		"tokenizer.ggml.bos_token_id":     &s.BOS,
		"tokenizer.ggml.eos_token_id":     &s.EOS,
		"tokenizer.ggml.eot_token_id":     &s.EOT,
		"tokenizer.ggml.eom_token_id":     &s.EOM,
		"tokenizer.ggml.unknown_token_id": &s.UNK,
		"tokenizer.ggml.padding_token_id": &s.PAD,
	} {
		if v, ok := md.Lookup(key); ok {
			x, ok := v.Uint64()
			if !ok || x > 0xFFFFFFFF {
				return s, fmt.Errorf("%w: %s = %v, want a u32", ErrInvalid, key, v)
			}
			id := uint32(x)
			*dst = &id
		}
	}
	for key, dst := range map[string]**bool{
		"tokenizer.ggml.add_bos_token":    &s.AddBOS,
		"tokenizer.ggml.add_eos_token":    &s.AddEOS,
		"tokenizer.ggml.add_space_prefix": &s.AddSpacePrefix,
	} {
		if v, ok := md.Lookup(key); ok {
			b, ok := v.Bool()
			if !ok {
				return s, fmt.Errorf("%w: %s = %v, want a bool", ErrInvalid, key, v)
			}
			*dst = &b
		}
	}
	return s, nil
}

func str(md metadata, key string, required bool) (string, error) {
	v, ok := md.Lookup(key)
	if !ok {
		if required {
			return "", fmt.Errorf("%w: %s missing", ErrInvalid, key)
		}
		return "", nil
	}
	s, ok := v.Str()
	if !ok {
		return "", fmt.Errorf("%w: %s is %s, want a string", ErrInvalid, key, v.Type())
	}
	return s, nil
}
