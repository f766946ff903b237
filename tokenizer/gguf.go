package tokenizer

// Metadata is what the tokenizer needs from a GGUF file's key/values.
// Package format's *Metadata satisfies it.
type Metadata interface {
	String(key string) (string, bool)
	Uint(key string) (uint64, bool)
	Bool(key string) (bool, bool)
	Strings(key string) ([]string, bool)
	Float32s(key string) ([]float32, bool)
	Int32s(key string) ([]int32, bool)
}

// GGUF metadata keys read by FromGGUF.
const (
	keyModel       = "tokenizer.ggml.model"
	keyPre         = "tokenizer.ggml.pre"
	keyTokens      = "tokenizer.ggml.tokens"
	keyScores      = "tokenizer.ggml.scores"
	keyTypes       = "tokenizer.ggml.token_type"
	keyMerges      = "tokenizer.ggml.merges"
	keyBOS         = "tokenizer.ggml.bos_token_id"
	keyEOS         = "tokenizer.ggml.eos_token_id"
	keyEOT         = "tokenizer.ggml.eot_token_id"
	keyEOM         = "tokenizer.ggml.eom_token_id"
	keyUNK         = "tokenizer.ggml.unknown_token_id"
	keyPAD         = "tokenizer.ggml.padding_token_id"
	keyAddBOS      = "tokenizer.ggml.add_bos_token"
	keyAddEOS      = "tokenizer.ggml.add_eos_token"
	keyAddSpace    = "tokenizer.ggml.add_space_prefix"
	keyGeneralName = "general.name"
)

// FromGGUF builds a Tokenizer from GGUF metadata (tokenizer.ggml.*), with
// the defaults and fix-ups llama.cpp applies when it loads a vocabulary.
func FromGGUF(md Metadata) (*Tokenizer, error) {
	name, ok := md.String(keyModel)
	if !ok {
		return nil, errorf(ErrMalformed, "missing %s", keyModel)
	}
	var v *vocab
	switch name {
	case "llama":
		v = newVocab(SPM)
	case "gpt2":
		v = newVocab(BPE)
		merges, ok := md.Strings(keyMerges)
		if !ok {
			return nil, errorf(ErrMalformed, "missing %s", keyMerges)
		}
		v.merges = merges
	default:
		return nil, errorf(ErrUnsupported, "tokenizer model %q", name)
	}
	v.pre, _ = md.String(keyPre)
	v.name, _ = md.String(keyGeneralName)
	if v.tokens, ok = md.Strings(keyTokens); !ok {
		return nil, errorf(ErrMalformed, "missing %s", keyTokens)
	}
	if s, ok := md.Float32s(keyScores); ok {
		v.scores = s
	}
	if ty, ok := md.Int32s(keyTypes); ok {
		v.types = make([]TokenType, len(ty))
		for i, x := range ty {
			v.types[i] = TokenType(x)
		}
	}
	for key, dst := range map[string]*int{keyBOS: &v.bos, keyEOS: &v.eos, keyEOT: &v.eot, keyEOM: &v.eom, keyUNK: &v.unk, keyPAD: &v.pad} {
		if x, ok := md.Uint(key); ok && x < uint64(len(v.tokens)) {
			*dst = int(x)
		}
	}
	if b, ok := md.Bool(keyAddBOS); ok {
		v.addBOS = boolPtr(b)
	}
	if b, ok := md.Bool(keyAddEOS); ok {
		v.addEOS = boolPtr(b)
	}
	if b, ok := md.Bool(keyAddSpace); ok {
		v.addSpace = boolPtr(b)
	}
	return v.build()
}
