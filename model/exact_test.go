package model

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"testing"
)

// TestSincosfMatchesGlibc checks sincosf against glibc's sinf and cosf
// (x86-64, FMA build) on RoPE angle schedules and random floats. The
// golden file was written by a small C program calling sinf/cosf; each line
// holds the bits of the angle, its sine and its cosine.
func TestSincosfMatchesGlibc(t *testing.T) {
	f, err := os.Open("testdata/sincosf.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		var a, s, c uint32
		if _, err := fmt.Sscanf(sc.Text(), "%x %x %x", &a, &s, &c); err != nil {
			t.Fatalf("line %d: %v", n+1, err)
		}
		n++
		gs, gc := sincosf(math.Float32frombits(a))
		if math.Float32bits(gs) != s || math.Float32bits(gc) != c {
			t.Errorf("sincosf(%g) = %g, %g; glibc %g, %g", math.Float32frombits(a), gs, gc, math.Float32frombits(s), math.Float32frombits(c))
		}
	}
	if n < 1000 {
		t.Fatalf("only %d golden values", n)
	}
}
