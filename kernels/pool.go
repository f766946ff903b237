package kernels

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/qsf-llm/qsf/quant"
)

// spinTime is how long an idle worker polls for new work before it
// parks: longer than any gap between two jobs of a forward pass (and
// between two tokens), so a worker parks only when its session is idle.
// Waking a parked worker costs a futex wake-up and, on a virtual machine
// whose idle vCPU halted, a host reschedule: tens to hundreds of
// microseconds, as long as a whole mat-vec of a small model.
const spinTime = time.Millisecond

// rowAlign is the granularity of the row ranges Pool.MatVec hands out, so
// that every range starts on a whole group of rows for kernels that work
// on several rows at once: Q8_0x4 matrices come in groups of 4 rows,
// Q4_0x8 ones and Q4_0 in ggml_gemv_q4_0_8x8_q8_0's order in groups of 8
// (the latter is only used for matrices of a multiple of 8 rows, so each
// of their ranges is whole groups).
const rowAlign = 8

// rowAlignOf is the granularity of the row ranges of a matrix of type t:
// rowAlign, or the group of a repacked type of larger groups (Q4_0x16's
// 16 rows).
func rowAlignOf(t quant.Type) int {
	if k := repackOf(t); k != nil && k.group > rowAlign {
		return k.group
	}
	return rowAlign
}

// tasksAlign returns the row granularity of a job of several matrices
// of types typ(0), ..., typ(n-1) (the largest of theirs: each divides
// the next) and whether every matrix but the last is whole multiples of
// it (rows(i)), so that each piece starts on a group of its matrix.
func tasksAlign(n int, typ func(i int) quant.Type, rows func(i int) int) (int, bool) {
	align := rowAlign
	for i := range n {
		align = max(align, rowAlignOf(typ(i)))
	}
	for i := range n - 1 {
		if rows(i)%align != 0 {
			return align, false
		}
	}
	return align, true
}

// chunksPerThread is how many pieces each thread's share of a job is cut
// into. Each thread owns a run of consecutive pieces and claims them front
// first, so that it streams its share of a matrix as one run of memory
// (what a decode kernel prefetches past the end of a piece is the start
// of the thread's next piece); a thread out of pieces takes the last one
// left of another's run. So a worker that the OS has descheduled delays
// a call by at most the piece it holds, not its share. The runs of
// successive MatVec jobs turn by one thread: a decode step reads its
// matrices in the order they lie in memory, so the thread whose run ended
// a job starts the next one where it left off, its prefetches already
// there.
const chunksPerThread = 4

// maxChunks bounds the pieces of one job (they are counted in 16 bits).
const maxChunks = 1<<16 - 1

// jobKind says what the pool's current job is.
type jobKind uint8

const (
	jobMatVec jobKind = iota
	jobParallel
	jobMatMul
	jobMatMulPrep
	jobMatVecs
	jobMatMuls
	jobMatMulsPrep
)

