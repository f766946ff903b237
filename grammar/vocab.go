package grammar

import (
	"slices"
	"strings"
)

// Vocab is a model's vocabulary arranged for token filtering: a byte trie
// of the tokens' texts. It is immutable and may be shared by any number of
// Filters.
type Vocab struct {
	nodes  []trieNode
	tokens []int32 // token ids, grouped by the trie node they end at
	eog    []int32 // end-of-generation tokens
	pieces []string
	size   int
}

// trieNode is one byte of a trie path; its children are contiguous.
type trieNode struct {
	b                  byte
	first, numChildren int32
	tokStart, tokEnd   int32 // tokens whose text ends here
}

// NewVocab builds the trie of pieces, the byte text of each token id as it
// appears in the output. Tokens with empty text (control tokens) are never
// allowed; the ids in eog are allowed only where the grammar accepts.
func NewVocab(pieces []string, eog []int) *Vocab {
	v := &Vocab{size: len(pieces), pieces: slices.Clone(pieces)}
	isEOG := make(map[int]bool, len(eog))
	for _, id := range eog {
		if id >= 0 && id < len(pieces) {
			isEOG[id] = true
			v.eog = append(v.eog, int32(id))
		}
	}
	ids := make([]int32, 0, len(pieces))
	for id, p := range pieces {
		if p != "" && !isEOG[id] {
			ids = append(ids, int32(id))
		}
	}
	slices.SortFunc(ids, func(a, b int32) int { return strings.Compare(pieces[a], pieces[b]) })
	v.tokens = make([]int32, 0, len(ids))
	v.nodes = append(v.nodes, trieNode{})
	v.build(0, pieces, ids, 0)
	return v
}

// build fills node n from ids, which share their first depth bytes.
func (v *Vocab) build(n int32, pieces []string, ids []int32, depth int) {
	i := 0
	start := int32(len(v.tokens))
	for i < len(ids) && len(pieces[ids[i]]) == depth {
		v.tokens = append(v.tokens, ids[i])
		i++
	}
	v.nodes[n].tokStart, v.nodes[n].tokEnd = start, int32(len(v.tokens))
	// Group the rest by their next byte; children are allocated together.
	type group struct {
		b      byte
		lo, hi int
	}
	var groups []group
	for j := i; j < len(ids); {
		b := pieces[ids[j]][depth]
		k := j
		for k < len(ids) && pieces[ids[k]][depth] == b {
			k++
		}
		groups = append(groups, group{b, j, k})
		j = k
	}
	first := int32(len(v.nodes))
	v.nodes[n].first, v.nodes[n].numChildren = first, int32(len(groups))
	for _, gr := range groups {
		v.nodes = append(v.nodes, trieNode{b: gr.b})
	}
	for k, gr := range groups {
		v.build(first+int32(k), pieces, ids[gr.lo:gr.hi], depth+1)
	}
}

// Size is the number of token ids.
func (v *Vocab) Size() int { return v.size }
