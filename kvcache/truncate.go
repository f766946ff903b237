package kvcache

import (
	"errors"
	"fmt"
)

// ErrTruncate is returned by Truncate when the cache cannot go back to an
// earlier length: it has evicted positions, so slots no longer follow
// positions.
var ErrTruncate = errors.New("kvcache: cannot truncate")

// Truncate forgets every position from n on, so that the next position
// written is n: a conversation that diverges from what the cache holds
// keeps the common prefix. It fails (with ErrTruncate) once the cache has
// evicted a position. For F32 and F16 caches the entries kept are exactly
// those written; for the quantized types, keys of a group already
// quantized are decoded and quantized again as the group fills up anew
// (ExactPrefix says where truncating keeps only exact entries).
func (c *Cache) Truncate(n int) error {
	if n < 0 || n > c.len {
		return fmt.Errorf("%w: to %d positions, the cache holds %d", ErrTruncate, n, c.len)
	}
	if c.len > c.sh.Capacity {
		return fmt.Errorf("%w: %d positions were written into %d slots (evicted)", ErrTruncate, c.len, c.sh.Capacity)
	}
	if n == c.len {
		return nil
	}
	for l := range c.sh.Layers {
		o := l * c.sh.Capacity
		for s := n; s < c.len; s++ {
			c.pos[o+s] = -1
			c.score[o+s] = 0
		}
		c.used[l] = int32(n)
	}
	c.len = n
	return nil
}

// ExactPrefix returns the longest length m ≤ n that Truncate keeps as it
// was written, so that positions from m on, evaluated again, give what a
// fresh cache gives: n itself for the float types, and for quantized keys
// whenever n lies in the key group still staged (exact). When n lies in a
// group already quantized, m is that group's start: Truncate(n) would
// decode the group's first positions and quantize them again with the new
// positions, a second rounding a fresh cache does not make.
func (c *Cache) ExactPrefix(n int) int {
	if !c.quantKeys() || n >= c.len || n%c.kl.g == 0 {
		return n
	}
	start := n - n%c.kl.g
	if c.len > start+c.kl.g || c.stageOld[0] != 0 {
		return start // quantized, or staged from decoded keys
	}
	return n
}