// Pool is a fixed set of persistent worker goroutines that share the work of
// one MatVec or Parallel call at a time. Idle workers spin for a short while
// and then park, so back-to-back calls cost neither a goroutine start nor an
// allocation. The calling goroutine works on every call too, and the pieces
// of a call are claimed dynamically, so a call finishes even while workers
// are slow to wake.
//
// A Pool's methods may be called from several goroutines; calls are
// serialized. A Pool of one thread runs everything inline. Pieces of a
// MatVec are whole runs of rows computed by the same kernel as MatVec, so
// the results do not depend on the number of threads.
type Pool struct {
	base    *Tier // the tier of every call
	threads int
	spin    atomic.Int64 // how long an idle worker polls, in nanoseconds
	mu      sync.Mutex   // serializes calls
	workers []*worker
	exited  sync.WaitGroup
	closing atomic.Bool
	// After Rest and until the next job, idle workers poll for at most
	// restSpin (nanoseconds) instead of spin.
	resting  atomic.Bool
	restSpin atomic.Int64

	// state is the current job's id (high 32 bits), its number of
	// pieces (bits 16..31) and its turn (bits 0..15: thread t owns run
	// (t+turn) mod threads); workers watch the id for new jobs.
	state atomic.Uint64
	// runs holds each thread's run of pieces of the current job (the
	// caller's first, then worker i's at i+1): the job's id (high 32
	// bits), the run's first unclaimed piece (bits 16..31) and its end
	// (bits 0..15). Threads claim pieces with compare-and-swap, their own
	// run's front first, then the back of another's.
	runs  []atomic.Uint64
	done  atomic.Int32 // pieces of the current job finished
	jobID uint32
	turns int // MatVec and MatVecs jobs run, for their turns

	// The current job, written by the caller before state is published
	// and read by a thread only after it has claimed a piece.
	kind     jobKind
	traits   *quant.Traits
	tier     *Tier
	out      []float32
	w        []byte
	rowBytes int
	cols     int
	act      []byte
	aux      []byte // prepared activation data, reused across calls
	n        int    // rows (MatVec) or range length (Parallel)
	align    int
	chunks   int
	fn       func(lo, hi int)
	mm       matmulJob // jobMatMul's job
	auxes    [][]byte  // jobMatMul's prepared activations, reused
	tasks    []MatVecTask
	taskAux  [][]byte     // jobMatVecs' prepared activations, reused
	taskPrep [][]byte     // the prepared activation of each task: its own taskAux or an earlier task's
	taskEnd  []int        // jobMatVecs' cumulative row counts, reused
	taskKey  []quant.Type // the table key of each task's matrix, reused
	mms      []matmulJob  // jobMatMuls' jobs, one per task
	mmAux    [][][]byte   // jobMatMuls' prepared activations per task, reused
}

type worker struct {
	parked atomic.Bool
	wake   chan struct{} // buffered 1
	run    int           // the index of the worker's run in Pool.runs
}

// NewPool starts a pool of threads workers, the caller included, that runs
// DefaultTier's kernels; threads <= 0 means runtime.GOMAXPROCS(0).
func NewPool(threads int) *Pool { return NewPoolTier(DefaultTier(), threads) }

// NewPoolTier is NewPool with the kernels of tier tr (nil: DefaultTier).
func NewPoolTier(tr *Tier, threads int) *Pool {
	if tr == nil {
		tr = DefaultTier()
	}
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	p := &Pool{base: tr, threads: threads, runs: make([]atomic.Uint64, threads)}
	p.spin.Store(int64(spinTime))
	for i := 1; i < threads; i++ {
		wk := &worker{wake: make(chan struct{}, 1), run: i}
		p.workers = append(p.workers, wk)
		p.exited.Add(1)
		go p.loop(wk)
	}
	return p
}

// SetSpinTime sets how long an idle worker polls for new work before it
// parks (a millisecond unless set). Waking a parked worker costs tens of
// microseconds or more; a polling one takes a CPU that other work of the
// process may need meanwhile, as layer streaming's reads do while the
// forward pass waits for them. It is safe to call at any time.
func (p *Pool) SetSpinTime(d time.Duration) { p.spin.Store(int64(max(d, 0))) }

// Rest shortens the polling of the idle workers to d after their last
// job (when d is less than the spin time), until the next call: for a
// caller whose other goroutines have work that is usually done within d
// of its last call and sometimes not. A polling worker holds its P (its
// share of GOMAXPROCS), and the Go scheduler moves runnable goroutines
// only to an idle P: goroutines queued on a P whose thread the OS has
// descheduled wait as long as the worker polls. Once it parks, its P
// takes them, at the cost of a wake-up at the next call.
func (p *Pool) Rest(d time.Duration) {
	p.restSpin.Store(int64(max(d, 0)))
	p.resting.Store(true)
}

// Tier returns the tier whose kernels the pool runs.
func (p *Pool) Tier() *Tier { return p.base }

