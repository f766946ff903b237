package server

import (
	"bytes"
	"net/http/httptest"
	"testing"
)

// TestSendTextEncoding checks that a streamed text chunk written from its
// template, by the writer goroutine, is byte for byte the event of the
// chunk encoded whole and written at once.
func TestSendTextEncoding(t *testing.T) {
	texts := []string{"", "hello", ` "quoted" \ back`, "<b>&amp;</b>", "tab\tnew\nline\r", "\x00\x1f\x7f",
		"caf\u00e9 \u2028\u2029 \U0001F600", "bad \xff\xfe utf-8", "\xe2\x82", textMark, "}]},{\"x\":"}
	for _, name := range []string{"model", "a <&> \"name\"\n", "x" + textMark} {
		s := &Server{name: name}
		for _, chat := range []bool{false, true} {
			c := s.newTextChunk("cmpl-1", 1700000000, chat)
			if c == nil {
				if name == "x"+textMark {
					continue // the mark in the name: the events are encoded whole
				}
				t.Fatalf("name %q chat %v: no template", name, chat)
			}
			fast, whole := httptest.NewRecorder(), httptest.NewRecorder()
			ef, ew := &sseWriter{w: fast, s: s}, &sseWriter{w: whole, s: s}
			if err := ef.start(); err != nil {
				t.Fatal(err)
			}
			if err := ew.start(); err != nil {
				t.Fatal(err)
			}
			ef.goAsync()
			for _, text := range texts {
				if err := ef.sendText(c, text); err != nil {
					t.Fatal(err)
				}
				if err := ew.send(s.chunk("cmpl-1", 1700000000, chat, text, nil, nil)); err != nil {
					t.Fatal(err)
				}
			}
			ef.sync()
			if !bytes.Equal(fast.Body.Bytes(), whole.Body.Bytes()) {
				t.Errorf("name %q chat %v: the events differ:\n%s\nwant\n%s", name, chat, fast.Body, whole.Body)
			}
		}
	}
}

// BenchmarkSendText compares a text chunk written from its template with
// the chunk encoded whole (to a recorder: the encoding and copying only).
func BenchmarkSendText(b *testing.B) {
	s := &Server{name: "model"}
	for _, whole := range []bool{false, true} {
		name := "template"
		if whole {
			name = "whole"
		}
		b.Run(name, func(b *testing.B) {
			c := s.newTextChunk("cmpl-0123456789abcdef01234567", 1700000000, true)
			rec := httptest.NewRecorder()
			e := &sseWriter{w: rec, s: s}
			e.start()
			b.ReportAllocs()
			for b.Loop() {
				rec.Body.Reset()
				if whole {
					e.send(s.chunk("cmpl-0123456789abcdef01234567", 1700000000, true, " word", nil, nil))
				} else {
					e.sendText(c, " word")
				}
			}
		})
	}
}
