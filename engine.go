package qsf

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/qsf-llm/qsf/arena"
	"github.com/qsf-llm/qsf/grammar"
	"github.com/qsf-llm/qsf/kernels"
	"github.com/qsf-llm/qsf/model"
	"github.com/qsf-llm/qsf/stream"
	"github.com/qsf-llm/qsf/tokenizer"
)

// Session is one conversation with a model: its KV cache and its position.
// The sessions of a model share its worker threads (and, when it streams
// its layers, its layer reader). A Session is not safe for concurrent use;
// run several sessions (on one Model) to serve several conversations at
// once. Close it to release its buffers (a streaming session's also when
// it is dropped without Close).
type Session struct {
	m      *Model
	state  *model.State
	stats  Stats
	closed bool

	// pending is the last generated token, which is part of the
	// conversation but not yet in the KV cache: it is processed at the
	// start of the next Generate or Forward (-1 when there is none).
	pending int

	// history holds the tokens in the KV cache, in order, and messages
	// the conversation of the last Chat call, its answer included (see
	// chat.go).
	history  []int
	messages []Message

	arena   *arena.Arena    // streaming modes: the session's buffers (KV cache, activations)
	cleanup runtime.Cleanup // streaming modes: frees the arena if s is dropped

	batcher *Batcher     // decodes this session together with others, or nil
	stepReq *stepRequest // its decoding steps' request, reused
}

// NewSession starts a conversation with an empty KV cache of
// Info().ContextLength positions.
func (m *Model) NewSession() (*Session, error) {
	if err := m.acquire(); err != nil {
		return nil, err
	}
	defer m.release()
	if m.experts != nil {
		s, err := m.newExpertSession(m.pool)
		if err != nil {
			return nil, errExpertSession(err)
		}
		return s, nil
	}
	if m.layers != nil {
		s, err := m.newStreamingSession(m.pool)
		if err != nil {
			return nil, fmt.Errorf("qsf: %w", err)
		}
		return s, nil
	}
	st, err := m.net.NewStateWith(m.pool, model.StateOptions{Capacity: m.ctx, KV: m.kv})
	if err != nil {
		return nil, fmt.Errorf("qsf: %w", err)
	}
	return &Session{m: m, state: st, pending: -1}, nil
}

// streamResources is what a layer-streaming model holds outside the Go
// heap: its layer reader and the arena of its buffers.
type streamResources struct {
	src   *stream.Source
	arena *arena.Arena
}

func (r streamResources) close() {
	r.src.Close()
	r.arena.Close()
}

// layerStreaming is what a layer-streaming model adds: the one layer
// reader (ring, embedding rows, LM head) its sessions share, in an arena
// of its own. Its sessions' passes take turns on it (mu): a Batcher's
// step is one pass for all its sessions, so each layer is read once per
// step however many sessions decode.
type layerStreaming struct {
	src     *stream.Source
	arena   *arena.Arena
	mu      sync.Mutex
	cleanup runtime.Cleanup // closes src and arena if the model is dropped
}

func (l *layerStreaming) close() {
	l.cleanup.Stop()
	streamResources{l.src, l.arena}.close()
}

// streamOptions are the layer reader's options, as planned.
func (m *Model) streamOptions() stream.Options {
	p := m.plan
	return stream.Options{RingBytes: int(p.RingBytes), EmbedRows: p.EmbedRows, HeadResident: p.HeadResident,
		DropPageCache: m.cfg.DropPageCache, VerifyCRC: true}
}

// openLayers starts the layer reader the model's sessions share, in an
// arena of its own.
func (m *Model) openLayers() (*layerStreaming, error) {
	opts := m.streamOptions()
	a, err := arena.New(int(stream.BufferBytes(m.layout, opts)))
	if err != nil {
		return nil, err
	}
	src, err := stream.Open(m.layout, m.file.Name(), a, opts)
	if err != nil {
		a.Close()
		return nil, err
	}
	return &layerStreaming{src: src, arena: a}, nil
}

// lockPass starts a forward pass of a session: under layer streaming the
// passes of the model's sessions take turns on its layer reader.
// unlockPass ends it.
func (m *Model) lockPass() {
	if m.layers != nil {
		m.layers.mu.Lock()
	}
}

func (m *Model) unlockPass() {
	if m.layers != nil {
		m.layers.mu.Unlock()
	}
}

