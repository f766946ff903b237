package synth

import (
	"fmt"
	"strings"
)

// minVocab is the smallest vocabulary SPMVocab builds: the three special
// tokens, 256 byte tokens and the printable ASCII characters.
const minVocab = 3 + 256 + 96

// Token types, as in tokenizer.ggml.token_type.
const (
	tokenNormal  = 1
	tokenUnknown = 2
	tokenControl = 3
	tokenByte    = 6
)

// Special token ids of the generated vocabulary.
const (
	UnknownID = 0
	BOSID     = 1
	EOSID     = 2
)

// Vocab is a SentencePiece-style ("llama") vocabulary: parallel slices of
// token texts, scores and token types.
type Vocab struct {
	Tokens []string
	Scores []float32
	Types  []int32
}

// words are common English words, most frequent first; they become
// "▁word" pieces near the top of the vocabulary.
var words = strings.Fields(`the of and to a in is that for it as was with be by on not he I this are
or his from at which but have an they you were her she there one all we their been has would when
if will more no out so said what up its about into than them can only other new some time could
these two may then do first any my now such like our over man me even most made after also did
many before must through back years where much your way well down should because each just those
people how too little state good very make world still own see men work long get here between both
life being under never day same another know while last might us great old year off come since
against go came right used take three states himself few house use during without again place
American around however home small found Mrs thought went say part once general high upon school
every don't does got united left number course war until always away something fact though water
less public put think almost hand enough far took head yet government system better set told
nothing night end why called didn't eyes find going look asked later knew point next program city
business give group toward young days let room president side social given present several order
national possible rather second face per among form important often things looked early white case
John become large big need four within felt along children saw best church ever least power
development light thing seemed family interest want members mind country area others done turned
although open God service certain kind problem began different door thus help sense means whole
matter perhaps itself York it's times law human line above name example action company hands local
show whether five history gave today either act feet across taken past quite anything seen having
death week experience body word half really field am car words already themselves information tell
together college shall money period held keep sure free seems real behind cannot miss political air
question making office brought whose special heard major problems ago became federal moment study
available known result street economic boy position reason change south board individual job areas
society west close turn love community true court force full seem am story`)

// fragments are word pieces that occur inside words.
var fragments = strings.Fields(`ing ed er es en on in an re at or al ar ic le it is ly ent ion tion
ation ter st nd th he ou ve se ro ri ra de co ll ne ment ers ity ous ive able ness less ful ism ist
ize est ance ence ant ure ight ound ake ine ate ide ory ary ial ical`)

// onsets, vowels and codas make pronounceable syllables to fill a
// vocabulary of any size.
var (
	onsets = strings.Fields("b c d f g h j k l m n p r s t v w z bl br ch cl cr dr fl fr gl gr pl pr sc sh sl sm sn sp st str th tr wh")
	vowels = strings.Fields("a e i o u y ai ea ee oo ou")
	codas  = []string{"", "n", "r", "s", "t", "l", "m", "nd", "st", "ng", "ck", "rt", "nt", "x"}
)

// SPMVocab returns a LLaMA-style SentencePiece vocabulary of n tokens:
// <unk>, <s>, </s>, the 256 byte tokens <0x00>…<0xFF>, then normal pieces
// ("▁the", "ing", letters, syllables) with decreasing scores. Every piece's
// prefixes come before it, so llama.cpp's SPM merge algorithm can reach
// every piece. n must be at least 355.
func SPMVocab(n int) (Vocab, error) {
	if n < minVocab {
		return Vocab{}, fmt.Errorf("synth: vocabulary of %d tokens is smaller than %d", n, minVocab)
	}
	v := Vocab{Tokens: make([]string, 0, n), Scores: make([]float32, 0, n), Types: make([]int32, 0, n)}
	seen := make(map[string]bool, n)
	add := func(piece string, score float32, typ int32) {
		seen[piece] = true
		v.Tokens = append(v.Tokens, piece)
		v.Scores = append(v.Scores, score)
		v.Types = append(v.Types, typ)
	}
	add("<unk>", 0, tokenUnknown)
	add("<s>", 0, tokenControl)
	add("</s>", 0, tokenControl)
	for b := range 256 {
		add(fmt.Sprintf("<0x%02X>", b), 0, tokenByte)
	}
	// Normal pieces: the score falls by one per piece, so that earlier
	// pieces merge first. The single characters are kept in reserve for
	// the end of the vocabulary (as in LLaMA's) but always included.
	var chars []string
	chars = append(chars, "▁")
	for c := byte('!'); c <= '~'; c++ {
		chars = append(chars, string(c))
	}
	room := n - len(v.Tokens) - len(chars)
	normal := func(piece string) bool {
		if room <= 0 {
			return false
		}
		if !seen[piece] {
			add(piece, -float32(len(v.Tokens)-259), tokenNormal)
			room--
		}
		return true
	}
	// withPrefixes adds piece after all of its prefixes of two or more
	// characters.
	withPrefixes := func(piece string) bool {
		rs := []rune(piece)
		for i := 2; i <= len(rs); i++ {
			if !normal(string(rs[:i])) {
				return false
			}
		}
		return true
	}
	fill := func() {
		for _, w := range words {
			if !withPrefixes("▁" + w) {
				return
			}
		}
		for _, f := range fragments {
			if !withPrefixes(f) {
				return
			}
		}
		for _, w := range words[:100] {
			if !withPrefixes("▁" + strings.ToUpper(w[:1]) + w[1:]) {
				return
			}
		}
		var syllables []string
		for _, o := range onsets {
			for _, vw := range vowels {
				for _, c := range codas {
					syllables = append(syllables, o+vw+c)
				}
			}
		}
		for _, s := range syllables {
			if !withPrefixes("▁"+s) || !withPrefixes(s) {
				return
			}
		}
		for _, a := range syllables {
			for _, b := range syllables {
				if !withPrefixes("▁"+a+b) || !withPrefixes(a+b) {
					return
				}
			}
		}
	}
	fill()
	for _, c := range chars {
		if !seen[c] {
			add(c, -float32(len(v.Tokens)-259), tokenNormal)
		}
	}
	// Only if the syllable pairs ran out (n above ~10 million): numbered
	// filler pieces.
	for i := 0; len(v.Tokens) < n; i++ {
		if p := fmt.Sprintf("▁x%d", i); !seen[p] {
			add(p, -float32(len(v.Tokens)-259), tokenNormal)
		}
	}
	return v, nil
}
