// Package kvcache stores the keys and values of the attention layers for
// the positions a session has processed, so that each new token attends to
// its past without recomputing it.
//
// A Cache holds a fixed number of slots per layer. Without an eviction
// Policy, slot i holds position i and writing beyond the capacity is an
// error. With one, the cache is a ring: once every slot is used, the policy
// picks the slot the next position overwrites (the oldest for Window, the
// least attended outside a recent window for HeavyHitter). Keys are stored
// after the rotary embedding, so an evicted cache keeps each key's original
// position.
//
// Entries are stored as float32, as float16 (llama.cpp's default cache;
// both slot after slot, a slot's KV heads side by side) or, to save
// memory, as 8-, 4- or 2-bit codes: keys with a scale and offset per
// channel and group of KeyGroup slots (the group being written stays
// exact), values with a scale and offset per position and head. The cache
// only stores: it hands out its rows as they are stored (Keys and Values,
// KeysF16 and ValuesF16, KeyCodes and ValueCodes), and the attention
// (package model) reads them; DecodeKey and DecodeValue give any entry as
// float32.
package kvcache

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/qsf-llm/qsf/kernels"
	"github.com/qsf-llm/qsf/quant"
)

// ErrFull is returned when a position beyond the cache's capacity is
// written to a cache without an eviction policy.
var ErrFull = errors.New("kvcache: context is full")

// Shape is the geometry of a cache.
type Shape struct {
	Layers   int
	Capacity int // slots (positions held at once)
	KVHeads  int
	HeadDimK int
	HeadDimV int
}

func (sh Shape) valid() bool {
	return sh.Layers > 0 && sh.Capacity > 0 && sh.KVHeads > 0 && sh.HeadDimK > 0 && sh.HeadDimV > 0
}

// Options control how a cache stores its entries.
type Options struct {
	// Type is the storage type of keys and values (F32 by default).
	Type Type
	// Policy chooses the slot to overwrite when the cache is full; nil
	// means no eviction: a full cache refuses more positions.
	Policy Policy
	// Alloc, when non-nil, provides the cache's memory (for example from
	// an arena); it must return n zeroed bytes aligned to 8. Nil means the
	// Go heap.
	Alloc func(n int) []byte
}

// Cache holds the keys and values of every layer for up to Capacity
// positions.
type Cache struct {
	sh     Shape
	typ    Type
	policy Policy

	kRow, vRow int // bytes of one slot's keys (values) in kdata (vdata)
	kl         keyLayout
	stage      []float32 // quantized keys: the staged block of each layer, exact
	stageBlk   []int32   // the block staged per layer, -1 for none
	stageOld   []int32   // 1 when the staged block's stored scales are in use
	kdata      []byte
	vdata      []byte
	keys, vals []float32 // F32: kdata and vdata as float32
	keys16     []uint16  // F16: kdata as float16 bits
	vals16     []uint16  // F16: vdata as float16 bits

	pos   []int32   // logical position of each layer×slot, -1 when empty
	score []float32 // accumulated attention of each layer×slot (HeavyHitter)
	used  []int32   // slots in use per layer
	len   int
}

// Bytes returns the memory a cache of this shape and type occupies.
func Bytes(sh Shape, t Type) int64 {
	k, v := rowBytes(sh, t)
	slots := int64(sh.Layers) * int64(sh.Capacity)
	keys := slots * int64(k)
	if t >= Q8 {
		kl := newKeyLayout(sh, t)
		keys = int64(sh.Layers) * int64(kl.layerBytes()+4*kl.stageLen()+8)
	}
	return keys + slots*int64(v) + slots*8 + int64(sh.Layers)*4
}

// rowBytes returns the bytes of one slot's keys and values.
func rowBytes(sh Shape, t Type) (k, v int) {
	return sh.KVHeads * t.headBytes(sh.HeadDimK), sh.KVHeads * t.headBytes(sh.HeadDimV)
}

// New returns an empty float32 cache without eviction for layers layers,
// capacity positions and the given key and value widths (all KV heads side
// by side), as one head each.
func New(layers, capacity, keyDim, valueDim int) (*Cache, error) {
	return NewWith(Shape{Layers: layers, Capacity: capacity, KVHeads: 1, HeadDimK: keyDim, HeadDimV: valueDim}, Options{})
}

