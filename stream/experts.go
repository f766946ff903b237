package stream

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/qsf-llm/qsf/arena"
	"github.com/qsf-llm/qsf/format"
	"github.com/qsf-llm/qsf/model"
)

// Expert streaming: a mixture-of-experts model whose routed experts do not
// fit the budget keeps everything else (attention, norms, routers, shared
// experts, embeddings, LM head) mapped, and reads each routed expert the
// router selects into a cache of expert slots, least frequently used
// first out. A token then reads only the selected experts that are not
// cached, while it computes those it has.

// ExpertLayout says where the routed experts of a mixture-of-experts GGUF
// file lie: for every layer, the file offsets of its stacked
// ffn_{gate,up,down}_exps tensors.
type ExpertLayout struct {
	Hparams model.Hparams
	layers  []expertLayer
	// ExpertBytes is the memory of one expert's three matrices in a cache
	// slot (each aligned).
	ExpertBytes int
	// TotalBytes is the size of all routed experts in the file.
	TotalBytes int64
}

// expertLayer is where one layer's stacked expert tensors lie.
type expertLayer struct {
	mats [3]expertMatrix // gate, up, down
}

// expertMatrix is one stacked tensor: expert e is bytes
// [off+e·size, off+(e+1)·size) of the file.
type expertMatrix struct {
	tensor model.Tensor // the shape and type of one expert (no Data)
	off    int64
	size   int
}

// NewExpertLayout computes the expert layout of f (a GGUF file) for the
// mixture-of-experts model hp parsed from its metadata.
func NewExpertLayout(f *format.File, hp *model.Hparams) (*ExpertLayout, error) {
	mp := &hp.MoE
	if mp.Experts == 0 {
		return nil, fmt.Errorf("%w: not a mixture of experts", ErrLayout)
	}
	if f.QSF() != nil {
		return nil, fmt.Errorf("%w: expert streaming reads GGUF files only", ErrLayout)
	}
	lay := &ExpertLayout{Hparams: *hp, layers: make([]expertLayer, hp.Layers)}
	rows := [3]int{mp.ExpertFFN, mp.ExpertFFN, hp.Embd}
	cols := [3]int{hp.Embd, hp.Embd, mp.ExpertFFN}
	for l := range lay.layers {
		for i, name := range [3]string{"ffn_gate_exps", "ffn_up_exps", "ffn_down_exps"} {
			full := fmt.Sprintf("blk.%d.%s.weight", l, name)
			ti, ok := f.Tensor(full)
			if !ok {
				return nil, fmt.Errorf("%w: %s", model.ErrMissingTensor, full)
			}
			if ti.Cols() != cols[i] || ti.Rows() != rows[i]*mp.Experts || int(ti.Size)%mp.Experts != 0 {
				return nil, fmt.Errorf("%w: %s is %d×%d, want %d experts of %d×%d", ErrLayout, full, ti.Rows(), ti.Cols(), mp.Experts, rows[i], cols[i])
			}
			size := int(ti.Size) / mp.Experts
			lay.layers[l].mats[i] = expertMatrix{
				tensor: model.Tensor{Name: full, Type: ti.Type, Rows: rows[i], Cols: cols[i]},
				off:    f.DataOffset + int64(ti.Offset),
				size:   size,
			}
			lay.TotalBytes += int64(ti.Size)
			if l == 0 {
				lay.ExpertBytes += alignUp(size)
			} else if alignUp(size) != alignUp(lay.layers[0].mats[i].size) {
				return nil, fmt.Errorf("%w: %s: experts of layer %d differ in size from layer 0's", ErrLayout, full, l)
			}
		}
	}
	return lay, nil
}

// Experts returns the number of routed experts in the file.
func (lay *ExpertLayout) Experts() int { return lay.Hparams.Layers * lay.Hparams.MoE.Experts }