// Threads returns the number of threads that share each call, the caller
// included.
func (p *Pool) Threads() int { return p.threads }

// Close stops the workers and waits for them to exit. A closed pool runs
// later calls inline on the caller, like a pool of one thread. Close is
// idempotent.
func (p *Pool) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.workers == nil {
		return
	}
	p.closing.Store(true)
	p.publish(0, 0)
	p.exited.Wait()
	p.workers = nil
	p.threads = 1
}

// MatVec is MatVec with the rows of out split into contiguous ranges shared
// by the pool's threads. It panics on inconsistent arguments as MatVec does.
func (p *Pool) MatVec(t quant.Type, out []float32, w []byte, cols int, act []byte) {
	tt, rowBytes := check(t, out, w, cols, act)
	if len(out) == 0 {
		return
	}
	tr := p.base
	p.mu.Lock()
	p.aux = tr.prepare(kernelKey(tt), p.aux, act, cols)
	align := rowAlignOf(t)
	if p.threads == 1 || len(out) <= align {
		tr.run(tt, out, w, rowBytes, cols, act, p.aux)
		p.mu.Unlock()
		return
	}
	p.kind, p.traits, p.tier = jobMatVec, tt, tr
	p.out, p.w, p.rowBytes, p.cols, p.act = out, w, rowBytes, cols, act
	p.run(len(out), align, p.turn())
	p.out, p.w, p.act, p.traits = nil, nil, nil, nil
	p.mu.Unlock()
}

// MatMul is MatMul with the rows split across the pool's threads; each
// thread walks its rows in cache-sized tiles.
func (p *Pool) MatMul(t quant.Type, out []float32, w []byte, cols int, acts []byte, n int) {
	var j matmulJob
	j.init(p.base, t, out, w, cols, acts, n)
	if j.rows == 0 {
		return
	}
	p.mu.Lock()
	p.mm = j
	p.auxes = p.mm.prepBufs(p.auxes)
	if units := p.mm.prepUnits(); p.threads == 1 || units < 2 {
		for u := range units {
			p.mm.prepUnit(u)
		}
	} else {
		// Packing the activations is work for every thread too.
		p.kind = jobMatMulPrep
		p.run(units, 1, 0)
	}
	if p.threads == 1 || j.rows <= j.align {
		p.mm.run(0, j.rows, j.rows)
	} else {
		p.kind = jobMatMul
		p.run(j.rows, j.align, 0)
	}
	p.mm = matmulJob{}
	p.mu.Unlock()
}

// MatVecTask is one matrix-vector product of a Pool.MatVecs call: the
// arguments of MatVec.
type MatVecTask struct {
	Type quant.Type
	Out  []float32
	W    []byte
	Cols int
	Act  []byte
}