// newStreamingSession allocates the session's arena (KV cache,
// activations) as planned; its passes read the layers through the
// model's reader.
func (m *Model) newStreamingSession(pool *kernels.Pool) (*Session, error) {
	a, err := arena.New(int(m.plan.ArenaBytes-stream.BufferBytes(m.layout, m.streamOptions())) / max(m.plan.Sessions, 1))
	if err != nil {
		return nil, err
	}
	s, err := m.newArenaSession(pool, a)
	if err != nil {
		return nil, err
	}
	s.state.Source = m.layers.src
	return s, nil
}

// newArenaSession makes a streaming session (layer or expert streaming)
// whose state lives in arena a, or closes a on error. A session dropped
// without Close still frees a.
func (m *Model) newArenaSession(pool *kernels.Pool, a *arena.Arena) (*Session, error) {
	var allocErr error
	alloc := func(name string, n int) []byte {
		b, err := a.Alloc(name, n)
		if err != nil && allocErr == nil {
			allocErr = err
		}
		if b == nil {
			b = make([]byte, n) // reported through allocErr
		}
		return b
	}
	st, err := m.net.NewStateWith(pool, model.StateOptions{Capacity: m.ctx, KV: m.kv, Alloc: alloc})
	if err == nil {
		err = allocErr
	}
	if err != nil {
		a.Close()
		return nil, err
	}
	s := &Session{m: m, state: st, pending: -1, arena: a}
	s.cleanup = runtime.AddCleanup(s, func(a *arena.Arena) { a.Close() }, a)
	return s, nil
}

// Close releases the session's buffers. It is safe to call more than
// once, and after the model's Close.
func (s *Session) Close() error {
	if !s.closed {
		s.closed = true
		if s.arena != nil {
			s.cleanup.Stop()
			s.arena.Close()
		}
	}
	return nil
}

// IOStats returns the file reads of a layer-streaming model since it was
// loaded (zero for a resident model). Its sessions share one layer reader,
// so the counters are theirs together: a Batcher's step reads each layer
// once for all the sessions in it.
func (s *Session) IOStats() stream.Stats { return s.m.IOStats() }

// IOStats returns the file reads of a layer-streaming model's reader,
// which its sessions share, since the model was loaded (zero for a
// resident model).
func (m *Model) IOStats() stream.Stats {
	if m.layers == nil {
		return stream.Stats{}
	}
	return m.layers.src.Stats()
}

// Pos returns the number of tokens the session has processed (its KV
// cache length). The last token Generate produced is processed at the
// start of the next Generate or Forward call, so it is not counted yet.
func (s *Session) Pos() int { return s.state.KV.Len() }

// withPending returns ids preceded by the pending generated token, if
// any, and clears it.
func (s *Session) withPending(ids []int) []int {
	if s.pending < 0 {
		return ids
	}
	ids = append([]int{s.pending}, ids...)
	s.pending = -1
	return ids
}

// Reset empties the context, so the next call starts a new conversation.
func (s *Session) Reset() {
	s.state.KV.Reset()
	s.pending = -1
	s.history = s.history[:0]
	s.messages = nil
	s.stats = Stats{}
}

// Stats returns the counters of the session's most recent Generate call,
// or of the Forward calls since.
func (s *Session) Stats() Stats { return s.stats }

// Stats counts tokens and time per phase. Prefill is the processing of
// given tokens (the prompt); decode is the generation of new ones.
type Stats struct {
	PromptTokens    int
	GeneratedTokens int
	PrefillTime     time.Duration
	DecodeTime      time.Duration
}

// PrefillTokensPerSecond is the prompt processing speed.
func (st Stats) PrefillTokensPerSecond() float64 {
	return perSecond(st.PromptTokens, st.PrefillTime)
}

// DecodeTokensPerSecond is the generation speed.
func (st Stats) DecodeTokensPerSecond() float64 {
	return perSecond(st.GeneratedTokens, st.DecodeTime)
}