// ExpertStats are an ExpertCache's counters.
type ExpertStats struct {
	Hits      int64         // requests served by an expert the cache already held
	Misses    int64         // requests for an expert read for them (ahead of time or not)
	Unused    int64         // experts read ahead (guessed or announced) that no request has used (yet)
	BytesRead int64         // bytes read from the file
	ReadTime  time.Duration // time the reader spent reading them
	WaitTime  time.Duration // time the forward pass waited for reads (or read itself)
}

// HitRate returns the fraction of expert requests the cache served.
func (s ExpertStats) HitRate() float64 {
	if s.Hits+s.Misses == 0 {
		return 0
	}
	return float64(s.Hits) / float64(s.Hits+s.Misses)
}

// Sub returns the counters accumulated since o was taken.
func (s ExpertStats) Sub(o ExpertStats) ExpertStats {
	return ExpertStats{Hits: s.Hits - o.Hits, Misses: s.Misses - o.Misses, Unused: s.Unused - o.Unused,
		BytesRead: s.BytesRead - o.BytesRead, ReadTime: s.ReadTime - o.ReadTime, WaitTime: s.WaitTime - o.WaitTime}
}

// ExpertOptions configure an ExpertCache.
type ExpertOptions struct {
	// Slots is the number of experts the cache holds: at least the
	// experts a token uses per layer.
	Slots int
	// NoGuess ignores GuessExperts: experts are read once the router
	// has chosen them.
	NoGuess bool
	// GuessReads reads guessed experts into the cache, as announced
	// ones. By default a guess only asks the kernel to bring the guessed
	// experts the cache lacks into the page cache (posix_fadvise
	// WILLNEED), which hides a disk's latency, and only while recent
	// reads found pages outside the page cache (a warm page cache would
	// only pay the kernel's lookups); reading them costs a copy and a slot per wrong
	// guess (qwen3-30b-a3b under 2 GB, file in the page cache: 26% more
	// bytes read per token).
	GuessReads bool
}

// ExpertCache holds frequently used experts of one session and reads the
// others from the file. It implements model.ExpertSource,
// model.ExpertPrefetcher and model.ExpertGuesser. Several sessions may
// share it, taking turns: its methods other than Stats and Close must be
// called by the holder of Lock (model.State's forward pass takes it), or
// from one goroutine.
//
// Reads run on the cache's own goroutine, in the order they were asked
// for, while the forward pass computes: PrefetchExperts (and
// GuessExperts) assign the experts a slot each and queue their reads at
// once, and Expert waits only for the read of the expert it returns. The
// experts are copied into the slots with pread rather than mapped: the
// kernel maps a large page-cache folio (up to 2 MiB) whole, so mapped
// experts of 2.5 MiB took up to twice their size in resident memory,
// beyond the budget.
//
// Eviction is least frequently used, with the counts halved every one
// and a half tokens (or pass over the cache, if longer) so that the cache
// follows what the recent tokens use, and of equals the most recently
// used goes (see victim). The experts of the
// current layer (the last Used asked for since the last PrefetchExperts,
// and those it announced and that have not been asked for yet) are not
// evicted.
type ExpertCache struct {
	lay        *ExpertLayout
	file       *os.File
	mem        []byte  // slots × ExpertBytes
	slotKey    []int32 // per slot: layer·Experts + expert + 1, 0 when empty
	lastUse    []uint64
	uses       []uint32 // per slot: requests, halved every agePeriod requests
	slotOf     []int32  // per expert: slot + 1, 0 when absent
	views      [][3]model.Tensor
	clock      uint64
	noGuess    bool
	guessReads bool

	// Announced experts (PrefetchExperts): wave counts the calls, pinWave
	// is the wave a slot was announced in until it is asked for, and
	// waveClock the clock when the current wave began (requests before it
	// are done with).
	wave      uint64
	pinWave   []uint64
	waveClock uint64
	fresh     []bool // per slot: read, not asked for since

	// The reads, under mu: queue[head:] the jobs not started yet (in
	// order; a job taken out of turn or cancelled stays, marked), and per
	// slot seq the number of its last job, finished the number of the
	// last one done, queuedAt that job's index in queue while it waits
	// (-1 otherwise), busy whether a read into it runs and errs the last
	// read's error.
	mu       sync.Mutex
	jobReady sync.Cond // a job was queued, or the cache closed
	jobDone  sync.Cond // a read finished
	queue    []expertJob
	head     int
	queued   int64
	seq      []int64
	finished []int64
	queuedAt []int
	busy     []bool
	errs     []error
	closed   bool
	exited   chan struct{}

	hits, misses, unused, bytesRead, readNanos, waitNanos atomic.Int64

	// Reads that found some of their pages outside the page cache
	// (coldReads, by any goroutine); the count GuessExperts saw last and
	// the clock until which it asks the kernel to read ahead.
	fd        int
	coldReads atomic.Int64
	coldSeen  int64
	coldUntil uint64

	// Reads on the forward pass's threads (SetParallel): par shares
	// readPieces out; batch holds the jobs of one call and pieceErr the
	// error of each of their pieces.
	par      func(n int, fn func(lo, hi int))
	pieces   func(lo, hi int) // c.readPieces, bound once
	batch    []expertJob
	pieceErr []error

	turn sync.Mutex // held by the session using the cache
}

