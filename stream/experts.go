package stream

import (
	"fmt"
	"os"
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
// router selects into a cache of expert slots, least recently used first
// out. A token then reads only the selected experts that are not cached.

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
	Hits      int64         // experts found in the cache
	Misses    int64         // experts read from the file
	BytesRead int64         // bytes read from the file
	ReadTime  time.Duration // time spent reading them
}

// HitRate returns the fraction of expert requests the cache served.
func (s ExpertStats) HitRate() float64 {
	if s.Hits+s.Misses == 0 {
		return 0
	}
	return float64(s.Hits) / float64(s.Hits+s.Misses)
}

// ExpertCache holds frequently used experts of one session and reads the
// others from the file on demand. It implements model.ExpertSource. Its
// methods other than Stats must be called from one goroutine.
//
// Eviction is least frequently used, with the counts halved about every
// sixteen tokens so that the cache follows a change of topic, and of
// equals the most recently used goes (see victim); the experts of the
// current layer (the last Used asked for) are never evicted.
type ExpertCache struct {
	lay     *ExpertLayout
	file    *os.File
	mem     []byte
	slotKey []int32 // per slot: layer·Experts + expert + 1, 0 when empty
	lastUse []uint64
	uses    []uint32 // per slot: requests, halved every agePeriod requests
	slotOf  []int32  // per expert: slot + 1, 0 when absent
	views   [][3]model.Tensor
	clock   uint64

	hits, misses, bytesRead, readNanos atomic.Int64
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
	if used := lay.Hparams.MoE.Used; slots < used {
		return nil, fmt.Errorf("stream: an expert cache of %d slots is smaller than the %d experts a token uses", slots, used)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	c := &ExpertCache{lay: lay, file: f, views: make([][3]model.Tensor, slots)}
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
	return c, nil
}

// Slots returns the number of experts the cache holds.
func (c *ExpertCache) Slots() int { return len(c.views) }

// Expert implements model.ExpertSource: the expert comes from the cache,
// or is read into the least recently used slot with one pread per
// matrix.
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
	if slot >= 0 {
		c.hits.Add(1)
	} else {
		slot = c.victim()
		if old := c.slotKey[slot]; old != 0 {
			c.slotOf[old-1] = 0
			c.slotKey[slot] = 0
		}
		c.uses[slot] = 0
		if err := c.read(slot, l, e); err != nil {
			c.lastUse[slot] = 0
			return nil, nil, nil, err
		}
		c.slotOf[key] = int32(slot + 1)
		c.slotKey[slot] = int32(key + 1)
		c.misses.Add(1)
	}
	c.uses[slot]++
	c.lastUse[slot] = c.clock
	v := &c.views[slot]
	return &v[0], &v[1], &v[2], nil
}

// agePeriod is how many requests pass between two halvings of the use
// counts: about sixteen tokens' worth (four passes over the cache if that
// is longer).
func (c *ExpertCache) agePeriod() uint64 {
	hp := &c.lay.Hparams
	return uint64(max(4*len(c.uses), 16*hp.Layers*hp.MoE.Used))
}

// victim returns the slot to read a new expert into: an empty one, else
// the least frequently used of those not asked for among the last Used
// requests, of equals the most recently used. Keeping the older of equals
// lets an expert stay long enough to be asked for again and so to count
// more than a newcomer; evicting the older, as least recently used does,
// would evict every expert of a token just before the next token asks
// for it again when the cache is smaller than a token's experts.
func (c *ExpertCache) victim() int {
	pinned := c.clock - uint64(c.lay.Hparams.MoE.Used) // lastUse above this: in use
	best := -1
	for i, t := range c.lastUse {
		if t == 0 {
			return i
		}
		if t > pinned {
			continue
		}
		if best < 0 || c.uses[i] < c.uses[best] || (c.uses[i] == c.uses[best] && t > c.lastUse[best]) {
			best = i
		}
	}
	return best
}

// PrefetchExperts implements model.ExpertPrefetcher: the kernel starts
// reading the experts of layer l that are not cached into the page cache
// (posix_fadvise WILLNEED), so that from a cold disk the reads of a
// layer's experts overlap instead of following one another.
func (c *ExpertCache) PrefetchExperts(l int, experts []int32) {
	n := c.lay.Hparams.MoE.Experts
	if l < 0 || l >= len(c.lay.layers) {
		return
	}
	fd := int(c.file.Fd())
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

// read loads expert e of layer l into slot.
func (c *ExpertCache) read(slot, l, e int) error {
	start := time.Now()
	buf := c.mem[slot*c.lay.ExpertBytes : (slot+1)*c.lay.ExpertBytes]
	off, n := 0, 0
	for i := range c.lay.layers[l].mats {
		m := &c.lay.layers[l].mats[i]
		dst := buf[off : off+m.size : off+m.size]
		if _, err := c.file.ReadAt(dst, m.off+int64(e)*int64(m.size)); err != nil {
			return fmt.Errorf("stream: expert %d of layer %d: %w", e, l, err)
		}
		c.views[slot][i] = m.tensor
		c.views[slot][i].Data = dst
		off += alignUp(m.size)
		n += m.size
	}
	c.bytesRead.Add(int64(n))
	c.readNanos.Add(int64(time.Since(start)))
	return nil
}

// Stats returns the cache's counters. It may be called from any
// goroutine.
func (c *ExpertCache) Stats() ExpertStats {
	return ExpertStats{Hits: c.hits.Load(), Misses: c.misses.Load(), BytesRead: c.bytesRead.Load(),
		ReadTime: time.Duration(c.readNanos.Load())}
}

// Close closes the file. The arena's memory is the caller's to release.
func (c *ExpertCache) Close() error { return c.file.Close() }

// uint32s views b (4-byte aligned) as uint32 values.
func uint32s(b []byte) []uint32 {
	if len(b) == 0 {
		return []uint32{}
	}
	return unsafe.Slice((*uint32)(unsafe.Pointer(&b[0])), len(b)/4)
}