// MatVecs computes the MatVec of every task as one job shared by the pool's
// threads, which wait for each other once instead of once per task. The
// tasks' outputs must not overlap. The results are those of MatVec. It
// panics on inconsistent arguments as MatVec does.
func (p *Pool) MatVecs(tasks []MatVecTask) {
	// Every task but the last must be whole groups of align rows, so
	// that each piece starts on a group of its task.
	total := 0
	for _, t := range tasks {
		check(t.Type, t.Out, t.W, t.Cols, t.Act)
		total += len(t.Out)
	}
	align, ok := tasksAlign(len(tasks), func(i int) quant.Type { return tasks[i].Type }, func(i int) int { return len(tasks[i].Out) })
	if !ok {
		for _, t := range tasks {
			p.MatVec(t.Type, t.Out, t.W, t.Cols, t.Act)
		}
		return
	}
	if total == 0 {
		return
	}
	tr := p.base
	p.mu.Lock()
	// The pool's buffers are written under the lock only: sessions of a
	// model share its pool.
	p.taskKey = p.taskKey[:0]
	for _, t := range tasks {
		tt, _ := check(t.Type, t.Out, t.W, t.Cols, t.Act)
		p.taskKey = append(p.taskKey, kernelKey(tt))
	}
	for len(p.taskAux) < len(tasks) {
		p.taskAux = append(p.taskAux, nil)
		p.taskPrep = append(p.taskPrep, nil)
	}
	p.taskEnd = p.taskEnd[:0]
	end := 0
	for i, t := range tasks {
		// Tasks that read the same activation with the same type (Q, K
		// and V; gate and up) share one preparation.
		if i > 0 && p.taskKey[i] == p.taskKey[i-1] && t.Cols == tasks[i-1].Cols && sameBytes(t.Act, tasks[i-1].Act) {
			p.taskPrep[i] = p.taskPrep[i-1]
		} else {
			p.taskAux[i] = tr.prepare(p.taskKey[i], p.taskAux[i], t.Act, t.Cols)
			p.taskPrep[i] = p.taskAux[i]
		}
		end += len(t.Out)
		p.taskEnd = append(p.taskEnd, end)
	}
	p.tasks, p.tier = tasks, tr
	if p.threads == 1 || total <= align {
		p.runTasks(0, total)
	} else {
		p.kind = jobMatVecs
		p.run(total, align, p.turn())
	}
	p.tasks = nil
	clear(p.taskPrep)
	p.mu.Unlock()
}

// MatMulTask is one matrix product of a Pool.MatMuls call: the arguments
// of MatMul.
type MatMulTask struct {
	Type quant.Type
	Out  []float32
	W    []byte
	Cols int
	Acts []byte
	N    int
}

// MatMuls computes the MatMul of every task as one job shared by the
// pool's threads, which wait for each other once instead of once per task
// (the Q, K and V of a batch of tokens; gate and up). The tasks' outputs
// must not overlap. Tasks that read the same activations with the same
// kernel (as Q, K and V do) share one preparation of them. The results are
// those of MatMul. It panics on inconsistent arguments as MatMul does.
func (p *Pool) MatMuls(tasks []MatMulTask) {
	// Every task but the last must be whole groups of align rows, so
	// that each piece starts on a group of its task.
	align, ok := tasksAlign(len(tasks), func(i int) quant.Type { return tasks[i].Type }, func(i int) int {
		if tasks[i].N <= 0 {
			return 0 // MatMul panics on it
		}
		return len(tasks[i].Out) / tasks[i].N
	})
	if !ok {
		for _, t := range tasks {
			p.MatMul(t.Type, t.Out, t.W, t.Cols, t.Acts, t.N)
		}
		return
	}
	p.mu.Lock()
	// The pool's buffers are written under the lock only: sessions of a
	// model share its pool.
	p.mms = p.mms[:0]
	for len(p.mmAux) < len(tasks) {
		p.mmAux = append(p.mmAux, nil)
	}
	p.taskEnd = p.taskEnd[:0]
	total, units := 0, 0
	for i, t := range tasks {
		var j matmulJob
		j.init(p.base, t.Type, t.Out, t.W, t.Cols, t.Acts, t.N)
		if k := len(p.mms) - 1; k >= 0 && j.sharesPrep(&p.mms[k]) {
			j.packed, j.packSize, j.restSize, j.auxes = p.mms[k].packed, p.mms[k].packSize, p.mms[k].restSize, p.mms[k].auxes
			j.shared = true
		} else {
			p.mmAux[i] = j.prepBufs(p.mmAux[i])
			units += j.prepUnits()
		}
		p.mms = append(p.mms, j)
		total += j.rows
		p.taskEnd = append(p.taskEnd, total)
	}
	if p.threads == 1 || units < 2 {
		for k := range p.mms {
			if !p.mms[k].shared {
				for u := range p.mms[k].prepUnits() {
					p.mms[k].prepUnit(u)
				}
			}
		}
	} else {
		// Packing the activations is work for every thread too.
		p.kind = jobMatMulsPrep
		p.run(units, 1, 0)
	}
	if p.threads == 1 || total <= align {
		p.runMatMuls(0, total)
	} else if total > 0 {
		p.kind = jobMatMuls
		p.run(total, align, 0)
	}
	clear(p.mms)
	p.mms = p.mms[:0]
	p.mu.Unlock()
}