// NewWith returns an empty cache of the given shape.
func NewWith(sh Shape, opts Options) (*Cache, error) {
	if !sh.valid() || sh.Capacity > 1<<30 {
		return nil, fmt.Errorf("kvcache: invalid shape %+v", sh)
	}
	if !opts.Type.valid() {
		return nil, fmt.Errorf("kvcache: unknown type %d", opts.Type)
	}
	alloc := opts.Alloc
	if alloc == nil {
		alloc = func(n int) []byte { return make([]byte, n, n+8) }
	}
	c := &Cache{sh: sh, typ: opts.Type, policy: opts.Policy}
	c.kRow, c.vRow = rowBytes(sh, opts.Type)
	slots := sh.Layers * sh.Capacity
	kbytes := slots * c.kRow
	if c.quantKeys() {
		c.kl = newKeyLayout(sh, c.typ)
		kbytes = sh.Layers * c.kl.layerBytes()
		c.stage = asFloat32(alloc(4 * sh.Layers * c.kl.stageLen()))
		c.stageBlk = asInt32(alloc(8 * sh.Layers))
		if len(c.stage) != sh.Layers*c.kl.stageLen() || len(c.stageBlk) != 2*sh.Layers {
			return nil, errors.New("kvcache: Alloc returned a buffer of the wrong size")
		}
		c.stageBlk, c.stageOld = c.stageBlk[:sh.Layers], c.stageBlk[sh.Layers:]
	}
	vbytes := slots * c.vRow
	c.kdata = alloc(kbytes)
	c.vdata = alloc(vbytes)
	c.pos = asInt32(alloc(slots * 4))
	c.score = asFloat32(alloc(slots * 4))
	c.used = asInt32(alloc(sh.Layers * 4))
	if len(c.kdata) != kbytes || len(c.vdata) != vbytes || len(c.pos) != slots || len(c.score) != slots || len(c.used) != sh.Layers {
		return nil, errors.New("kvcache: Alloc returned a buffer of the wrong size")
	}
	switch c.typ {
	case F32:
		c.keys, c.vals = asFloat32(c.kdata), asFloat32(c.vdata)
	case F16:
		c.keys16, c.vals16 = asUint16(c.kdata), asUint16(c.vdata)
	}
	c.Reset()
	return c, nil
}

func asFloat32(b []byte) []float32 {
	if len(b) == 0 {
		return []float32{}
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(&b[0])), len(b)/4)
}

func asUint16(b []byte) []uint16 {
	if len(b) == 0 {
		return []uint16{}
	}
	return unsafe.Slice((*uint16)(unsafe.Pointer(&b[0])), len(b)/2)
}

func asInt32(b []byte) []int32 {
	if len(b) == 0 {
		return []int32{}
	}
	return unsafe.Slice((*int32)(unsafe.Pointer(&b[0])), len(b)/4)
}

// Shape returns the cache's geometry.
func (c *Cache) Shape() Shape { return c.sh }

// Type returns the storage type of keys and values.
func (c *Cache) Type() Type { return c.typ }

// Capacity returns the number of slots per layer.
func (c *Cache) Capacity() int { return c.sh.Capacity }

// Evicts reports whether the cache has an eviction policy, so that it
// accepts positions beyond its capacity.
func (c *Cache) Evicts() bool { return c.policy != nil }

// Tracks reports whether the policy uses the attention weights, which the
// caller then passes to Observe.
func (c *Cache) Tracks() bool { return c.policy != nil && c.policy.Tracks() }

// Len returns the number of positions processed (the next position to
// write), which may exceed Capacity when the cache evicts.
func (c *Cache) Len() int { return c.len }

// Used returns the number of slots of layer holding an entry.
func (c *Cache) Used(layer int) int { return int(c.used[layer]) }

// Position returns the position stored in a slot of layer, or -1.
func (c *Cache) Position(layer, slot int) int { return int(c.pos[layer*c.sh.Capacity+slot]) }

// SetLen records that position n-1 has been stored in every layer, so n is
// the next position.
func (c *Cache) SetLen(n int) error {
	if n < 0 || (c.policy == nil && n > c.sh.Capacity) {
		return fmt.Errorf("%w: position %d, capacity %d", ErrFull, n, c.sh.Capacity)
	}
	c.len = n
	return nil
}

// Reset forgets every stored position.
func (c *Cache) Reset() {
	c.len = 0
	clear(c.used)
	clear(c.score)
	for i := range c.pos {
		c.pos[i] = -1
	}
	for i := range c.stageBlk {
		c.stageBlk[i] = -1
	}
}

