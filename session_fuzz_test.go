package qsf

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"testing"

	"github.com/qsf-llm/qsf/kvcache"
)

// FuzzParseSession feeds arbitrary bytes to the session file parser, as
// they are and with the header and checksum made valid (so that the body
// parser and the KV cache reader see them too): it must return an error
// or a result, never panic, and allocate no more than the input justifies.
func FuzzParseSession(f *testing.F) {
	kv, err := kvcache.NewWith(kvcache.Shape{Layers: 2, Capacity: 8, KVHeads: 1, HeadDimK: 4, HeadDimV: 4}, kvcache.Options{})
	if err != nil {
		f.Fatal(err)
	}
	for p := range 3 {
		kv.Store(0, p, []float32{1, 2, 3, 4}, []float32{5, 6, 7, 8})
		kv.Store(1, p, []float32{1, 2, 3, 4}, []float32{5, 6, 7, 8})
		kv.SetLen(p + 1)
	}
	var kvb bytes.Buffer
	kv.WriteTo(&kvb)
	body := make([]byte, 32)
	body = binary.LittleEndian.AppendUint32(body, 3)
	for _, id := range []int{1, 403, 407} {
		body = binary.LittleEndian.AppendUint32(body, uint32(id))
	}
	body = binary.LittleEndian.AppendUint32(body, uint32(0xffffffff))
	msgs := `[{"role":"user","content":"hi"}]`
	body = binary.LittleEndian.AppendUint32(body, uint32(len(msgs)))
	body = append(body, msgs...)
	body = binary.LittleEndian.AppendUint64(body, uint64(kvb.Len()))
	body = append(body, kvb.Bytes()...)
	f.Add(wrapSession(body))
	f.Add(body)
	f.Add([]byte(sessionMagic))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, in := range [][]byte{data, wrapSession(data)} {
			sf, err := parseSession(in)
			if err != nil {
				continue
			}
			if len(sf.tokens)*4 > len(in) || len(sf.kv) > len(in) {
				t.Fatalf("parsed %d tokens and %d KV bytes from %d bytes", len(sf.tokens), len(sf.kv), len(in))
			}
			fresh, _ := kvcache.NewWith(kv.Shape(), kvcache.Options{})
			if _, err := fresh.ReadFrom(bytes.NewReader(sf.kv)); err == nil && fresh.Len() > fresh.Capacity() {
				t.Fatalf("read a cache of %d positions into %d slots without eviction", fresh.Len(), fresh.Capacity())
			}
		}
	})
}

// wrapSession gives body a valid session header and checksum.
func wrapSession(body []byte) []byte {
	out := append([]byte(sessionMagic), 0, 0, 0, 0)
	binary.LittleEndian.PutUint32(out[len(sessionMagic):], sessionVersion)
	out = binary.LittleEndian.AppendUint64(out, uint64(len(body)))
	out = append(out, body...)
	return binary.LittleEndian.AppendUint32(out, crc32.Checksum(out[len(sessionMagic):], castagnoli))
}
