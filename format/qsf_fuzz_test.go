package format

import (
	"bytes"
	"os"
	"testing"
)

// qsfSeeds adds small QSF files, whole and cut, to a fuzz corpus.
func qsfSeeds(f *testing.F) {
	dir := f.TempDir()
	for _, comp := range []Compression{CompressNone, CompressLZ4} {
		path, _ := writeTiny(f, dir, 1, comp)
		b, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		f.Add(b[:len(b)/2])
	}
	f.Add([]byte(QSFMagic))
}

// checkQSF reads every tensor and layer of b through both read paths; it
// fails only if the two paths disagree about whether b is valid.
func checkQSF(t *testing.T, b []byte) {
	for _, mapped := range []bool{false, true} {
		if err := readAllBytes(b, mapped); err != nil {
			continue
		}
		q, err := ReadQSF(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			t.Fatalf("tensors read but ReadQSF failed: %v", err)
		}
		for i := range q.Layers {
			if _, err := q.ReadLayer(i, nil); err != nil {
				t.Fatalf("layer %d: tensors read but ReadLayer failed: %v", i, err)
			}
		}
	}
}

// FuzzReadQSF feeds arbitrary bytes to the QSF reader, through the
// memory-mapped and the ReadAt paths, and reads every tensor and layer of
// whatever opens. It must never panic or allocate beyond what the input
// justifies. Run it with -fuzzminimizetime bounded: minimizing 10 KB
// inputs is slow.
func FuzzReadQSF(f *testing.F) {
	qsfSeeds(f)
	f.Fuzz(checkQSF)
}

// FuzzReadQSFFixedCRC is FuzzReadQSF with the checksums repaired after
// mutation, so that the fuzzer reaches the structural checks behind them.
func FuzzReadQSFFixedCRC(f *testing.F) {
	qsfSeeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		fixCRCs(b)
		checkQSF(t, b)
	})
}

// fixCRCs recomputes, where the bytes allow, the header CRC, the section
// CRCs and the layer CRCs of a (possibly mangled) QSF file.
func fixCRCs(b []byte) {
	if len(b) < QSFHeaderSize {
		return
	}
	size := uint64(len(b))
	h := unmarshalHeader(b)
	fix := func(off uint64) (payload, length uint64, ok bool) {
		if off > size || size-off < qsfFrameSize {
			return 0, 0, false
		}
		length = le.Uint64(b[off+8:])
		payload = off + qsfFrameSize
		if length > size-payload {
			return 0, 0, false
		}
		le.PutUint32(b[off+4:], qsfCRC(b[payload:payload+length]))
		return payload, length, true
	}
	fix(QSFHeaderSize)
	for _, off := range []uint64{h.TokenizerOffset, h.MetadataOffset, h.EmbeddingOffset, h.FinalOffset} {
		fix(off)
	}
	// Layer CRCs live in the index, so fix them before the index CRC.
	if payload, length, ok := fix(h.IndexOffset); ok {
		for i := uint64(0); i < uint64(h.Layers) && (i+1)*qsfEntrySize <= length; i++ {
			eb := b[payload+i*qsfEntrySize:]
			e := getEntry(eb)
			if e.Offset <= size && uint64(e.StoredSize) <= size-e.Offset {
				le.PutUint32(eb[20:], qsfCRC(b[e.Offset:e.Offset+uint64(e.StoredSize)]))
			}
		}
		fix(h.IndexOffset)
	}
	le.PutUint32(b[qsfHeaderCRCAt:], qsfCRC(b[:qsfHeaderCRCAt]))
}
