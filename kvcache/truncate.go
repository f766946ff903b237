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
// quantized are decoded and quantized again as the group fills up anew.
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
