package arena

import (
	"errors"
	"testing"
	"unsafe"
)

func TestAlloc(t *testing.T) {
	a, err := New(1000)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	for _, tc := range []struct {
		name string
		n    int
		ok   bool
	}{
		{"a", 1, true}, {"b", 63, true}, {"c", 64, true}, {"d", 0, true}, {"e", 900, false}, {"f", 100, true}, {"neg", -1, false},
	} {
		b, err := a.Alloc(tc.name, tc.n)
		if (err == nil) != tc.ok {
			t.Fatalf("%s: Alloc(%d) error %v, want ok=%v", tc.name, tc.n, err, tc.ok)
		}
		if !tc.ok {
			if !errors.Is(err, ErrExhausted) {
				t.Fatalf("%s: error %v is not ErrExhausted", tc.name, err)
			}
			continue
		}
		if len(b) != tc.n {
			t.Fatalf("%s: len %d", tc.name, len(b))
		}
		if tc.n > 0 && uintptr(unsafe.Pointer(&b[0]))%Align != 0 {
			t.Fatalf("%s: not aligned", tc.name)
		}
		for i := range b {
			b[i] = 0xff
		}
	}
	st := a.Stats()
	if st.Reserved != 1024 || st.Used != 64+64+64+0+128 || len(st.Regions) != 5 {
		t.Fatalf("stats %+v", st)
	}
}

func TestMarkReset(t *testing.T) {
	a, err := New(256)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	keep, _ := a.Alloc("keep", 64)
	keep[0] = 7
	a.Mark()
	s1, _ := a.Alloc("scratch", 128)
	s1[0] = 9
	a.Reset()
	if a.Stats().Used != 64 || len(a.Stats().Regions) != 1 {
		t.Fatalf("after Reset: %+v", a.Stats())
	}
	s2, err := a.Alloc("scratch", 192)
	if err != nil {
		t.Fatal(err)
	}
	if s2[0] != 0 || keep[0] != 7 {
		t.Fatal("Reset did not zero scratch or clobbered a permanent region")
	}
	if a.Stats().Peak != 256 {
		t.Fatalf("peak %d", a.Stats().Peak)
	}
}

func TestAllocDoesNotAllocate(t *testing.T) {
	a, err := New(1 << 20)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	a.Alloc("x", 10)
	a.Mark()
	n := testing.AllocsPerRun(100, func() {
		a.Reset()
		a.Alloc("x", 10) // regions slice has capacity from the first round
	})
	if n > 0 {
		t.Fatalf("%v allocations per Reset+Alloc", n)
	}
}
