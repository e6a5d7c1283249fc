package ledger

import "github.com/damascus-llm/damascus/internal/cpufeat"

// HasFeature reports whether this process may use a CPU feature, named as in
// internal/cpufeat ("avx2", "fma", "avx512f", "avx512bw", "avx512vnni",
// "amx-int8", "asimd" ...). For AMX it also asks the OS for permission once.
// It is a variable so tests can simulate machines without a feature.
var HasFeature = cpufeat.Has

// KnownFeature reports whether name is a feature cpufeat can decide, so a
// misspelt requirement is rejected at registration instead of silently
// making a variant unavailable. It is a variable for the same reason as
// HasFeature.
var KnownFeature = cpufeat.Known