// Slot returns the slot of layer that position Len() is written to: the
// next free one, or, when all are used, the one the policy evicts. It
// returns ErrFull for a full cache without a policy.
func (c *Cache) Slot(layer int) (int, error) {
	if u := int(c.used[layer]); u < c.sh.Capacity {
		return u, nil
	}
	if c.policy == nil {
		return 0, fmt.Errorf("%w: position %d, capacity %d", ErrFull, c.len, c.sh.Capacity)
	}
	o := layer * c.sh.Capacity
	s := c.policy.Victim(c.pos[o:o+c.sh.Capacity], c.score[o:o+c.sh.Capacity], c.len)
	if s < 0 || s >= c.sh.Capacity {
		s = oldest(c.pos[o : o+c.sh.Capacity])
	}
	return s, nil
}

// Store writes the key and value of position Len() of layer into slot (as
// returned by Slot), converting them to the cache's type.
func (c *Cache) Store(layer, slot int, k, v []float32) {
	i := layer*c.sh.Capacity + slot
	switch c.typ {
	case F32:
		copy(c.keys[i*c.kRow/4:(i+1)*c.kRow/4], k)
		copy(c.vals[i*c.vRow/4:(i+1)*c.vRow/4], v)
	case F16:
		// Rounded to nearest even, as llama.cpp copies into its f16 cache.
		kernels.F16FromF32(c.keys16[i*c.kRow/2:(i+1)*c.kRow/2], k[:c.kRow/2])
		kernels.F16FromF32(c.vals16[i*c.vRow/2:(i+1)*c.vRow/2], v[:c.vRow/2])
	default:
		if c.quantKeys() {
			c.storeKey(layer, slot, k)
		} else {
			encodeHeads(c.typ, c.kdata[i*c.kRow:(i+1)*c.kRow], k, c.sh.KVHeads, c.sh.HeadDimK)
		}
		encodeHeads(c.typ, c.vdata[i*c.vRow:(i+1)*c.vRow], v, c.sh.KVHeads, c.sh.HeadDimV)
	}
	if int(c.pos[i]) < 0 {
		c.used[layer]++
	}
	c.pos[i] = int32(c.len)
	c.score[i] = 0
}

// Observe adds the attention weights one query head gave to the used slots
// of layer (p[s] for slot s) to their scores, for the HeavyHitter policy.
func (c *Cache) Observe(layer int, p []float32) {
	o := layer * c.sh.Capacity
	sc := c.score[o : o+len(p)]
	for s, w := range p {
		sc[s] += w
	}
}

// Key returns the float32 key vector of layer in slot, to read or write.
// It returns nil unless the cache's type is F32.
func (c *Cache) Key(layer, slot int) []float32 {
	if c.typ != F32 {
		return nil
	}
	n := c.kRow / 4
	o := (layer*c.sh.Capacity + slot) * n
	return c.keys[o : o+n : o+n]
}

// Value returns the float32 value vector of layer in slot, to read or
// write. It returns nil unless the cache's type is F32.
func (c *Cache) Value(layer, slot int) []float32 {
	if c.typ != F32 {
		return nil
	}
	n := c.vRow / 4
	o := (layer*c.sh.Capacity + slot) * n
	return c.vals[o : o+n : o+n]
}

// Keys returns the float32 keys of slots [0, n) of layer as one slice of
// n×KVHeads×HeadDimK elements, or nil unless the type is F32.
func (c *Cache) Keys(layer, n int) []float32 {
	if c.typ != F32 {
		return nil
	}
	o := layer * c.sh.Capacity * c.kRow / 4
	return c.keys[o : o+n*c.kRow/4]
}

// Values returns the float32 values of slots [0, n) of layer as one slice
// of n×KVHeads×HeadDimV elements, or nil unless the type is F32.
func (c *Cache) Values(layer, n int) []float32 {
	if c.typ != F32 {
		return nil
	}
	o := layer * c.sh.Capacity * c.vRow / 4
	return c.vals[o : o+n*c.vRow/4]
}

// KeysF16 returns the keys of slots [0, n) of layer as float16 bits, as
// Keys lays them out: n×KVHeads×HeadDimK elements, slot after slot, a
// slot's KV heads side by side. It returns nil unless the type is F16.
func (c *Cache) KeysF16(layer, n int) []uint16 {
	if c.typ != F16 {
		return nil
	}
	o := layer * c.sh.Capacity * c.kRow / 2
	return c.keys16[o : o+n*c.kRow/2]
}

// ValuesF16 returns the values of slots [0, n) of layer as float16 bits,
// as Values lays them out: n×KVHeads×HeadDimV elements, slot after slot,
// a slot's KV heads side by side. (llama.cpp stores an f16 cache's values
// transposed; kernels.ValuesF16Heads takes its sums over this layout.) It
// returns nil unless the type is F16.
func (c *Cache) ValuesF16(layer, n int) []uint16 {
	if c.typ != F16 {
		return nil
	}
	o := layer * c.sh.Capacity * c.vRow / 2
	return c.vals16[o : o+n*c.vRow/2]
}