// Lock waits until no other session uses the cache and takes it: the
// forward pass of a model.State holds it throughout.
func (c *ExpertCache) Lock() { c.turn.Lock() }

// Unlock lets another session use the cache.
func (c *ExpertCache) Unlock() { c.turn.Unlock() }

// expertJob is one read: expert e of layer l into slot.
type expertJob struct {
	slot, l, e int
	seq        int64
	skip       bool // taken out of turn, or cancelled
}

// ExpertCacheBytes returns the arena space OpenExpertCache takes for a
// cache of slots experts.
func ExpertCacheBytes(lay *ExpertLayout, slots int) int64 {
	r := func(n int64) int64 { return (n + arena.Align - 1) &^ (arena.Align - 1) }
	return r(int64(slots)*int64(lay.ExpertBytes)) + 3*r(int64(slots)*4) + r(int64(slots)*8) + r(int64(lay.Experts())*4)
}

// OpenExpertCache opens a cache of slots experts (at least the experts a
// token uses per layer) over the file at path, its memory from a.
func OpenExpertCache(lay *ExpertLayout, path string, a *arena.Arena, slots int) (*ExpertCache, error) {
	return OpenExpertCacheWith(lay, path, a, ExpertOptions{Slots: slots})
}

// OpenExpertCacheWith opens a cache over the file at path as o says,
// its memory (ExpertCacheBytes) from a.
func OpenExpertCacheWith(lay *ExpertLayout, path string, a *arena.Arena, o ExpertOptions) (*ExpertCache, error) {
	slots := o.Slots
	if used := lay.Hparams.MoE.Used; slots < used {
		return nil, fmt.Errorf("stream: an expert cache of %d slots is smaller than the %d experts a token uses", slots, used)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	c := &ExpertCache{lay: lay, file: f, views: make([][3]model.Tensor, slots),
		pinWave: make([]uint64, slots), fresh: make([]bool, slots),
		seq: make([]int64, slots), finished: make([]int64, slots), queuedAt: make([]int, slots), busy: make([]bool, slots), errs: make([]error, slots),
		queue: make([]expertJob, 0, 2*slots), exited: make(chan struct{}),
		wave: 1, noGuess: o.NoGuess, guessReads: o.GuessReads} // pinWave 0: not announced
	c.jobReady.L, c.jobDone.L = &c.mu, &c.mu
	c.pieces = c.readPieces
	c.fd = int(f.Fd())
	c.coldUntil = c.coldWindow() // until a read says otherwise
	for i := range c.queuedAt {
		c.queuedAt[i] = -1
	}
	get := func(name string, n int) []byte {
		if err != nil {
			return nil
		}
		var b []byte
		b, err = a.Alloc(name, n)
		return b
	}
	c.mem = get("expert cache", slots*lay.ExpertBytes)
	c.slotKey = int32s(get("expert cache keys", slots*4))
	c.lastUse = uint64s(get("expert cache lru", slots*8))
	c.uses = uint32s(get("expert cache counts", slots*4))
	c.slotOf = int32s(get("expert cache index", lay.Experts()*4))
	if err != nil {
		f.Close()
		return nil, err
	}
	go c.reader()
	return c, nil
}

// Slots returns the number of experts the cache holds.
func (c *ExpertCache) Slots() int { return len(c.views) }

// Expert implements model.ExpertSource: the expert comes from the cache,
// or is read into the slot victim chooses, and Expert waits until its
// read is done.
func (c *ExpertCache) Expert(l, e int) (gate, up, down *model.Tensor, err error) {
	n := c.lay.Hparams.MoE.Experts
	if l < 0 || l >= len(c.lay.layers) || e < 0 || e >= n {
		return nil, nil, nil, fmt.Errorf("stream: no expert %d of layer %d", e, l)
	}
	key := l*n + e
	c.clock++
	if c.clock%c.agePeriod() == 0 {
		for i := range c.uses {
			c.uses[i] /= 2
		}
	}
	slot := int(c.slotOf[key]) - 1
	if slot < 0 {
		if slot = c.victim(true); slot < 0 {
			return nil, nil, nil, fmt.Errorf("stream: expert %d of layer %d: every slot of the expert cache is in use", e, l)
		}
		c.load(slot, l, e)
		c.readQueued()
	}
	c.pinWave[slot] = 0
	c.uses[slot]++
	c.lastUse[slot] = c.clock
	if c.fresh[slot] {
		c.fresh[slot] = false
		c.unused.Add(-1)
		c.misses.Add(1)
	} else {
		c.hits.Add(1)
	}
	if err := c.wait(slot); err != nil {
		c.drop(slot)
		return nil, nil, nil, err
	}
	v := &c.views[slot]
	return &v[0], &v[1], &v[2], nil
}

// PrefetchExperts implements model.ExpertPrefetcher: it starts reading
// the experts of layer l that the cache lacks, in the order given, into
// slots that no announced or current expert holds (as many as there are),
// and sorts experts into the order they will be ready in. It returns how
// many of them, first in that order, are ready (read).
// The experts asked for before the call are done with; the experts
// announced stay until they are asked for or the next call.
func (c *ExpertCache) PrefetchExperts(l int, experts []int32) (ready int) {
	n := c.lay.Hparams.MoE.Experts
	c.wave++
	c.waveClock = c.clock
	if l < 0 || l >= len(c.lay.layers) {
		return 0
	}
	valid := func(e int32) bool { return e >= 0 && int(e) < n }
	for _, e := range experts { // first keep those held
		if valid(e) && c.slotOf[l*n+int(e)] != 0 {
			c.pinWave[c.slotOf[l*n+int(e)]-1] = c.wave
		}
	}
	for _, e := range experts {
		if !valid(e) || c.slotOf[l*n+int(e)] != 0 {
			continue
		}
		slot := c.victim(false)
		if slot < 0 {
			break
		}
		c.load(slot, l, int(e))
		c.lastUse[slot] = c.clock
		c.pinWave[slot] = c.wave
	}
	c.readQueued()
	c.readyOrder(l, experts)
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range experts {
		if e < 0 || int(e) >= n {
			break
		}
		slot := int(c.slotOf[l*n+int(e)]) - 1
		if slot < 0 || c.finished[slot] < c.seq[slot] {
			break
		}
		ready++
	}
	return ready
}

// SetParallel makes the cache read the experts PrefetchExperts (and
// Expert) assign a slot on the calling goroutine at once, each expert cut
// into pieces that par shares out (as kernels.Pool.Parallel does), rather
// than on the cache's reader while the forward pass computes. When the
// forward pass's threads take every CPU, the reader has no core of its own
// to read on: it takes turns with them, each read a pause of a thread
// whose piece of a matrix-vector product the others wait for; reading
// with all of them, then computing with all of them, wastes none.
// par must not be called concurrently with another use of what it
// shares out; nil restores reads on the reader. Call it before the cache
// is used.
func (c *ExpertCache) SetParallel(par func(n int, fn func(lo, hi int))) {
	c.par = par
	if par != nil && c.pieceErr == nil {
		c.batch = make([]expertJob, 0, len(c.views))
		c.pieceErr = make([]error, len(c.views)*3*piecesPerMatrix)
	}
}

// piecesPerMatrix is how many pieces readQueued cuts each matrix of an
// expert into, so that the threads share even a single expert's read.
const piecesPerMatrix = 4

// readQueued reads every queued read that has not started, when the cache
// reads on the forward pass's threads (SetParallel).
func (c *ExpertCache) readQueued() {
	if c.par == nil {
		return
	}
	c.mu.Lock()
	c.batch = c.batch[:0]
	for i := c.head; i < len(c.queue); i++ {
		j := &c.queue[i]
		if j.skip || c.busy[j.slot] {
			continue
		}
		j.skip = true
		if c.queuedAt[j.slot] == i {
			c.queuedAt[j.slot] = -1
		}
		c.busy[j.slot] = true
		c.batch = append(c.batch, *j)
	}
	c.mu.Unlock()
	if len(c.batch) == 0 {
		return
	}
	start := time.Now()
	n := len(c.batch) * 3 * piecesPerMatrix
	clear(c.pieceErr[:n])
	c.par(n, c.pieces)
	d := int64(time.Since(start))
	c.readNanos.Add(d)
	c.waitNanos.Add(d)
	c.mu.Lock()
	for k, j := range c.batch {
		err := errors.Join(c.pieceErr[k*3*piecesPerMatrix : (k+1)*3*piecesPerMatrix]...)
		if err != nil {
			err = fmt.Errorf("stream: expert %d of layer %d: %w", j.e, j.l, err)
		}
		c.busy[j.slot] = false
		c.errs[j.slot] = err
		c.finished[j.slot] = max(c.finished[j.slot], j.seq)
	}
	c.mu.Unlock()
	c.jobDone.Broadcast()
}

// readPieces reads pieces [lo, hi) of the jobs of c.batch: piece p is
// part p%piecesPerMatrix of matrix p/piecesPerMatrix%3 of job
// p/(3·piecesPerMatrix).
func (c *ExpertCache) readPieces(lo, hi int) {
	var n int64
	for p := lo; p < hi; p++ {
		j := &c.batch[p/(3*piecesPerMatrix)]
		mi, part := p/piecesPerMatrix%3, p%piecesPerMatrix
		mats := &c.lay.layers[j.l].mats
		m := &mats[mi]
		off := 0
		for i := range mi {
			off += alignUp(mats[i].size)
		}
		a, b := m.size*part/piecesPerMatrix, m.size*(part+1)/piecesPerMatrix
		dst := c.mem[j.slot*c.lay.ExpertBytes+off:]
		if err := c.readAt(dst[a:b], m.off+int64(j.e)*int64(m.size)+int64(a)); err != nil {
			c.pieceErr[p] = err
			continue
		}
		n += int64(b - a)
	}
	c.bytesRead.Add(n)
}

// readyOrder sorts the experts of layer l into the order their reads
// finish: those held first, then those being read in queue order, then
// those without a slot.
func (c *ExpertCache) readyOrder(l int, experts []int32) {
	n := c.lay.Hparams.MoE.Experts
	rank := func(e int32) int64 {
		if e < 0 || int(e) >= n {
			return math.MaxInt64
		}
		slot := int(c.slotOf[l*n+int(e)]) - 1
		if slot < 0 {
			return math.MaxInt64
		}
		return c.seq[slot]
	}
	for i := 1; i < len(experts); i++ { // insertion sort: stable, few experts
		e, r := experts[i], rank(experts[i])
		j := i
		for ; j > 0 && rank(experts[j-1]) > r; j-- {
			experts[j] = experts[j-1]
		}
		experts[j] = e
	}
}

// WantsGuess implements model.ExpertGuesser: a guess is of use unless
// guesses are ignored (NoGuess) or, when they only advise the kernel, the
// page cache held every recent read.
func (c *ExpertCache) WantsGuess(l int) bool {
	return !c.noGuess && l >= 0 && l < len(c.lay.layers) && (c.guessReads || c.cold())
}

// GuessExperts implements model.ExpertGuesser: it asks the kernel to
// start reading the guessed experts the cache lacks into the page cache,
// or, with ExpertOptions.GuessReads, starts reading them into the cache as
// PrefetchExperts does (nothing with NoGuess).
func (c *ExpertCache) GuessExperts(l int, experts []int32) {
	n := c.lay.Hparams.MoE.Experts
	switch {
	case c.noGuess || l < 0 || l >= len(c.lay.layers):
	case c.guessReads:
		_ = c.PrefetchExperts(l, experts)
	case !c.cold():
		// The page cache held every recent read: asking it to read
		// ahead would only cost its lookups (about 50 µs per 2.5 MiB
		// expert, 8 ms a token for qwen3-30b-a3b at 2 GB).
	default:
		fd := c.fd
		for _, e := range experts {
			if e < 0 || int(e) >= n || c.slotOf[l*n+int(e)] != 0 {
				continue
			}
			for i := range c.lay.layers[l].mats {
				m := &c.lay.layers[l].mats[i]
				willNeed(fd, m.off+int64(e)*int64(m.size), int64(m.size))
			}
		}
	}
}

// cold reports whether a read found pages outside the page cache within
// the last two tokens' requests (or the cache has hardly read yet).
func (c *ExpertCache) cold() bool {
	if n := c.coldReads.Load(); n != c.coldSeen {
		c.coldSeen = n
		c.coldUntil = c.clock + c.coldWindow()
	}
	return c.clock < c.coldUntil
}

// coldWindow is two tokens' expert requests.
func (c *ExpertCache) coldWindow() uint64 {
	hp := &c.lay.Hparams
	return uint64(2 * hp.Layers * hp.MoE.Used)
}

// readAt reads len(b) bytes of the file at off, counting the read as
// cold when the page cache lacked some of them.
func (c *ExpertCache) readAt(b []byte, off int64) error {
	n := preadCached(c.fd, b, off)
	if n == len(b) {
		return nil
	}
	c.coldReads.Add(1)
	_, err := c.file.ReadAt(b[n:], off+int64(n))
	return err
}

// load assigns slot to expert e of layer l, evicting what it held, and
// queues the read.
func (c *ExpertCache) load(slot, l, e int) {
	key := l*c.lay.Hparams.MoE.Experts + e
	old := c.slotKey[slot]
	if old != 0 {
		c.slotOf[old-1] = 0
	}
	c.slotKey[slot] = int32(key + 1)
	c.slotOf[key] = int32(slot + 1)
	c.uses[slot] = 0
	c.mu.Lock()
	if i := c.queuedAt[slot]; i >= 0 {
		// The evicted expert's read has not started: it never will, so
		// it is not counted as unused either.
		c.queue[i].skip = true
		if c.fresh[slot] {
			c.unused.Add(-1)
		}
	}
	c.fresh[slot] = true // an evicted fresh expert read stays counted as unused
	c.unused.Add(1)
	off := 0
	for i := range c.lay.layers[l].mats {
		m := &c.lay.layers[l].mats[i]
		v := &c.views[slot][i]
		*v = m.tensor
		base := slot * c.lay.ExpertBytes
		v.Data = c.mem[base+off : base+off+m.size : base+off+m.size]
		off += alignUp(m.size)
	}
	c.queued++
	c.seq[slot] = c.queued
	c.queuedAt[slot] = len(c.queue)
	c.queue = append(c.queue, expertJob{slot: slot, l: l, e: e, seq: c.queued})
	c.mu.Unlock()
	if c.par == nil { // else readQueued reads it
		c.jobReady.Signal()
	}
}

// wait waits until the last read queued for slot is done. Rather than
// sleep, it reads itself: the read it waits for if the reader has not
// started it, else the next one queued.
func (c *ExpertCache) wait(slot int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.finished[slot] >= c.seq[slot] {
		return c.errs[slot]
	}
	start := time.Now()
	for c.finished[slot] < c.seq[slot] {
		i := c.queuedAt[slot]
		if i < 0 || c.busy[slot] {
			i = c.next()
		}
		if i < 0 {
			c.jobDone.Wait()
			continue
		}
		c.queue[i].skip = true
		c.run(c.queue[i])
	}
	c.waitNanos.Add(int64(time.Since(start)))
	return c.errs[slot]
}

// next returns the index of the first queued job that can start now, or
// -1. c.mu is held.
func (c *ExpertCache) next() int {
	for i := c.head; i < len(c.queue); i++ {
		if j := &c.queue[i]; !j.skip && !c.busy[j.slot] {
			return i
		}
	}
	return -1
}

// run performs job j, releasing c.mu during the read. c.mu is held.
func (c *ExpertCache) run(j expertJob) {
	if c.queuedAt[j.slot] >= 0 && c.queue[c.queuedAt[j.slot]].seq == j.seq {
		c.queuedAt[j.slot] = -1
	}
	c.busy[j.slot] = true
	c.mu.Unlock()
	start := time.Now()
	err := c.read(j)
	c.readNanos.Add(int64(time.Since(start)))
	c.mu.Lock()
	c.busy[j.slot] = false
	c.errs[j.slot] = err
	c.finished[j.slot] = max(c.finished[j.slot], j.seq)
	c.jobDone.Broadcast()
}

// drop empties slot after a failed read.
func (c *ExpertCache) drop(slot int) {
	if old := c.slotKey[slot]; old != 0 {
		c.slotOf[old-1] = 0
	}
	c.slotKey[slot] = 0
	c.lastUse[slot] = 0
	c.pinWave[slot] = 0
}

// agePeriod is how many requests pass between two halvings of the use
// counts: one and a half tokens' worth, or a pass over the cache if that
// is longer. On a trace of qwen3-30b-a3b's requests (random weights, 147
// tokens of three prompts) a cache of 345 slots served 59–69% with this
// period (Belady's optimum: 76–83%), against 53–65% with two tokens,
// 14–28% with sixteen and 0% least recently used; with 1000 slots,
// 84–88% against 55–78% with sixteen tokens. Periods of 1.2 to 1.8
// tokens did about as well; exactly one token worse (the halvings fall on
// the same layer every token).
func (c *ExpertCache) agePeriod() uint64 {
	hp := &c.lay.Hparams
	return uint64(max(len(c.uses), 3*hp.Layers*hp.MoE.Used/2))
}

// victim returns the slot to read a new expert into, or -1: an empty one,
// else the least frequently used of those neither announced (pinWave) nor
// asked for among the last Used requests since the last announcement, of
// equals the most recently used. Keeping the older of equals lets an
// expert stay long enough to be asked for again and so to count more than
// a newcomer; evicting the older, as least recently used does, would
// evict every expert of a token just before the next token asks for it
// again when the cache is smaller than a token's experts. With steal,
// announced experts not yet asked for may go when nothing else can.
func (c *ExpertCache) victim(steal bool) int {
	pinned := max(c.clock-uint64(c.lay.Hparams.MoE.Used), c.waveClock) // lastUse above this: in use
	best, stolen := -1, -1
	for i, t := range c.lastUse {
		if c.slotKey[i] == 0 {
			return i
		}
		if c.pinWave[i] == c.wave {
			if steal && stolen < 0 {
				stolen = i
			}
			continue
		}
		if t > pinned {
			continue
		}
		if best < 0 || c.uses[i] < c.uses[best] || (c.uses[i] == c.uses[best] && t > c.lastUse[best]) {
			best = i
		}
	}
	if best < 0 {
		return stolen
	}
	return best
}

// reader runs the queued reads in order until Close.
func (c *ExpertCache) reader() {
	defer close(c.exited)
	c.mu.Lock()
	defer c.mu.Unlock()
	for {
		for c.head < len(c.queue) && c.queue[c.head].skip {
			c.head++
		}
		if c.head == len(c.queue) {
			c.queue, c.head = c.queue[:0], 0
			if c.closed {
				return
			}
			c.jobReady.Wait()
			continue
		}
		if j := c.queue[c.head]; !c.busy[j.slot] {
			c.head++
			c.run(j)
		} else {
			c.jobDone.Wait() // the forward pass reads into that slot
		}
	}
}

// read performs job j.
func (c *ExpertCache) read(j expertJob) error {
	mats := &c.lay.layers[j.l].mats
	dst := c.mem[j.slot*c.lay.ExpertBytes:]
	for i := range mats {
		m := &mats[i]
		if err := c.readAt(dst[:m.size], m.off+int64(j.e)*int64(m.size)); err != nil {
			return fmt.Errorf("stream: expert %d of layer %d: %w", j.e, j.l, err)
		}
		dst = dst[alignUp(m.size):]
	}
	n := 0
	for i := range mats {
		n += mats[i].size
	}
	c.bytesRead.Add(int64(n))
	return nil
}

// Stats returns the cache's counters. It may be called from any
// goroutine.
func (c *ExpertCache) Stats() ExpertStats {
	return ExpertStats{Hits: c.hits.Load(), Misses: c.misses.Load(), Unused: c.unused.Load(), BytesRead: c.bytesRead.Load(),
		ReadTime: time.Duration(c.readNanos.Load()), WaitTime: time.Duration(c.waitNanos.Load())}
}

// Close stops the reader and closes the file. The arena's
// memory is the caller's to release.
func (c *ExpertCache) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.mu.Unlock()
	c.jobReady.Signal()
	<-c.exited
	return c.file.Close()
}

