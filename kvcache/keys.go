package kvcache

import "math"

// KeyGroup is the number of consecutive slots whose quantized keys share
// one scale and offset per channel.
//
// Keys are quantized per channel rather than per position (as in KIVI, Liu
// et al., 2024): a few key channels carry a large, slowly varying offset
// that a per-position scale would spread over every other channel's codes,
// while the spread of one channel over a group of positions is small. The
// keys of the group being written are kept exact, in a float32 staging
// area of KeyGroup slots per layer, and quantized when the writes move to
// another group. Values are quantized per position and head.
const KeyGroup = 32

// keyLayout is the storage of quantized keys: per layer, blocks of g
// slots, each block a float32 scale and offset per channel followed by the
// slots' codes (per slot, per head, packed little-endian within a byte).
type keyLayout struct {
	g, blocks int
	kd, hd    int // channels of a slot (all heads); of a head
	headCode  int // code bytes of one head in one slot
	rowCode   int // code bytes of one slot
	block     int // bytes of one block
}

func newKeyLayout(sh Shape, t Type) keyLayout {
	g := min(KeyGroup, sh.Capacity)
	kl := keyLayout{g: g, blocks: (sh.Capacity + g - 1) / g, kd: sh.KVHeads * sh.HeadDimK, hd: sh.HeadDimK}
	kl.headCode = (sh.HeadDimK*t.Bits() + 7) / 8
	kl.rowCode = sh.KVHeads * kl.headCode
	kl.block = 8*kl.kd + g*kl.rowCode
	return kl
}

// layerBytes returns the bytes of one layer's blocks.
func (kl keyLayout) layerBytes() int { return kl.blocks * kl.block }

// stageLen returns the float32 elements of one layer's staging area.
func (kl keyLayout) stageLen() int { return kl.g * kl.kd }

// quantKeys reports whether the cache stores keys in per-channel blocks.
func (c *Cache) quantKeys() bool { return c.typ >= Q8 }

func (c *Cache) keyBlock(layer, b int) []byte {
	o := (layer*c.kl.blocks + b) * c.kl.block
	return c.kdata[o : o+c.kl.block]
}

func (c *Cache) stageOf(layer int) []float32 {
	n := c.kl.stageLen()
	return c.stage[layer*n : (layer+1)*n]
}

// blockPos returns the positions held by the slots of block b of layer.
func (c *Cache) blockPos(layer, b int) []int32 {
	lo := b * c.kl.g
	hi := min(lo+c.kl.g, c.sh.Capacity)
	o := layer * c.sh.Capacity
	return c.pos[o+lo : o+hi]
}

// storeKey writes key k of slot of layer into the staging area, first
// quantizing the block staged before when slot lies in another block.
func (c *Cache) storeKey(layer, slot int, k []float32) {
	b := slot / c.kl.g
	if int(c.stageBlk[layer]) != b {
		c.flushKeys(layer)
		c.loadKeys(layer, b)
	}
	s := slot % c.kl.g
	copy(c.stageOf(layer)[s*c.kl.kd:(s+1)*c.kl.kd], k)
}

// flushKeys quantizes the staged block of layer into its storage.
func (c *Cache) flushKeys(layer int) {
	b := int(c.stageBlk[layer])
	if b < 0 {
		return
	}
	c.stageBlk[layer] = -1
	kl := c.kl
	blk := c.keyBlock(layer, b)
	st := c.stageOf(layer)
	pos := c.blockPos(layer, b)
	levels := float32(c.typ.levels())
	bits := c.typ.Bits()
	per := 8 / bits
	codes := blk[8*kl.kd:]
	clear(codes)
	for ch := range kl.kd {
		lo, hi := float32(math.Inf(1)), float32(math.Inf(-1))
		for s, p := range pos {
			if p >= 0 {
				v := st[s*kl.kd+ch]
				lo, hi = min(lo, v), max(hi, v)
			}
		}
		if lo > hi { // no slot in use
			lo, hi = 0, 0
		}
		scale := (hi - lo) / levels
		// Entries decoded from the block lie on its grid: keep the grid
		// when it still covers the channel, so they are not rounded again.
		if c.stageOld[layer] != 0 {
			if s0, l0 := getF32(blk[4*ch:]), getF32(blk[4*(kl.kd+ch):]); l0 <= lo && l0+float32(levels*s0) >= hi {
				scale, lo = s0, l0
			}
		}
		inv := float32(0)
		if scale > 0 {
			inv = 1 / scale
		}
		putF32(blk[4*ch:], scale)
		putF32(blk[4*(kl.kd+ch):], lo)
		h, i := ch/kl.hd, ch%kl.hd
		for s, p := range pos {
			if p < 0 {
				continue
			}
			q := byte(roundClamp((st[s*kl.kd+ch]-lo)*inv, 0, levels))
			codes[s*kl.rowCode+h*kl.headCode+i/per] |= q << (bits * (i % per))
		}
	}
}

// loadKeys decodes the used slots of block b of layer into the staging
// area and makes b the staged block.
func (c *Cache) loadKeys(layer, b int) {
	kl := c.kl
	st := c.stageOf(layer)
	blk := c.keyBlock(layer, b)
	c.stageOld[layer] = 0
	for s, p := range c.blockPos(layer, b) {
		if p < 0 {
			continue
		}
		c.stageOld[layer] = 1
		for h := range c.sh.KVHeads {
			c.decodeKey(st[s*kl.kd+h*kl.hd:s*kl.kd+(h+1)*kl.hd], blk, s, h)
		}
	}
	c.stageBlk[layer] = int32(b)
}

// decodeKey writes head h of slot s (within the block) of a quantized
// block to dst.
func (c *Cache) decodeKey(dst []float32, blk []byte, s, h int) {
	kl := c.kl
	bits := c.typ.Bits()
	per := 8 / bits
	mask := byte(1<<bits - 1)
	codes := blk[8*kl.kd+s*kl.rowCode+h*kl.headCode:]
	for i := range dst {
		ch := h*kl.hd + i
		q := codes[i/per] >> (bits * (i % per)) & mask
		dst[i] = getF32(blk[4*(kl.kd+ch):]) + float32(getF32(blk[4*ch:])*float32(q))
	}
}