// CodedKeys are the keys of one KV head in one group of slots of a
// quantized cache (Q8, Q4, Q2) as the cache stores them, for the attention
// to read without decoding them (see KeyCodes).
type CodedKeys struct {
	First, Slots int // the group's slots: [First, First+Slots)
	// Exact holds the keys of the group being written, which is kept
	// exact: slot First+j at Exact[j*Stride:], HeadDimK values. It is nil
	// for a coded group.
	Exact []float32
	// Codes holds slot First+j's codes at Codes[j*Stride:], Bits each,
	// packed little-endian within a byte; element i of the key is
	// Offsets[i] + Scales[i]·code(i), the product rounded to float32
	// before the sum. Scales and Offsets are little-endian float32s, one
	// per channel of the head, shared by the group.
	Codes           []byte
	Scales, Offsets []byte
	Stride          int // from one slot to the next: elements of Exact, or bytes of Codes
}

// KeyCodes returns the keys of KV head h in the group of slots of layer
// that holds slot, as stored (see CodedKeys). It returns the zero
// CodedKeys for a cache of another type.
func (c *Cache) KeyCodes(layer, slot, h int) CodedKeys {
	if !c.quantKeys() {
		return CodedKeys{}
	}
	kl := &c.kl
	b := slot / kl.g
	ck := CodedKeys{First: b * kl.g, Slots: min(kl.g, c.sh.Capacity-b*kl.g)}
	if int(c.stageBlk[layer]) == b {
		ck.Exact, ck.Stride = c.stageOf(layer)[h*kl.hd:], kl.kd
		return ck
	}
	blk := c.keyBlock(layer, b)
	ck.Codes, ck.Stride = blk[8*kl.kd+h*kl.headCode:], kl.rowCode
	ck.Scales = blk[4*h*kl.hd : 4*(h+1)*kl.hd]
	ck.Offsets = blk[4*(kl.kd+h*kl.hd) : 4*(kl.kd+(h+1)*kl.hd)]
	return ck
}

// ValueCodes returns the stored value of KV head h in slot of layer of a
// quantized cache (Q8, Q4, Q2): its codes, Bits each, packed little-endian
// within a byte (Q8: signed bytes), with one scale and offset: element i
// is offset + scale·code(i) (Q8's offset is 0). It returns nil for other
// types.
func (c *Cache) ValueCodes(layer, slot, h int) (codes []byte, scale, offset float32) {
	if c.typ < Q8 {
		return nil, 0, 0
	}
	hb := c.typ.headBytes(c.sh.HeadDimV)
	o := (layer*c.sh.Capacity+slot)*c.vRow + h*hb
	src := c.vdata[o : o+hb]
	return src[headHeader:], getF32(src), getF32(src[4:])
}

// DecodeKey writes the key of KV head h in slot of layer, decoded to
// float32, to dst (len HeadDimK), whatever the cache's type.
func (c *Cache) DecodeKey(dst []float32, layer, slot, h int) {
	d := c.sh.HeadDimK
	dst = dst[:d]
	switch {
	case c.typ == F32:
		copy(dst, c.Key(layer, slot)[h*d:])
	case c.typ == F16:
		o := (layer*c.sh.Capacity+slot)*c.kRow/2 + h*d
		for i, x := range c.keys16[o : o+d] {
			dst[i] = quant.FP16ToFP32(x)
		}
	default:
		kl := c.kl
		b, s := slot/kl.g, slot%kl.g
		if int(c.stageBlk[layer]) == b {
			copy(dst, c.stageOf(layer)[s*kl.kd+h*kl.hd:])
			return
		}
		c.decodeKey(dst, c.keyBlock(layer, b), s, h)
	}
}

// DecodeValue writes the value of KV head h in slot of layer, decoded to
// float32, to dst (len HeadDimV), whatever the cache's type.
func (c *Cache) DecodeValue(dst []float32, layer, slot, h int) {
	d := c.sh.HeadDimV
	dst = dst[:d]
	switch c.typ {
	case F32:
		copy(dst, c.Value(layer, slot)[h*d:])
	case F16:
		o := (layer*c.sh.Capacity+slot)*c.vRow/2 + h*d
		for i, x := range c.vals16[o : o+d] {
			dst[i] = quant.FP16ToFP32(x)
		}
	default:
		hb := c.typ.headBytes(d)
		o := (layer*c.sh.Capacity+slot)*c.vRow + h*hb
		decodeHead(c.typ, dst, c.vdata[o:o+hb])
	}
}
