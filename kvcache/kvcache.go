// Package kvcache stores the keys and values of the attention layers for
// the positions a session has processed, so that each new token attends to
// its past without recomputing it.
package kvcache

import (
	"errors"
	"fmt"
)

// ErrFull is returned when a position beyond the cache's capacity is
// written.
var ErrFull = errors.New("kvcache: context is full")

// Cache holds float32 keys and values for every layer and position. Keys
// and values of one position and layer are contiguous vectors of KeyDim and
// ValueDim elements (all KV heads side by side).
type Cache struct {
	layers, capacity int
	keyDim, valueDim int
	keys, values     []float32
	len              int
}

// New returns an empty cache for layers layers, capacity positions and the
// given key and value widths (KV heads × head dimension).
func New(layers, capacity, keyDim, valueDim int) (*Cache, error) {
	if layers <= 0 || capacity <= 0 || keyDim <= 0 || valueDim <= 0 {
		return nil, fmt.Errorf("kvcache: invalid shape %d layers × %d positions × (%d, %d)", layers, capacity, keyDim, valueDim)
	}
	return &Cache{
		layers: layers, capacity: capacity, keyDim: keyDim, valueDim: valueDim,
		keys:   make([]float32, layers*capacity*keyDim),
		values: make([]float32, layers*capacity*valueDim),
	}, nil
}

// Bytes returns the memory a cache of this shape occupies.
func Bytes(layers, capacity, keyDim, valueDim int) int64 {
	return int64(layers) * int64(capacity) * int64(keyDim+valueDim) * 4
}

// Capacity returns the number of positions the cache can hold.
func (c *Cache) Capacity() int { return c.capacity }

// Len returns the number of positions stored (the next position to write).
func (c *Cache) Len() int { return c.len }

// SetLen records that positions [0, n) hold valid entries in every layer.
func (c *Cache) SetLen(n int) error {
	if n < 0 || n > c.capacity {
		return fmt.Errorf("%w: position %d, capacity %d", ErrFull, n, c.capacity)
	}
	c.len = n
	return nil
}

// Reset forgets every stored position.
func (c *Cache) Reset() { c.len = 0 }

// Key returns the key vector of layer at pos, to read or write.
func (c *Cache) Key(layer, pos int) []float32 {
	o := (layer*c.capacity + pos) * c.keyDim
	return c.keys[o : o+c.keyDim : o+c.keyDim]
}

// Value returns the value vector of layer at pos, to read or write.
func (c *Cache) Value(layer, pos int) []float32 {
	o := (layer*c.capacity + pos) * c.valueDim
	return c.values[o : o+c.valueDim : o+c.valueDim]
}

// Keys returns the key vectors of positions [0, n) of layer as one slice of
// n×KeyDim elements.
func (c *Cache) Keys(layer, n int) []float32 {
	o := layer * c.capacity * c.keyDim
	return c.keys[o : o+n*c.keyDim]
}

// Values returns the value vectors of positions [0, n) of layer as one
// slice of n×ValueDim elements.
func (c *Cache) Values(layer, n int) []float32 {
	o := layer * c.capacity * c.valueDim
	return c.values[o : o+n*c.valueDim]
}
