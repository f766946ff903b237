package kernels

import (
	"strings"
	"testing"

	"github.com/qsf-llm/qsf/quant"
)

// TestMatVecRejects checks that inconsistent arguments panic with a message
// before any kernel can read out of bounds, and that a pool stays usable.
func TestMatVecRejects(t *testing.T) {
	if _, err := quant.Lookup(quant.Q8_0); err != nil {
		t.Skip(err)
	}
	p := NewPool(2)
	defer p.Close()
	row := make([]byte, 34)
	act := make([]byte, 34)
	cases := []struct {
		name string
		t    quant.Type
		out  []float32
		w    []byte
		cols int
		act  []byte
	}{
		{"short weights", quant.Q8_0, make([]float32, 2), row, 32, act},
		{"long weights", quant.Q8_0, make([]float32, 1), append(row, 0), 32, act},
		{"short activation", quant.Q8_0, make([]float32, 1), row, 32, act[:33]},
		{"partial block", quant.Q8_0, make([]float32, 1), row, 31, act},
		{"negative cols", quant.Q8_0, make([]float32, 1), row, -32, act},
		{"unsupported type", quant.I64, make([]float32, 1), make([]byte, 8), 1, make([]byte, 8)},
		{"unknown type", quant.Type(99), make([]float32, 1), row, 32, act},
	}
	for _, c := range cases {
		for _, f := range []struct {
			name string
			call func()
		}{
			{"MatVec", func() { MatVec(c.t, c.out, c.w, c.cols, c.act) }},
			{"Pool.MatVec", func() { p.MatVec(c.t, c.out, c.w, c.cols, c.act) }},
		} {
			msg := catch(f.call)
			if !strings.HasPrefix(msg, "kernels: ") {
				t.Errorf("%s with %s: panic %q, want a kernels: message", f.name, c.name, msg)
			}
		}
	}
	// The pool still works.
	out := make([]float32, 1)
	p.MatVec(quant.Q8_0, out, row, 32, act)
	if out[0] != 0 {
		t.Errorf("zero matrix gave %g", out[0])
	}
}

// catch runs f and returns its panic message, or "" if it returned.
func catch(f func()) (msg string) {
	defer func() {
		if r := recover(); r != nil {
			msg, _ = r.(string)
			if msg == "" {
				msg = "non-string panic"
			}
		}
	}()
	f()
	return ""
}