// uint32s views b (4-byte aligned) as uint32 values.
func uint32s(b []byte) []uint32 {
	if len(b) == 0 {
		return []uint32{}
	}
	return unsafe.Slice((*uint32)(unsafe.Pointer(&b[0])), len(b)/4)
}

// MeasureReads measures how fast the experts of the file at path are read
// as an expert cache reads them: n experts chosen at random (the same for
// a given seed), each expert's three matrices read with one pread each,
// by threads goroutines at once. It returns the bytes read per second.
// With the file in the page cache, this is the page cache's read rate for
// expert-sized pieces.
func (lay *ExpertLayout) MeasureReads(path string, threads, n int, seed uint64) (float64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	ne := lay.Hparams.MoE.Experts
	keys := make([]int, n)
	rng := rand.New(rand.NewPCG(seed, seed))
	for i := range keys {
		keys[i] = rng.IntN(lay.Experts())
	}
	threads = max(threads, 1)
	errs := make([]error, threads)
	var wg sync.WaitGroup
	start := time.Now()
	for t := range threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, lay.ExpertBytes)
			for i := t; i < n; i += threads {
				l, e := keys[i]/ne, keys[i]%ne
				for m := range lay.layers[l].mats {
					mat := &lay.layers[l].mats[m]
					if _, err := f.ReadAt(buf[:mat.size], mat.off+int64(e)*int64(mat.size)); err != nil {
						errs[t] = err
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	d := time.Since(start)
	if err := errors.Join(errs...); err != nil {
		return 0, fmt.Errorf("stream: measuring expert reads: %w", err)
	}
	var size int64
	for _, m := range lay.layers[0].mats {
		size += int64(m.size)
	}
	return float64(size) * float64(n) / d.Seconds(), nil
}
