package kernels

import (
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/qsf-llm/qsf/quant"
)

// spinLimit is how many times an idle worker polls for new work before it
// parks; at a few nanoseconds a poll that is some tens of microseconds,
// longer than the gap between two matrices of a forward pass.
const spinLimit = 20000

// rowAlign is the granularity of the row ranges Pool.MatVec hands out, so
// that every range starts on a whole block of rows for kernels that work
// on several rows at once.
const rowAlign = 4

// jobKind says what the pool's current job is.
type jobKind uint8

const (
	jobMatVec jobKind = iota
	jobParallel
	jobExit
)

// Pool is a fixed set of persistent worker goroutines that share the work of
// one MatVec or Parallel call at a time. Idle workers spin for a short while
// and then park, so back-to-back calls cost neither a goroutine start nor an
// allocation. The calling goroutine does its own share of every call.
//
// A Pool's methods may be called from several goroutines; calls are
// serialized. A Pool of one thread runs everything inline.
type Pool struct {
	threads int
	mu      sync.Mutex // serializes calls
	workers []*worker
	exited  sync.WaitGroup

	gen     atomic.Uint64 // bumped once per job
	pending atomic.Int32  // workers still busy with the current job

	// The current job, written by the caller before gen is bumped.
	kind     jobKind
	traits   *quant.Traits
	tier     *tier
	out      []float32
	w        []byte
	rowBytes int
	cols     int
	act      []byte
	aux      []byte // prepared activation data, reused across calls
	n        int
	fn       func(lo, hi int)
}

type worker struct {
	index  int // 1..threads-1; the caller is part 0
	parked atomic.Bool
	wake   chan struct{} // buffered 1
}

// NewPool starts a pool of threads workers, the caller included; threads <= 0
// means runtime.GOMAXPROCS(0).
func NewPool(threads int) *Pool {
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	p := &Pool{threads: threads}
	for i := 1; i < threads; i++ {
		wk := &worker{index: i, wake: make(chan struct{}, 1)}
		p.workers = append(p.workers, wk)
		p.exited.Add(1)
		go p.loop(wk)
	}
	return p
}

// Threads returns the number of threads that share each call, the caller
// included.
func (p *Pool) Threads() int { return p.threads }

// Close stops the workers and waits for them to exit. The pool must not be
// used afterwards. Close is idempotent.
func (p *Pool) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.workers == nil {
		return
	}
	p.kind = jobExit
	p.start()
	p.exited.Wait()
	p.workers = nil
	p.threads = 1
}

// MatVec is MatVec with the rows of out split into contiguous ranges, one
// per thread. It panics on inconsistent arguments as MatVec does.
func (p *Pool) MatVec(t quant.Type, out []float32, w []byte, cols int, act []byte) {
	tt, rowBytes := check(t, out, w, cols, act)
	if len(out) == 0 {
		return
	}
	tr := current.Load()
	p.mu.Lock()
	p.aux = tr.prepare(t, p.aux, act, cols)
	if p.threads == 1 || len(out) <= rowAlign {
		tr.run(tt, out, w, rowBytes, cols, act, p.aux)
		p.mu.Unlock()
		return
	}
	p.kind, p.traits, p.tier = jobMatVec, tt, tr
	p.out, p.w, p.rowBytes, p.cols, p.act = out, w, rowBytes, cols, act
	p.start()
	p.part(0)
	p.wait()
	p.out, p.w, p.act, p.traits = nil, nil, nil, nil
	p.mu.Unlock()
}

// Parallel calls fn on contiguous, disjoint ranges [lo, hi) that together
// cover [0, n), one range per thread, and returns when all calls have
// returned. Ranges may be empty ranges are skipped. Parallel does not
// allocate, so a method value built once can be passed on every call.
func (p *Pool) Parallel(n int, fn func(lo, hi int)) {
	if n <= 0 {
		return
	}
	if p.threads == 1 || n == 1 {
		fn(0, n)
		return
	}
	p.mu.Lock()
	p.kind, p.n, p.fn = jobParallel, n, fn
	p.start()
	p.part(0)
	p.wait()
	p.fn = nil
	p.mu.Unlock()
}

// start publishes the current job to the workers and wakes the parked ones.
func (p *Pool) start() {
	p.pending.Store(int32(len(p.workers)))
	p.gen.Add(1)
	for _, wk := range p.workers {
		if wk.parked.CompareAndSwap(true, false) {
			wk.wake <- struct{}{}
		}
	}
}

// wait returns once every worker has finished its part of the current job.
func (p *Pool) wait() {
	for spins := 0; p.pending.Load() != 0; spins++ {
		if spins > 100 {
			runtime.Gosched()
		}
	}
}

// split returns part i of [0,n) cut into p.threads ranges aligned to align.
func (p *Pool) split(i, n, align int) (lo, hi int) {
	blocks := (n + align - 1) / align
	lo = blocks * i / p.threads * align
	hi = blocks * (i + 1) / p.threads * align
	return min(lo, n), min(hi, n)
}

// part runs part i of the current job.
func (p *Pool) part(i int) {
	switch p.kind {
	case jobMatVec:
		lo, hi := p.split(i, len(p.out), rowAlign)
		if lo < hi {
			p.tier.run(p.traits, p.out[lo:hi], p.w[lo*p.rowBytes:hi*p.rowBytes], p.rowBytes, p.cols, p.act, p.aux)
		}
	case jobParallel:
		lo, hi := p.split(i, p.n, 1)
		if lo < hi {
			p.fn(lo, hi)
		}
	}
}

// loop is a worker's life: wait for a new job, do its part, report.
func (p *Pool) loop(wk *worker) {
	defer p.exited.Done()
	var seen uint64 // the generation before the pool's first job
	for {
		for spins := 0; ; spins++ {
			if g := p.gen.Load(); g != seen {
				seen = g
				break
			}
			if spins < spinLimit {
				continue
			}
			// Park. Publish the intent first, then check once more so
			// that a job started in between is not missed; start
			// either sees parked or we see the new generation.
			wk.parked.Store(true)
			if p.gen.Load() != seen {
				if !wk.parked.CompareAndSwap(true, false) {
					<-wk.wake // start claimed us and sent a wake-up
				}
				continue
			}
			<-wk.wake
			spins = 0
		}
		if p.kind == jobExit {
			p.pending.Add(-1)
			return
		}
		p.part(wk.index)
		p.pending.Add(-1)
	}
}