// runMatMuls computes rows [lo, hi) of the current MatMuls job, counted
// over its tasks in order.
func (p *Pool) runMatMuls(lo, hi int) {
	start := 0
	for k := range p.mms {
		end := p.taskEnd[k]
		if a, b := max(lo, start)-start, min(hi, end)-start; a < b {
			p.mms[k].run(a, b, b)
		}
		start = end
	}
}

// prepMatMuls does preparation units [lo, hi) of the current MatMuls
// job, counted over the tasks that prepare their own activations.
func (p *Pool) prepMatMuls(lo, hi int) {
	start := 0
	for k := range p.mms {
		j := &p.mms[k]
		if j.shared {
			continue
		}
		end := start + j.prepUnits()
		for u := max(lo, start); u < min(hi, end); u++ {
			j.prepUnit(u - start)
		}
		start = end
	}
}

// sameBytes reports whether a and b are the same slice of memory.
func sameBytes(a, b []byte) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// runTasks computes rows [lo, hi) of the current MatVecs job, counted over
// its tasks in order.
func (p *Pool) runTasks(lo, hi int) {
	start := 0
	for i, t := range p.tasks {
		end := p.taskEnd[i]
		if a, b := max(lo, start)-start, min(hi, end)-start; a < b {
			tt, rowBytes := check(t.Type, t.Out, t.W, t.Cols, t.Act)
			p.tier.run(tt, t.Out[a:b], t.W[a*rowBytes:b*rowBytes], rowBytes, t.Cols, t.Act, p.taskPrep[i])
		}
		start = end
	}
}

// Parallel calls fn on contiguous, disjoint, non-empty ranges [lo, hi) that
// together cover [0, n), concurrently on the pool's threads, and returns
// when all calls have returned. Parallel does not allocate, so a method
// value built once can be passed on every call. fn must not call methods of
// the same Pool (they would wait for the call in progress); it may call the
// package-level MatVec and MatMul.
func (p *Pool) Parallel(n int, fn func(lo, hi int)) {
	if n <= 0 {
		return
	}
	if p.threads == 1 || n == 1 {
		fn(0, n)
		return
	}
	p.mu.Lock()
	p.kind, p.fn = jobParallel, fn
	p.run(n, 1, 0)
	p.fn = nil
	p.mu.Unlock()
}

// turn returns the turn of the next MatVec or MatVecs job.
func (p *Pool) turn() int {
	p.turns++
	return p.turns % p.threads
}

// run publishes a job of n items cut at multiples of align, with thread t
// owning run (t+turn) mod threads, works on it and waits until every piece
// is done.
func (p *Pool) run(n, align, turn int) {
	units := (n + align - 1) / align
	chunks := min(units, p.threads*chunksPerThread, maxChunks)
	p.n, p.align, p.chunks = n, align, chunks
	p.done.Store(0)
	p.publish(chunks, turn)
	id := p.jobID
	for p.claim(id, turn) {
	}
	for spins := 0; int(p.done.Load()) != chunks; spins++ {
		if spins > 100 {
			runtime.Gosched()
		}
	}
}

// publish starts a new job of the given number of pieces and turn, each
// thread owning an equal run of consecutive ones, and wakes the parked
// workers.
func (p *Pool) publish(chunks, turn int) {
	p.jobID++
	id := uint64(p.jobID) << 32
	for t := range p.runs {
		lo, hi := chunks*t/len(p.runs), chunks*(t+1)/len(p.runs)
		p.runs[t].Store(id | uint64(lo)<<16 | uint64(hi))
	}
	// The runs are stored before the id that tells workers to read them.
	p.resting.Store(false)
	p.state.Store(id | uint64(chunks)<<16 | uint64(turn))
	for _, wk := range p.workers {
		if wk.parked.CompareAndSwap(true, false) {
			wk.wake <- struct{}{}
		}
	}
}

