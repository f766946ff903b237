package grammar_test

import (
	"fmt"
	"log"

	"github.com/qsf-llm/qsf/grammar"
)

func ExampleParse() {
	g, err := grammar.Parse(`
root  ::= "(" pair ("," pair)* ")"
pair  ::= [a-z]+ "=" digit{1,3}
digit ::= [0-9]   # one decimal digit
`)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(g.Match("(a=1,bc=234)"), g.Match("(a=1234)"))

	_, err = grammar.Parse("root ::= [a-z")
	fmt.Println(err)
	// Output:
	// true false
	// grammar: line 1, column 10: unterminated character class
}

func ExampleFilter() {
	g := grammar.MustParse(`root ::= ("yes" | "no") "."`)
	pieces := []string{"y", "yes", "n", "no", "o", ".", "maybe", ""} // the last is EOS
	f := grammar.NewFilter(g, grammar.NewVocab(pieces, []int{7}))

	allowed := func() (names []string) {
		bits := f.Allowed()
		for id, p := range pieces {
			if bits[id/64]>>(id%64)&1 != 0 {
				if p == "" {
					p = "<eos>"
				}
				names = append(names, p)
			}
		}
		return names
	}
	fmt.Println(allowed())
	f.Accept(2) // "n"
	fmt.Println(allowed())
	f.Accept(4) // "o"
	f.Accept(5) // "."
	fmt.Println(allowed(), f.Done())
	// Output:
	// [y yes n no]
	// [o]
	// [<eos>] true
}
