package format

import "iter"

// KV is one metadata key-value pair.
type KV struct {
	Key   string
	Value Value
}

// Metadata is an ordered set of key-value pairs with unique keys, as stored
// in a GGUF header. The zero Metadata is empty and ready to use.
//
// The typed getters (String, Uint, ...) report false when the key is absent
// or its value has another type; see the Value methods of the same names for
// the conversions they allow.
type Metadata struct {
	kvs   []KV
	index map[string]int // key -> position in kvs
}

// Len returns the number of pairs.
func (m *Metadata) Len() int { return len(m.kvs) }

// Keys returns the keys in file order.
func (m *Metadata) Keys() []string {
	keys := make([]string, len(m.kvs))
	for i, kv := range m.kvs {
		keys[i] = kv.Key
	}
	return keys
}

// All returns an iterator over the pairs in file order.
func (m *Metadata) All() iter.Seq2[string, Value] {
	return func(yield func(string, Value) bool) {
		for _, kv := range m.kvs {
			if !yield(kv.Key, kv.Value) {
				return
			}
		}
	}
}

// Get returns the value stored under key.
func (m *Metadata) Get(key string) (Value, bool) {
	i, ok := m.index[key]
	if !ok {
		return Value{}, false
	}
	return m.kvs[i].Value, true
}

// Set stores v under key, replacing an existing value in place or appending
// a new pair at the end.
func (m *Metadata) Set(key string, v Value) {
	if i, ok := m.index[key]; ok {
		m.kvs[i].Value = v
		return
	}
	if m.index == nil {
		m.index = make(map[string]int)
	}
	m.index[key] = len(m.kvs)
	m.kvs = append(m.kvs, KV{key, v})
}

// Delete removes key, keeping the order of the other pairs.
func (m *Metadata) Delete(key string) {
	i, ok := m.index[key]
	if !ok {
		return
	}
	m.kvs = append(m.kvs[:i], m.kvs[i+1:]...)
	delete(m.index, key)
	for j := i; j < len(m.kvs); j++ {
		m.index[m.kvs[j].Key] = j
	}
}

// add appends a pair, reporting false if the key is already present.
func (m *Metadata) add(key string, v Value) bool {
	if _, dup := m.index[key]; dup {
		return false
	}
	m.Set(key, v)
	return true
}

// String returns the string stored under key.
func (m *Metadata) String(key string) (string, bool) {
	v, _ := m.Get(key)
	return v.Str()
}

// Uint returns the non-negative integer stored under key.
func (m *Metadata) Uint(key string) (uint64, bool) {
	v, ok := m.Get(key)
	if !ok {
		return 0, false
	}
	return v.Uint()
}

// Int returns the integer stored under key.
func (m *Metadata) Int(key string) (int64, bool) {
	v, ok := m.Get(key)
	if !ok {
		return 0, false
	}
	return v.Int()
}

// Float returns the float or integer stored under key as a float64.
func (m *Metadata) Float(key string) (float64, bool) {
	v, ok := m.Get(key)
	if !ok {
		return 0, false
	}
	return v.Float()
}

// Bool returns the bool stored under key.
func (m *Metadata) Bool(key string) (bool, bool) {
	v, ok := m.Get(key)
	if !ok {
		return false, false
	}
	return v.Bool()
}

// Strings returns the array of strings stored under key. The slice is
// shared with the metadata and must not be modified.
func (m *Metadata) Strings(key string) ([]string, bool) {
	v, _ := m.Get(key)
	return v.Strings()
}

// Float32s returns the array of float32 stored under key. The slice is
// shared with the metadata and must not be modified.
func (m *Metadata) Float32s(key string) ([]float32, bool) {
	v, _ := m.Get(key)
	return v.Float32s()
}

// Int32s returns the integer array stored under key as int32s (see
// Value.Int32s).
func (m *Metadata) Int32s(key string) ([]int32, bool) {
	v, _ := m.Get(key)
	return v.Int32s()
}
