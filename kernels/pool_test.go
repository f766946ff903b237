package kernels

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/qsf-llm/qsf/quant"
)

// TestPoolMatVec checks that a pool of any size gives exactly the results
// of the single-threaded MatVec, under every tier.
func TestPoolMatVec(t *testing.T) {
	defer SetTier(DefaultTier().Name())
	r := rand.New(rand.NewPCG(7, 8))
	for _, threads := range []int{1, 2, 3} {
		p := NewPool(threads)
		for typ := range refDots {
			if _, err := quant.Lookup(typ); err != nil {
				continue
			}
			for _, sh := range shapesFor(typ) {
				w := randomRows(r, typ, sh.rows, sh.cols)
				act := randomRows(r, vecDotType[typ], 1, sh.cols)
				for _, name := range Tiers() {
					SetTier(name)
					p.base = DefaultTier()
					want := make([]float32, sh.rows)
					MatVec(typ, want, w, sh.cols, act)
					got := make([]float32, sh.rows)
					p.MatVec(typ, got, w, sh.cols, act)
					for i := range got {
						if got[i] != want[i] {
							t.Errorf("threads=%d %s/%v/%dx%d row %d: pool %g, MatVec %g",
								threads, name, typ, sh.rows, sh.cols, i, got[i], want[i])
						}
					}
				}
			}
		}
		p.Close()
		p.Close() // idempotent
	}
}

// TestPoolParallel checks that Parallel covers [0,n) exactly once, also
// after the workers have parked.
func TestPoolParallel(t *testing.T) {
	for _, threads := range []int{1, 2, 4} {
		p := NewPool(threads)
		if p.Threads() != threads {
			t.Errorf("Threads() = %d, want %d", p.Threads(), threads)
		}
		for _, n := range []int{0, 1, 2, 3, 7, 100, 1000} {
			hits := make([]atomic.Int32, n)
			p.Parallel(n, func(lo, hi int) {
				if lo >= hi {
					t.Errorf("n=%d: empty range [%d,%d)", n, lo, hi)
				}
				for i := lo; i < hi; i++ {
					hits[i].Add(1)
				}
			})
			for i := range hits {
				if h := hits[i].Load(); h != 1 {
					t.Fatalf("threads=%d n=%d: index %d done %d times", threads, n, i, h)
				}
			}
			if n == 3 {
				time.Sleep(20 * time.Millisecond) // let the workers park
			}
		}
		p.Close()
	}
}

// TestPoolConcurrentCallers checks that calls from several goroutines are
// serialized correctly (run with -race).
func TestPoolConcurrentCallers(t *testing.T) {
	p := NewPool(2)
	defer p.Close()
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; k < 200; k++ {
				var sum atomic.Int64
				p.Parallel(64, func(lo, hi int) {
					for i := lo; i < hi; i++ {
						sum.Add(int64(i))
					}
				})
				if s := sum.Load(); s != 64*63/2 {
					t.Errorf("sum = %d", s)
					return
				}
			}
		}()
	}
	wg.Wait()
}

type counter struct{ n atomic.Int64 }

func (c *counter) add(lo, hi int) { c.n.Add(int64(hi - lo)) }

// TestPoolNoAlloc checks that neither MatVec nor Parallel with a pre-built
// method value allocates.
func TestPoolNoAlloc(t *testing.T) {
	if _, err := quant.Lookup(quant.Q8_0); err != nil {
		t.Skip(err)
	}
	p := NewPool(2)
	defer p.Close()
	r := rand.New(rand.NewPCG(9, 10))
	w := randomRows(r, quant.Q8_0, 64, 256)
	act := randomRows(r, quant.Q8_0, 1, 256)
	out := make([]float32, 64)
	var c counter
	fn := c.add
	// The generic tier is package quant's Dot, whose allocations are not
	// the pool's; measure the pool with an assembly kernel when there is one.
	if current.Load().rowsOf(quant.Q8_0) != nil {
		if a := testing.AllocsPerRun(100, func() { p.MatVec(quant.Q8_0, out, w, 256, act) }); a != 0 {
			t.Errorf("Pool.MatVec allocates %v times per call", a)
		}
	}
	if a := testing.AllocsPerRun(100, func() { p.Parallel(100, fn) }); a != 0 {
		t.Errorf("Pool.Parallel allocates %v times per call", a)
	}
}

// TestPoolNoSpin runs jobs on a pool whose idle workers park at once
// (SetSpinTime(0)), so that every job wakes them: each must still cover
// its whole range exactly once, and none may be lost (a lost wake-up
// hangs the test).
func TestPoolNoSpin(t *testing.T) {
	p := NewPool(3)
	defer p.Close()
	p.SetSpinTime(0)
	counts := make([]int32, 97)
	fn := func(lo, hi int) {
		// Long enough pieces for the woken workers to take some.
		for t := time.Now(); time.Since(t) < 20*time.Microsecond; {
		}
		for i := lo; i < hi; i++ {
			counts[i]++
		}
	}
	for job := 1; job <= 200; job++ {
		p.Parallel(len(counts), fn)
		if job%50 == 0 {
			time.Sleep(time.Millisecond) // let the workers park
		}
		for i, c := range counts {
			if int(c) != job {
				t.Fatalf("job %d: element %d done %d times, want %d", job, i, c, job)
			}
		}
	}
}

// TestPoolRest checks that Rest(d) parks the idle workers of a pool whose
// workers otherwise poll for an hour, that the next job still runs on
// every element once and ends the rest (the workers poll again after it),
// and that jobs between rests lose no wake-up (a lost one hangs the test).
func TestPoolRest(t *testing.T) {
	p := NewPool(3)
	defer p.Close()
	p.SetSpinTime(time.Hour)
	counts := make([]int32, 97)
	fn := func(lo, hi int) {
		for i := lo; i < hi; i++ {
			counts[i]++
		}
	}
	allParked := func() bool {
		for _, wk := range p.workers {
			if !wk.parked.Load() {
				return false
			}
		}
		return true
	}
	for job := 1; job <= 100; job++ {
		p.Parallel(len(counts), fn)
		for i, c := range counts {
			if int(c) != job {
				t.Fatalf("job %d: element %d done %d times, want %d", job, i, c, job)
			}
		}
		if job%20 != 0 {
			p.Rest(time.Duration(job%3) * time.Microsecond) // jobs follow at once: some workers park, some not yet
			continue
		}
		// After a job the workers poll: none parks (for an hour).
		time.Sleep(5 * time.Millisecond)
		for i, wk := range p.workers {
			if wk.parked.Load() {
				t.Fatalf("job %d: worker %d parked before Rest", job, i)
			}
		}
		p.Rest(time.Millisecond)
		for deadline := time.Now().Add(time.Minute); !allParked(); time.Sleep(10 * time.Microsecond) {
			if time.Now().After(deadline) {
				t.Fatalf("job %d: the workers did not park after Rest", job)
			}
		}
	}
}
