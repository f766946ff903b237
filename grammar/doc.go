// Package grammar constrains token sampling to a formal language.
//
// A grammar is written in GBNF, the notation of llama.cpp's grammars
// (rules "name ::= ...", alternatives "|", groups, the repetitions "*", "+",
// "?", "{m}", "{m,}" and "{m,n}", string literals, character classes with
// ranges and negation, "." for any character, escapes \x, \u, \U, \t, \r,
// \n, and "#" comments; the start symbol is the rule "root"). [Parse]
// compiles it into a pushdown automaton over bytes: every character class
// becomes the UTF-8 byte sequences of its code points, so a token that ends
// inside a multi-byte character is matched byte by byte and the next token
// completes it.
//
// A [Matcher] follows the automaton through a byte stream. A [Filter] adds
// a vocabulary ([NewVocab]): it computes the set of tokens whose bytes can
// continue the parse by walking the automaton's stacks through a byte trie
// of the vocabulary, once per distinct parser state (the masks are cached),
// and allows the end-of-generation tokens only where the grammar accepts.
//
// As in llama.cpp, left recursion is an error (so is a repetition of
// something that can be empty, which loops the same way); stricter than
// llama.cpp, so is a rule defined twice, a repetition bound above 4096 and
// an automaton above 65536 elements. Errors in the text are *SyntaxError
// values with a line and column.
//
// Unlike llama.cpp, which decodes bytes into code points without checking
// them, the automaton only produces well-formed UTF-8 (no surrogates, no
// overlong forms), so a negated class such as [^"] never lets through a
// byte that cannot start or continue a valid character.
package grammar