func perSecond(n int, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// Forward appends ids to the context and returns the logits that predict
// the token after the last of them (a fresh slice of Info().Vocab values).
func (s *Session) Forward(ctx context.Context, ids []int) ([]float32, error) {
	if len(ids) == 0 {
		return nil, errors.New("qsf: Forward of no tokens")
	}
	start := time.Now()
	ids = s.withPending(ids)
	err := s.feed(ctx, ids, nil)
	s.stats.PromptTokens += len(ids)
	s.stats.PrefillTime += time.Since(start)
	if err != nil {
		return nil, err
	}
	return append([]float32(nil), s.state.Logits...), nil
}

// promptChunk is how many prompt tokens run between two checks of the
// context's cancellation.
const promptChunk = 256

// feed runs ids through the model, one position at a time. When each is
// non-nil it is called with the logits after every token; otherwise logits
// are computed for the last token only.
func (s *Session) feed(ctx context.Context, ids []int, each func(i int, logits []float32) error) error {
	if s.closed {
		return ErrClosed
	}
	if !s.state.KV.Evicts() && s.Pos()+len(ids) > s.state.KV.Capacity() {
		return fmt.Errorf("%w: %d tokens in context, %d more, room for %d", ErrContextFull, s.Pos(), len(ids), s.state.KV.Capacity())
	}
	if b := s.batcher; b != nil && each == nil && len(ids) > 0 {
		// In the Batcher's steps, together with the other sessions'
		// decoding; alone for what is left if it closes meanwhile.
		done, err := b.prompt(ctx, s, ids)
		s.record(ids[:done])
		if err != ErrClosed || done == len(ids) {
			return err
		}
		ids = ids[done:]
	}
	if err := s.m.acquire(); err != nil {
		return err
	}
	defer s.m.release()
	defer s.record(ids)
	if each == nil && len(ids) > 1 {
		// Prompt processing: batches of tokens, each weight read once per
		// batch; the same bits as one token at a time.
		for start := 0; start < len(ids); start += promptChunk {
			if err := s.interrupted(ctx); err != nil {
				return err
			}
			end := min(start+promptChunk, len(ids))
			s.m.lockPass()
			err := s.state.ForwardBatch(ids[start:end], s.Pos(), end == len(ids))
			s.m.unlockPass()
			if err != nil {
				return fmt.Errorf("qsf: %w", err)
			}
		}
		return nil
	}
	for i, id := range ids {
		if err := s.interrupted(ctx); err != nil {
			return err
		}
		last := i == len(ids)-1
		s.m.lockPass()
		err := s.state.Forward(id, s.Pos(), last || each != nil)
		s.m.unlockPass()
		if err != nil {
			return fmt.Errorf("qsf: %w", err)
		}
		if each != nil {
			if err := each(i, s.state.Logits); err != nil {
				return err
			}
		}
	}
	return nil
}

// interrupted returns ctx's error, or ErrClosed once the model is closing.
func (s *Session) interrupted(ctx context.Context) error {
	if s.m.closed.Load() {
		return ErrClosed
	}
	return ctx.Err()
}

// Token is one generated token as passed to a Generate callback.
type Token struct {
	ID int
	// Text is the text this token adds to the output, always valid
	// UTF-8: bytes of a character split over several tokens arrive with
	// its last token, bytes that cannot form a character arrive as U+FFFD
	// (as do the incomplete bytes left at the end, in a last Token with ID
	// -1), and Text is empty while text that may begin a stop string is
	// held back.
	Text string
	// Logprob is the token's log-probability under the model's
	// distribution (after a grammar's filtering, at temperature 1), and
	// TopLogprobs the most likely tokens at its position, best first:
	// set when GenerateOptions.Logprobs asks for them.
	Logprob     float32
	TopLogprobs []TokenLogprob
}

// GenerateOptions control Generate.
type GenerateOptions struct {
	// MaxTokens caps the number of generated tokens; 0 means until the
	// end-of-generation token or a full context.
	MaxTokens int
	// Sampling chooses each token; the zero value is greedy.
	Sampling SamplerOptions
	// Stop ends generation when the output contains one of these strings;
	// the stop string itself is not returned.
	Stop []string
	// ParseSpecial lets special-token text in the prompt (e.g. "<s>")
	// become special tokens.
	ParseSpecial bool
	// Grammar, GBNF (grammar text) or JSONSchema (a JSON Schema document),
	// at most one of them, restrict the output to a language: tokens that
	// cannot continue it are never sampled, end-of-generation tokens only
	// where it is complete, and generation ends (StopGrammar) when it
	// allows nothing more.
	Grammar    *grammar.Grammar
	GBNF       string
	JSONSchema []byte
	// Logprobs sets Token.Logprob, and TopLogprobs (when above 0) the
	// number of alternatives in Token.TopLogprobs: an extra pass over the
	// logits per token.
	Logprobs    bool
	TopLogprobs int

	endOfTurn []int // more tokens that end generation (Session.Chat)
	seen      []int // tokens before the prompt that the penalties count (Session.Chat)
}

// StopReason says why generation ended.
type StopReason string

// Reasons for the end of generation.
const (
	StopEOS       StopReason = "eos"        // the model produced an end-of-generation token
	StopMaxTokens StopReason = "max_tokens" // GenerateOptions.MaxTokens reached
	StopString    StopReason = "stop"       // a stop string appeared
	StopContext   StopReason = "context"    // the context is full
	StopGrammar   StopReason = "grammar"    // the grammar is complete and allows nothing more
)

// Result summarizes a Generate call.
type Result struct {
	PromptTokens []int
	Tokens       []int // generated ids, the end-of-generation token included
	Text         string
	Reason       StopReason
}

// Generate appends prompt to the conversation (with BOS when the session
// is empty and the vocabulary asks for it), then generates tokens and
// passes each to fn as soon as it is chosen. It stops at an
// end-of-generation token, after opts.MaxTokens tokens, at a stop string,
// when the context is full, when ctx is cancelled (returning ctx.Err()) or
// when fn returns an error (returning it). It refuses sampling options
// that SamplerOptions.Validate refuses. The Result holds what was
// generated up to then, also on error.
func (s *Session) Generate(ctx context.Context, prompt string, opts GenerateOptions, fn func(Token) error) (res Result, err error) {
	if s.closed || s.m.closed.Load() {
		return res, ErrClosed
	}
	if err := opts.Sampling.Validate(); err != nil {
		return res, err
	}
	ids := s.m.tok.Encode(prompt, tokenizer.EncodeOptions{AddSpecial: s.Pos() == 0, ParseSpecial: opts.ParseSpecial})
	return s.generate(ctx, ids, opts, fn)
}

// generate is Generate after tokenization: prompt is appended to the
// context (after the pending token) and tokens are generated.
func (s *Session) generate(ctx context.Context, prompt []int, opts GenerateOptions, fn func(Token) error) (res Result, err error) {
	s.stats = Stats{}
	res.PromptTokens = prompt
	con, err := s.m.newConstraint(&opts)
	if err != nil {
		return res, err
	}
	sampler := NewSampler(opts.Sampling)
	for _, id := range opts.seen {
		sampler.Accept(id)
	}
	for _, id := range res.PromptTokens {
		sampler.Accept(id)
	}

	start := time.Now()
	if ids := s.withPending(res.PromptTokens); len(ids) > 0 {
		err = s.feed(ctx, ids, nil)
	} else if s.Pos() == 0 {
		err = errors.New("qsf: Generate with an empty prompt and an empty context")
	}
	s.stats.PromptTokens = len(res.PromptTokens)
	s.stats.PrefillTime = time.Since(start)
	if err != nil {
		return res, err
	}

	out := newStopWriter(s.m.tok.NewStreamDecoder(), opts.Stop)
	var text strings.Builder
	emit := func(tok Token) error {
		text.WriteString(tok.Text)
		if fn != nil {
			return fn(tok)
		}
		return nil
	}
	start = time.Now()
	defer func() {
		s.stats.DecodeTime = time.Since(start)
		res.Text = text.String()
	}()
	if b := s.batcher; b != nil {
		b.join()
		defer b.leave()
	}
	ahead := -1 // the position of the last token when its step ran while fn did
	for {
		if opts.MaxTokens > 0 && len(res.Tokens) >= opts.MaxTokens {
			res.Reason = StopMaxTokens
			break
		}
		if err := ctx.Err(); err != nil {
			if ahead >= 0 {
				s.unstep(res.Tokens[len(res.Tokens)-1], ahead)
			}
			return res, err
		}
		if s.pending >= 0 { // process the previous token to get the next logits
			if !s.state.KV.Evicts() && s.Pos() >= s.state.KV.Capacity() {
				res.Reason = StopContext
				break
			}
			if err := s.decodeStep(ctx); err != nil {
				return res, err
			}
		}
		if err := con.mask(s.state.Logits); err != nil {
			return res, err
		}
		id, err := con.accept(sampler.Sample(s.state.Logits), s.state.Logits)
		if err != nil {
			return res, err
		}
		var tok Token
		if opts.Logprobs || opts.TopLogprobs > 0 {
			tok.Logprob, tok.TopLogprobs = logprobs(s.state.Logits, id, opts.TopLogprobs)
		}
		sampler.Accept(id)
		res.Tokens = append(res.Tokens, id)
		s.pending = id
		s.stats.GeneratedTokens++
		if s.m.tok.IsEOG(id) || slices.Contains(opts.endOfTurn, id) {
			res.Reason = StopEOS
			break
		}
		piece, stopped := out.push(id)
		tok.ID, tok.Text = id, piece
		// When the loop goes on to evaluate id, a Batcher's step
		// evaluates it while fn runs (stepAhead): the step of the other
		// sessions need not wait for fn (an HTTP write, say).
		ahead = -1
		if !stopped && !con.done() && (opts.MaxTokens <= 0 || len(res.Tokens) < opts.MaxTokens) && ctx.Err() == nil {
			ahead = s.stepAhead(ctx)
		}
		err = emit(tok)
		if ahead >= 0 {
			serr := s.awaitStep(id, ahead)
			if err == nil {
				err = serr
			} else if serr == nil {
				s.unstep(id, ahead)
			}
		}
		if err != nil {
			return res, err
		}
		if stopped {
			res.Reason = StopString
			return res, nil
		}
		if con.done() {
			res.Reason = StopGrammar
			break
		}
	}
	if rest := out.flush(); rest != "" {
		text.WriteString(rest)
		if fn != nil {
			if err := fn(Token{ID: -1, Text: rest}); err != nil {
				return res, err
			}
		}
	}
	return res, nil
}

// decodeStep evaluates the pending token: in the next step of the
// session's Batcher, or alone.
func (s *Session) decodeStep(ctx context.Context) error {
	ids := s.withPending(nil)
	if b := s.batcher; b != nil && len(ids) == 1 {
		if err := b.step(ctx, s, ids[0]); err != ErrClosed {
			return err
		}
	}
	return s.feed(ctx, ids, nil)
}

// stepAhead submits the decoding step of the pending token to the
// session's Batcher and returns the position the token is evaluated at,
// or -1 when it did not submit it: the session has no Batcher, or its KV
// cache is full, evicts or is quantized (unstep could not undo the step
// exactly). awaitStep must follow before the session is used again:
// until then the Batcher's step may be using the session's state.
func (s *Session) stepAhead(ctx context.Context) int {
	b, kv, pos := s.batcher, s.state.KV, s.Pos()
	if b == nil || s.pending < 0 || kv.Evicts() || kv.Type().Bits() < 16 || pos >= kv.Capacity() {
		return -1
	}
	if b.submit(ctx, s, s.pending) != nil {
		return -1 // closed: the loop evaluates the token alone
	}
	s.pending = -1
	return pos
}

// awaitStep waits for the step that stepAhead submitted, of token id at
// position pos. When the step did not evaluate id (cancelled, say), id is
// pending again, as if it had never been submitted.
func (s *Session) awaitStep(id, pos int) error {
	err := s.batcher.wait(s)
	if err != nil && s.Pos() == pos {
		s.pending = id
	}
	return err
}

// unstep undoes the completed step of token id at position pos that
// stepAhead submitted, when generation ends before the loop would have
// evaluated id (fn's error, a cancelled context): id is pending again,
// as if the step had never been submitted, so that the session is as it
// would be without a Batcher (for Save, say).
func (s *Session) unstep(id, pos int) {
	if s.state.KV.Truncate(pos) == nil {
		s.history = s.history[:pos]
		s.pending = id
	}
}

// stopWriter turns tokens into text for the callback: complete UTF-8 only,
// holding back any tail that might be the start of a stop string.
type stopWriter struct {
	dec     *tokenizer.StreamDecoder
	stops   []string
	pending string // decoded but not yet emitted
}

func newStopWriter(dec *tokenizer.StreamDecoder, stops []string) *stopWriter {
	var nonEmpty []string
	for _, s := range stops {
		if s != "" {
			nonEmpty = append(nonEmpty, s)
		}
	}
	return &stopWriter{dec: dec, stops: nonEmpty}
}

// push adds a token and returns the text that can be emitted now, and
// whether a stop string was found (the text before it is returned).
func (w *stopWriter) push(id int) (string, bool) {
	w.pending += w.dec.Push(id)
	return w.scan()
}

// scan looks for a stop string in the pending text and returns what can be
// emitted.
func (w *stopWriter) scan() (string, bool) {
	if len(w.stops) == 0 {
		out := w.pending
		w.pending = ""
		return out, false
	}
	for _, stop := range w.stops {
		if i := strings.Index(w.pending, stop); i >= 0 {
			// An invalid UTF-8 stop string can match inside a character.
			out := strings.ToValidUTF8(w.pending[:i], "\uFFFD")
			w.pending = ""
			return out, true
		}
	}
	// Hold back the longest tail that is a prefix of a stop string.
	hold := 0
	for _, stop := range w.stops {
		for n := min(len(stop)-1, len(w.pending)); n > hold; n-- {
			if strings.HasSuffix(w.pending, stop[:n]) {
				hold = n
				break
			}
		}
	}
	cut := len(w.pending) - hold
	for cut > 0 && cut < len(w.pending) && !utf8.RuneStart(w.pending[cut]) {
		cut-- // never split a character (a stop string may be invalid UTF-8)
	}
	out := w.pending[:cut]
	w.pending = w.pending[cut:]
	return out, false
}

// flush returns whatever is still held back at the end of generation.
func (w *stopWriter) flush() string {
	out := w.pending + w.dec.Flush()
	w.pending = ""
	return out
}
