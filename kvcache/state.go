package kvcache

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"unsafe"
)

// ErrState is returned by ReadFrom for a saved cache that does not fit the
// cache (another shape or type) or is malformed.
var ErrState = errors.New("kvcache: saved state does not fit")

// stateHeader is the fixed part of a saved cache (little-endian).
type stateHeader struct {
	Layers, Capacity, KVHeads, HeadDimK, HeadDimV uint32
	Type                                          uint32
	Len                                           uint64 // positions processed
	Slots                                         uint32 // slots in use (the same in every layer)
}

const stateHeaderBytes = 4*5 + 4 + 8 + 4

// StateBytes returns the number of bytes WriteTo writes for the cache as
// it is now.
func (c *Cache) StateBytes() int64 {
	n := int64(stateHeaderBytes)
	for _, r := range c.regions(c.slotsInUse()) {
		n += int64(len(r))
	}
	if c.typ == F16 {
		n += int64(c.sh.Layers) * int64(c.slotsInUse()) * int64(c.kRow+c.vRow)
	}
	return n
}

// slotsInUse returns the number of slots every layer uses; slots
// [0, n) are the ones in use, since a cache fills its slots in order and
// evicts only once all are used.
func (c *Cache) slotsInUse() int {
	if c.sh.Layers == 0 {
		return 0
	}
	return int(c.used[0])
}

// regions returns the parts of the cache's memory that hold the entries
// of slots [0, n) and their bookkeeping, in the order they are saved. An
// F16 cache's entries are not among them: they are saved after these in
// another layout (see f16Saved).
func (c *Cache) regions(n int) [][]byte {
	sh := c.sh
	var out [][]byte
	i32 := func(s []int32) []byte {
		if len(s) == 0 {
			return nil
		}
		return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), 4*len(s))
	}
	f32 := func(s []float32) []byte {
		if len(s) == 0 {
			return nil
		}
		return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), 4*len(s))
	}
	out = append(out, i32(c.used))
	for l := range sh.Layers {
		o := l * sh.Capacity
		out = append(out, i32(c.pos[o:o+n]), f32(c.score[o:o+n]))
	}
	switch {
	case c.typ == F16:
		return out
	case c.quantKeys():
		blocks := (n + c.kl.g - 1) / c.kl.g
		for l := range sh.Layers {
			o := l * c.kl.blocks * c.kl.block
			out = append(out, c.kdata[o:o+blocks*c.kl.block])
		}
		out = append(out, f32(c.stage), i32(c.stageBlk), i32(c.stageOld))
	default: // F32: slot-major keys
		for l := range sh.Layers {
			o := l * sh.Capacity * c.kRow
			out = append(out, c.kdata[o:o+n*c.kRow])
		}
	}
	for l := range sh.Layers {
		o := l * sh.Capacity * c.vRow
		out = append(out, c.vdata[o:o+n*c.vRow])
	}
	return out
}

