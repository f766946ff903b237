package qsf

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"

	"github.com/qsf-llm/qsf/kvcache"
)

// Errors of LoadSession and Session.Restore.
var (
	// ErrSessionCorrupt is returned for a session file that is truncated,
	// fails its checksum or is malformed.
	ErrSessionCorrupt = errors.New("qsf: corrupt session file")
	// ErrSessionVersion is returned for a session file of a version this
	// package does not read.
	ErrSessionVersion = errors.New("qsf: unsupported session file version")
	// ErrSessionMismatch is returned for a session saved with another
	// model file, or with another context length or KV cache type.
	ErrSessionMismatch = errors.New("qsf: session file is for another model or configuration")
)

// A session file is, little-endian:
//
//	magic      "QSFSESS\n"
//	version    u32 (sessionVersion)
//	length     u64: bytes of the body
//	body:
//	  model    [32]byte fingerprint (Model.fingerprint)
//	  tokens   u32 count, then u32 ids: the tokens in the KV cache
//	  pending  i32: the generated token not yet in the cache, or -1
//	  messages u32 length, then JSON: the conversation (Session.Messages)
//	  kv       u64 length, then kvcache.Cache.WriteTo's encoding
//	crc        u32: CRC-32C of version, length and body
const (
	sessionMagic   = "QSFSESS\n"
	sessionVersion = 1
	sessionHeader  = len(sessionMagic) + 4 + 8
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Save writes the session's state — the tokens of the conversation, the
// KV cache, the messages of the last Chat call and the model's
// fingerprint — so that LoadSession (or Restore)
// can resume it, after a restart, with the same next-token logits.
// Sampling state is not part of a session: each Generate or Chat call
// starts its sampler from GenerateOptions.Sampling (its Seed), so the same
// call after a restore draws the same tokens.
func (s *Session) Save(w io.Writer) error {
	if s.closed {
		return ErrClosed
	}
	fp, err := s.m.fingerprint()
	if err != nil {
		return err
	}
	msgs, err := json.Marshal(s.messages)
	if err != nil {
		return err
	}
	// The body is written as it is produced (the KV cache can be large),
	// so its length is worked out first.
	kvBytes := s.state.KV.StateBytes()
	bodyLen := int64(32+4+4*len(s.history)+4+4+len(msgs)+8) + kvBytes

	bw := bufio.NewWriterSize(w, 1<<16)
	if _, err := bw.WriteString(sessionMagic); err != nil {
		return err
	}
	crc := crc32.New(castagnoli)
	out := io.MultiWriter(bw, crc)
	var scratch []byte
	scratch = binary.LittleEndian.AppendUint32(scratch, sessionVersion)
	scratch = binary.LittleEndian.AppendUint64(scratch, uint64(bodyLen))
	scratch = append(scratch, fp[:]...)
	scratch = binary.LittleEndian.AppendUint32(scratch, uint32(len(s.history)))
	for _, id := range s.history {
		scratch = binary.LittleEndian.AppendUint32(scratch, uint32(id))
	}
	scratch = binary.LittleEndian.AppendUint32(scratch, uint32(int32(s.pending)))
	scratch = binary.LittleEndian.AppendUint32(scratch, uint32(len(msgs)))
	scratch = append(scratch, msgs...)
	scratch = binary.LittleEndian.AppendUint64(scratch, uint64(kvBytes))
	if _, err := out.Write(scratch); err != nil {
		return err
	}
	if n, err := s.state.KV.WriteTo(out); err != nil {
		return err
	} else if n != kvBytes {
		return fmt.Errorf("qsf: save: KV cache wrote %d bytes, announced %d", n, kvBytes)
	}
	if err := binary.Write(bw, binary.LittleEndian, crc.Sum32()); err != nil {
		return err
	}
	return bw.Flush()
}

// sessionFile is a parsed session file, not yet applied to a session.
type sessionFile struct {
	model    [32]byte
	tokens   []int
	pending  int
	messages []Message
	kv       []byte // kvcache encoding
}

// parseSession checks and parses a whole session file. It allocates at
// most in proportion to len(data).
func parseSession(data []byte) (*sessionFile, error) {
	if len(data) < sessionHeader+4 || string(data[:len(sessionMagic)]) != sessionMagic {
		if len(data) >= len(sessionMagic) && string(data[:len(sessionMagic)]) != sessionMagic {
			return nil, fmt.Errorf("%w: not a QSF session file", ErrSessionCorrupt)
		}
		return nil, fmt.Errorf("%w: truncated header (%d bytes)", ErrSessionCorrupt, len(data))
	}
	version := binary.LittleEndian.Uint32(data[len(sessionMagic):])
	if version != sessionVersion {
		return nil, fmt.Errorf("%w: version %d, this build reads %d", ErrSessionVersion, version, sessionVersion)
	}
	n := binary.LittleEndian.Uint64(data[len(sessionMagic)+4:])
	if n != uint64(len(data)-sessionHeader-4) {
		return nil, fmt.Errorf("%w: body of %d bytes, file holds %d", ErrSessionCorrupt, n, len(data)-sessionHeader-4)
	}
	end := len(data) - 4
	if got, want := crc32.Checksum(data[len(sessionMagic):end], castagnoli), binary.LittleEndian.Uint32(data[end:]); got != want {
		return nil, fmt.Errorf("%w: checksum %08x, want %08x", ErrSessionCorrupt, got, want)
	}
	return parseSessionBody(data[sessionHeader:end])
}

// parseSessionBody parses the body of a session file.
func parseSessionBody(b []byte) (*sessionFile, error) {
	var f sessionFile
	short := func(what string) error { return fmt.Errorf("%w: truncated %s", ErrSessionCorrupt, what) }
	if len(b) < 32+4 {
		return nil, short("model fingerprint")
	}
	copy(f.model[:], b)
	b = b[32:]
	count := binary.LittleEndian.Uint32(b)
	b = b[4:]
	if uint64(count) > uint64(len(b)/4) {
		return nil, short("token list")
	}
	f.tokens = make([]int, count)
	for i := range f.tokens {
		f.tokens[i] = int(binary.LittleEndian.Uint32(b[4*i:]))
	}
	b = b[4*int(count):]
	if len(b) < 4 {
		return nil, short("pending token")
	}
	f.pending = int(int32(binary.LittleEndian.Uint32(b)))
	b = b[4:]
	if len(b) < 4 || uint64(binary.LittleEndian.Uint32(b)) > uint64(len(b)-4) {
		return nil, short("messages")
	}
	msgs := b[4 : 4+binary.LittleEndian.Uint32(b)]
	b = b[4+len(msgs):]
	if err := json.Unmarshal(msgs, &f.messages); err != nil {
		return nil, fmt.Errorf("%w: messages: %v", ErrSessionCorrupt, err)
	}
	if len(b) < 8 {
		return nil, short("KV cache length")
	}
	kvLen := binary.LittleEndian.Uint64(b)
	b = b[8:]
	if kvLen != uint64(len(b)) {
		return nil, fmt.Errorf("%w: KV cache of %d bytes, %d left", ErrSessionCorrupt, kvLen, len(b))
	}
	f.kv = b
	return &f, nil
}

// Restore replaces the session's conversation with one Save wrote. The
// file must come from the same model file, context length and KV cache
// type (ErrSessionMismatch otherwise); a damaged file gives
// ErrSessionCorrupt. A file that fails these checks leaves the session
// as it was; one whose KV cache cannot be read after them (the checksum
// makes that unlikely) leaves it empty.
func (s *Session) Restore(r io.Reader) error {
	if s.closed {
		return ErrClosed
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return fmt.Errorf("qsf: read session: %w", err)
	}
	f, err := parseSession(data)
	if err != nil {
		return err
	}
	fp, err := s.m.fingerprint()
	if err != nil {
		return err
	}
	if f.model != fp {
		return fmt.Errorf("%w: saved from model %x, this is %x", ErrSessionMismatch, f.model[:6], fp[:6])
	}
	vocab := s.m.net.Hparams.Vocab
	for _, id := range f.tokens {
		if id < 0 || id >= vocab {
			return fmt.Errorf("%w: token %d outside the vocabulary of %d", ErrSessionCorrupt, id, vocab)
		}
	}
	if f.pending < -1 || f.pending >= vocab {
		return fmt.Errorf("%w: pending token %d outside the vocabulary of %d", ErrSessionCorrupt, f.pending, vocab)
	}
	s.Reset()
	kv := s.state.KV
	if _, err := kv.ReadFrom(bytes.NewReader(f.kv)); err != nil {
		s.Reset()
		if sh := kv.Shape(); errors.Is(err, kvcache.ErrState) && !sameKVShape(f.kv, sh, kv.Type()) {
			return fmt.Errorf("%w: %w", ErrSessionMismatch, err)
		}
		return fmt.Errorf("%w: %w", ErrSessionCorrupt, err)
	}
	if kv.Len() != len(f.tokens) {
		s.Reset()
		return fmt.Errorf("%w: %d tokens for %d cached positions", ErrSessionCorrupt, len(f.tokens), kv.Len())
	}
	s.history = append(s.history[:0], f.tokens...)
	s.pending = f.pending
	s.messages = f.messages
	return nil
}

// sameKVShape reports whether a saved KV cache has the shape and type of
// the session's (so that a failure to read it means damage, not another
// configuration).
func sameKVShape(saved []byte, sh kvcache.Shape, typ kvcache.Type) bool {
	if len(saved) < 24 {
		return true
	}
	u := func(i int) int { return int(binary.LittleEndian.Uint32(saved[4*i:])) }
	return u(0) == sh.Layers && u(1) == sh.Capacity && u(2) == sh.KVHeads && u(3) == sh.HeadDimK && u(4) == sh.HeadDimV && u(5) == int(typ)
}

// LoadSession starts a session with a conversation Save wrote (see
// Session.Restore).
func (m *Model) LoadSession(r io.Reader) (*Session, error) {
	s, err := m.NewSession()
	if err != nil {
		return nil, err
	}
	if err := s.Restore(r); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// fingerprintSamples is the number of 4 KiB samples of the model file that
// go into its fingerprint.
const fingerprintSamples = 64

// fingerprint identifies the model file a session belongs to: a SHA-256 of
// its size, tensor directory, vocabulary and 64 samples of 4 KiB spread
// over the file (weights included), cheap even for a large file.
func (m *Model) fingerprint() ([32]byte, error) {
	if err := m.acquire(); err != nil {
		return [32]byte{}, err
	}
	defer m.release()
	h := sha256.New()
	f := m.file
	size := f.Size()
	binary.Write(h, binary.LittleEndian, size)
	for i := range f.Tensors {
		t := &f.Tensors[i]
		fmt.Fprintf(h, "%s %d %v %d %d\n", t.Name, t.Type, t.Shape, t.Offset, t.Size)
	}
	for id := range m.tok.VocabSize() {
		fmt.Fprintf(h, "%s\x00", m.tok.TokenText(id))
	}
	buf := make([]byte, 4096)
	for i := range int64(fingerprintSamples) {
		off := i * (size / fingerprintSamples)
		n, err := f.ReadAt(buf[:min(int64(len(buf)), size-off)], off)
		if err != nil && !errors.Is(err, io.EOF) {
			return [32]byte{}, fmt.Errorf("qsf: fingerprint of %s: %w", f.Name(), err)
		}
		h.Write(buf[:n])
	}
	var out [32]byte
	h.Sum(out[:0])
	return out, nil
}