// claim takes a piece of job id and does it: the front of run self (the
// calling thread's in the job's turn), else the back of another thread's
// run. It returns
// false when job id has no piece left (or is over).
func (p *Pool) claim(id uint32, self int) bool {
	for k := range p.runs {
		t := (self + k) % len(p.runs)
		for {
			r := p.runs[t].Load()
			front, end := int(r>>16&0xffff), int(r&0xffff)
			if uint32(r>>32) != id || front >= end {
				break
			}
			i, next := front, r+1<<16 // the owner takes the front
			if t != self {
				i, next = end-1, r-1 // others the back
			}
			if p.runs[t].CompareAndSwap(r, next) {
				p.piece(i)
				p.done.Add(1)
				return true
			}
		}
	}
	return false
}

// piece runs piece i of the current job.
func (p *Pool) piece(i int) {
	units := (p.n + p.align - 1) / p.align
	lo := min(units*i/p.chunks*p.align, p.n)
	hi := min(units*(i+1)/p.chunks*p.align, p.n)
	if lo >= hi {
		return
	}
	switch p.kind {
	case jobMatVec:
		p.tier.run(p.traits, p.out[lo:hi], p.w[lo*p.rowBytes:hi*p.rowBytes], p.rowBytes, p.cols, p.act, p.aux)
	case jobParallel:
		p.fn(lo, hi)
	case jobMatMul:
		// Pieces go to the threads in turn while they keep pace, so
		// this thread's next piece is likely threads pieces on.
		after := p.n
		if k := i + p.threads; k < p.chunks {
			after = min(units*k/p.chunks*p.align, p.n)
		}
		p.mm.run(lo, hi, after)
	case jobMatMulPrep:
		for u := lo; u < hi; u++ {
			p.mm.prepUnit(u)
		}
	case jobMatVecs:
		p.runTasks(lo, hi)
	case jobMatMuls:
		p.runMatMuls(lo, hi)
	case jobMatMulsPrep:
		p.prepMatMuls(lo, hi)
	}
}

// loop is a worker's life: wait for a new job, claim its pieces while any
// are left, repeat.
func (p *Pool) loop(wk *worker) {
	defer p.exited.Done()
	var seen uint32 // the id before the pool's first job
	var turn int    // the turn of job seen
	for {
		idle := time.Now()
		for spins := 1; ; spins++ {
			if s := p.state.Load(); uint32(s>>32) != seen {
				seen, turn = uint32(s>>32), int(s&0xffff)
				break
			}
			// Read the clock only every 256 polls: a poll takes a few
			// nanoseconds, a clock read some tens.
			if spins%256 != 0 {
				continue
			}
			spin := p.spin.Load()
			if p.resting.Load() {
				spin = min(spin, p.restSpin.Load())
			}
			if time.Since(idle) < time.Duration(spin) {
				// Let another goroutine waiting for a P run meanwhile
				// (the I/O goroutine of layer streaming, back from a
				// read): a spinning worker is not preempted for
				// milliseconds, and with as many threads as Ps it
				// would stall the reads while it waits for work.
				runtime.Gosched()
				continue
			}
			// Park. Publish the intent first, then check once more so
			// that a job published in between is not missed: publish
			// either sees parked or we see the new id.
			wk.parked.Store(true)
			if uint32(p.state.Load()>>32) != seen {
				if !wk.parked.CompareAndSwap(true, false) {
					<-wk.wake // publish claimed us and sent a wake-up
				}
				continue
			}
			<-wk.wake
			idle = time.Now()
		}
		if p.closing.Load() {
			return
		}
		for p.claim(seen, (wk.run+turn)%len(p.runs)) {
		}
	}
}