// WriteTo writes the cache's contents (the entries of the slots in use and
// what the cache knows about them) in its own encoding, which ReadFrom
// reads back into a cache of the same shape and type. Only little-endian
// machines write and read it (as the GGUF files QSF runs).
func (c *Cache) WriteTo(w io.Writer) (int64, error) {
	n := c.slotsInUse()
	hdr := stateHeader{uint32(c.sh.Layers), uint32(c.sh.Capacity), uint32(c.sh.KVHeads), uint32(c.sh.HeadDimK),
		uint32(c.sh.HeadDimV), uint32(c.typ), uint64(c.len), uint32(n)}
	if err := binary.Write(w, binary.LittleEndian, &hdr); err != nil {
		return 0, err
	}
	total := int64(stateHeaderBytes)
	for _, r := range c.regions(n) {
		k, err := w.Write(r)
		total += int64(k)
		if err != nil {
			return total, err
		}
	}
	if c.typ == F16 {
		k, err := c.writeF16(w, n)
		total += k
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// ReadFrom replaces the cache's contents with a state WriteTo wrote. It
// reads exactly that state's bytes. A state of another shape or type, or
// an inconsistent one, gives an error wrapping ErrState and leaves the
// cache empty; so does a short read (with the reader's error).
func (c *Cache) ReadFrom(r io.Reader) (int64, error) {
	c.Reset()
	var hdr stateHeader
	if err := binary.Read(r, binary.LittleEndian, &hdr); err != nil {
		return 0, fmt.Errorf("%w: header: %w", ErrState, err)
	}
	sh := c.sh
	if hdr.Layers != uint32(sh.Layers) || hdr.Capacity != uint32(sh.Capacity) || hdr.KVHeads != uint32(sh.KVHeads) ||
		hdr.HeadDimK != uint32(sh.HeadDimK) || hdr.HeadDimV != uint32(sh.HeadDimV) {
		return stateHeaderBytes, fmt.Errorf("%w: saved shape %d layers × %d slots × %d heads (%d/%d), cache %+v",
			ErrState, hdr.Layers, hdr.Capacity, hdr.KVHeads, hdr.HeadDimK, hdr.HeadDimV, sh)
	}
	if hdr.Type != uint32(c.typ) {
		return stateHeaderBytes, fmt.Errorf("%w: saved type %d, cache %v", ErrState, hdr.Type, c.typ)
	}
	n := int(hdr.Slots)
	evicted := hdr.Len > uint64(sh.Capacity)
	if n > sh.Capacity || (!evicted && uint64(n) != hdr.Len) || (evicted && (c.policy == nil || n != sh.Capacity)) || hdr.Len > 1<<40 {
		return stateHeaderBytes, fmt.Errorf("%w: %d slots in use for %d positions, capacity %d", ErrState, n, hdr.Len, sh.Capacity)
	}
	total := int64(stateHeaderBytes)
	for _, reg := range c.regions(n) {
		k, err := io.ReadFull(r, reg)
		total += int64(k)
		if err != nil {
			c.Reset()
			return total, fmt.Errorf("%w: %w", ErrState, err)
		}
	}
	if c.typ == F16 {
		k, err := c.readF16(r, n)
		total += k
		if err != nil {
			c.Reset()
			return total, fmt.Errorf("%w: %w", ErrState, err)
		}
	}
	if err := c.checkState(n); err != nil {
		c.Reset()
		return total, err
	}
	c.len = int(hdr.Len)
	return total, nil
}

// checkState checks the bookkeeping just read for n slots in use.
func (c *Cache) checkState(n int) error {
	for l := range c.sh.Layers {
		if int(c.used[l]) != n {
			return fmt.Errorf("%w: layer %d uses %d slots, want %d", ErrState, l, c.used[l], n)
		}
		o := l * c.sh.Capacity
		for s := range n {
			if c.pos[o+s] < 0 {
				return fmt.Errorf("%w: layer %d slot %d in use without a position", ErrState, l, s)
			}
		}
	}
	if c.quantKeys() {
		for l := range c.sh.Layers {
			if b := c.stageBlk[l]; b < -1 || int(b) >= c.kl.blocks {
				return fmt.Errorf("%w: layer %d stages block %d of %d", ErrState, l, b, c.kl.blocks)
			}
		}
	}
	return nil
}

// An F16 cache stores a slot's keys, and its values, with its KV heads side
// by side (as F32 does), but saves them as earlier builds stored them, so
// that their session files still load: after the bookkeeping, every
// layer's keys head by head (a head's n slots one after another, HeadDimK
// elements each), then every layer's values transposed (for each KV head
// and dimension d, slot after slot, n elements: llama.cpp's layout). One
// KV head of one layer is converted at a time, in a scratch buffer.

// writeF16 writes the entries of slots [0, n) of an F16 cache in their
// saved layout.
func (c *Cache) writeF16(w io.Writer, n int) (int64, error) {
	var total int64
	err := c.f16Saved(n, func(buf []uint16, layer, h int, values bool) error {
		c.packF16(buf, layer, h, n, values)
		k, err := w.Write(u16Bytes(buf))
		total += int64(k)
		return err
	})
	return total, err
}

// readF16 reads the entries of slots [0, n) of an F16 cache in their saved
// layout.
func (c *Cache) readF16(r io.Reader, n int) (int64, error) {
	var total int64
	err := c.f16Saved(n, func(buf []uint16, layer, h int, values bool) error {
		k, err := io.ReadFull(r, u16Bytes(buf))
		total += int64(k)
		if err == nil {
			c.unpackF16(buf, layer, h, n, values)
		}
		return err
	})
	return total, err
}

// f16Saved calls f for each KV head's keys of each layer, then for each
// KV head's values of each layer, in the order they are saved, with a
// scratch buffer of their n slots' elements. It stops at f's first error.
func (c *Cache) f16Saved(n int, f func(buf []uint16, layer, h int, values bool) error) error {
	if n == 0 {
		return nil
	}
	sh := c.sh
	scratch := make([]uint16, n*max(sh.HeadDimK, sh.HeadDimV))
	for _, values := range []bool{false, true} {
		d := sh.HeadDimK
		if values {
			d = sh.HeadDimV
		}
		for l := range sh.Layers {
			for h := range sh.KVHeads {
				if err := f(scratch[:n*d], l, h, values); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// packF16 copies KV head h's keys (or values) of slots [0, n) of layer to
// buf in their saved layout: keys slot after slot, values transposed.
func (c *Cache) packF16(buf []uint16, layer, h, n int, values bool) {
	if !values {
		d, row := c.sh.HeadDimK, c.kRow/2
		src := c.keys16[layer*c.sh.Capacity*row+h*d:]
		for s := range n {
			copy(buf[s*d:(s+1)*d], src[s*row:s*row+d])
		}
		return
	}
	d, row := c.sh.HeadDimV, c.vRow/2
	src := c.vals16[layer*c.sh.Capacity*row+h*d:]
	for s := range n {
		for i, x := range src[s*row : s*row+d] {
			buf[i*n+s] = x
		}
	}
}

// unpackF16 is the inverse of packF16: it stores buf, KV head h's keys (or
// values) of slots [0, n) of layer in their saved layout, in the cache.
func (c *Cache) unpackF16(buf []uint16, layer, h, n int, values bool) {
	if !values {
		d, row := c.sh.HeadDimK, c.kRow/2
		dst := c.keys16[layer*c.sh.Capacity*row+h*d:]
		for s := range n {
			copy(dst[s*row:s*row+d], buf[s*d:(s+1)*d])
		}
		return
	}
	d, row := c.sh.HeadDimV, c.vRow/2
	dst := c.vals16[layer*c.sh.Capacity*row+h*d:]
	for s := range n {
		v := dst[s*row : s*row+d]
		for i := range v {
			v[i] = buf[i*n+s]
		}
	}
}

// u16Bytes returns the memory of s as bytes (little-endian on the
// machines that save and load a cache).
func u16Bytes(s []uint16) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), 2*len(s))
}
