package format

import (
	"bytes"
	"io"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/qsf-llm/qsf/quant"
)

func writerTensors(g *GGUF) []WriterTensor {
	ts := make([]WriterTensor, len(g.Tensors))
	for i, t := range g.Tensors {
		ts[i] = WriterTensor{Name: t.Name, Shape: t.Shape, Type: t.Type}
		if t.Type == quant.I2_S {
			ts[i].Size = t.Size // its span, which its shape does not give
		}
	}
	return ts
}

// compareGGUF checks that two parsed headers describe the same metadata
// (in the same order) and tensors.
func compareGGUF(t testing.TB, want, got *GGUF) {
	t.Helper()
	if !slices.Equal(want.Metadata.Keys(), got.Metadata.Keys()) {
		t.Fatalf("keys %v, want %v", got.Metadata.Keys(), want.Metadata.Keys())
	}
	for k, v := range want.Metadata.All() {
		g, _ := got.Metadata.Get(k)
		if !valuesEqual(v, g) {
			t.Errorf("key %s: got %v, want %v", k, g, v)
		}
	}
	if want.Alignment != got.Alignment {
		t.Errorf("alignment %d, want %d", got.Alignment, want.Alignment)
	}
	if len(want.Tensors) != len(got.Tensors) {
		t.Fatalf("%d tensors, want %d", len(got.Tensors), len(want.Tensors))
	}
	for i := range want.Tensors {
		w, g := want.Tensors[i], got.Tensors[i]
		size := w.Size
		if w.Type == quant.I2_S && w.Size > 0 {
			size = alignUp(w.Size, got.Alignment) // its span now ends at the padding
		}
		if w.Name != g.Name || w.Type != g.Type || size != g.Size || !slices.Equal(w.Shape, g.Shape) {
			t.Errorf("tensor %d: got %+v, want %+v", i, g, w)
		}
	}
}

// valuesEqual compares values bit for bit (so NaNs compare equal to
// themselves), treating nil and empty arrays alike.
func valuesEqual(a, b Value) bool {
	if a.typ != b.typ || a.num != b.num || a.str != b.str || a.elem != b.elem {
		return false
	}
	if a.typ != TypeArray {
		return true
	}
	if a.Len() != b.Len() {
		return false
	}
	if x, ok := a.arr.([]Value); ok {
		y, ok := b.arr.([]Value)
		if !ok {
			return false
		}
		for i := range x {
			if !valuesEqual(x[i], y[i]) {
				return false
			}
		}
		return true
	}
	for i := range a.Len() {
		if !valuesEqual(a.Index(i), b.Index(i)) {
			return false
		}
	}
	return true
}

// allValues returns metadata holding every value type, including nested
// arrays and edge values.
func allValues() *Metadata {
	var md Metadata
	md.Set("general.architecture", StringValue("llama"))
	md.Set("u8", Uint8Value(255))
	md.Set("i8", Int8Value(-128))
	md.Set("u16", Uint16Value(65535))
	md.Set("i16", Int16Value(-32768))
	md.Set("u32", Uint32Value(math.MaxUint32))
	md.Set("i32", Int32Value(math.MinInt32))
	md.Set("f32", Float32Value(float32(math.Inf(-1))))
	md.Set("f32.nan", Float32Value(float32(math.NaN())))
	md.Set("bool.true", BoolValue(true))
	md.Set("bool.false", BoolValue(false))
	md.Set("string", StringValue("héllo\x00 wörld"))
	md.Set("string.empty", StringValue(""))
	md.Set("string.long", StringValue(strings.Repeat("x", 100_000)))
	md.Set("u64", Uint64Value(math.MaxUint64))
	md.Set("i64", Int64Value(math.MinInt64))
	md.Set("f64", Float64Value(math.Pi))
	md.Set("a.u8", Uint8sValue([]uint8{0, 1, 255}))
	md.Set("a.i8", Int8sValue([]int8{-1, 0, 127}))
	md.Set("a.u16", Uint16sValue([]uint16{1, 65535}))
	md.Set("a.i16", Int16sValue([]int16{-2, 2}))
	md.Set("a.u32", Uint32sValue([]uint32{0, 4294967295}))
	md.Set("a.i32", Int32sValue([]int32{-5, 5, math.MaxInt32}))
	md.Set("a.f32", Float32sValue([]float32{0.5, -1e30, 3}))
	md.Set("a.bool", BoolsValue([]bool{true, false, true}))
	md.Set("a.string", StringsValue([]string{"a", "", "<0x0A>", "▁the"}))
	md.Set("a.u64", Uint64sValue([]uint64{math.MaxUint64}))
	md.Set("a.i64", Int64sValue([]int64{math.MinInt64, 7}))
	md.Set("a.f64", Float64sValue([]float64{math.SmallestNonzeroFloat64}))
	md.Set("a.empty", StringsValue(nil))
	md.Set("a.big", Float32sValue(make([]float32, 50_000)))
	md.Set("a.nested", ArraysValue(
		StringsValue([]string{"x", "y"}),
		StringsValue([]string{}),
		StringsValue([]string{"z"}),
	))
	md.Set("a.nested.mixed", ArraysValue(
		Int32sValue([]int32{1, 2}),
		ArraysValue(StringsValue([]string{"deep"}), Uint8sValue([]uint8{9})),
		ArraysValue(),
	))
	return &md
}

// testTensors is a small set of tensors of several types with data
// generated from the tensor index.
var testTensors = []WriterTensor{
	{Name: "token_embd.weight", Shape: []uint64{64, 8}, Type: quant.F32},
	{Name: "blk.0.attn_q.weight", Shape: []uint64{64, 4}, Type: quant.Q4_0},
	{Name: "blk.0.ffn_down.weight", Shape: []uint64{256, 2}, Type: quant.Q6_K},
	{Name: "empty", Shape: []uint64{0, 3}, Type: quant.F16},
	{Name: "output_norm.weight", Shape: []uint64{5}, Type: quant.F16},
	{Name: "cube", Shape: []uint64{32, 2, 3, 1}, Type: quant.Q8_0},
}

func tensorBytes(i int, t WriterTensor) []byte {
	size, err := tensorSize(t.Shape, t.Type)
	if err != nil {
		panic(err)
	}
	if t.Type == quant.I2_S && t.Size != 0 {
		size = t.Size
	}
	b := make([]byte, size)
	for j := range b {
		b[j] = byte(i*31 + j*7)
	}
	return b
}

func writeTest(t testing.TB, md *Metadata, tensors []WriterTensor) []byte {
	t.Helper()
	var buf bytes.Buffer
	err := WriteGGUF(&buf, md, tensors, func(i int, w io.Writer) error {
		_, err := w.Write(tensorBytes(i, tensors[i]))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestRoundTrip(t *testing.T) {
	for _, align := range []uint32{0, 1, 64, 4096} {
		md := allValues()
		if align != 0 {
			md.Set(KeyAlignment, Uint32Value(align))
		}
		file := writeTest(t, md, testTensors)
		g, err := ReadGGUF(bytes.NewReader(file), int64(len(file)))
		if err != nil {
			t.Fatalf("alignment %d: %v", align, err)
		}
		want := &GGUF{Version: Version, Metadata: *md, Alignment: max(uint64(align), 0)}
		if align == 0 {
			want.Alignment = DefaultAlignment
		}
		for i, wt := range testTensors {
			size, _ := tensorSize(wt.Shape, wt.Type)
			want.Tensors = append(want.Tensors, TensorInfo{Name: wt.Name, Shape: wt.Shape, Type: wt.Type, Size: size})
			ti, ok := g.Tensor(wt.Name)
			if !ok || ti != &g.Tensors[i] {
				t.Fatalf("Tensor(%q) = %p, %v", wt.Name, ti, ok)
			}
			if ti.Offset%want.Alignment != 0 || g.DataOffset%int64(want.Alignment) != 0 {
				t.Errorf("tensor %s at %d+%d not aligned to %d", wt.Name, g.DataOffset, ti.Offset, want.Alignment)
			}
			data := file[g.DataOffset+int64(ti.Offset):][:ti.Size]
			if !bytes.Equal(data, tensorBytes(i, wt)) {
				t.Errorf("tensor %s data differs", wt.Name)
			}
		}
		if g.Version != Version {
			t.Errorf("version %d", g.Version)
		}
		if len(file)%int(want.Alignment) != 0 {
			t.Errorf("file length %d not padded to %d", len(file), want.Alignment)
		}
		compareGGUF(t, want, g)
	}
}

func TestValueAccessors(t *testing.T) {
	md := allValues()
	for _, c := range []struct {
		key  string
		uint uint64
		uok  bool
		int  int64
		iok  bool
		flt  float64
		fok  bool
	}{
		{"u8", 255, true, 255, true, 255, true},
		{"i8", 0, false, -128, true, -128, true},
		{"u64", math.MaxUint64, true, 0, false, math.MaxUint64, true},
		{"i64", 0, false, math.MinInt64, true, math.MinInt64, true},
		{"f64", 0, false, 0, false, math.Pi, true},
		{"string", 0, false, 0, false, 0, false},
		{"bool.true", 0, false, 0, false, 0, false},
	} {
		u, uok := md.Uint(c.key)
		i, iok := md.Int(c.key)
		f, fok := md.Float(c.key)
		if u != c.uint || uok != c.uok || i != c.int || iok != c.iok || f != c.flt || fok != c.fok {
			t.Errorf("%s: Uint %d %v, Int %d %v, Float %g %v", c.key, u, uok, i, iok, f, fok)
		}
	}
	if b, ok := md.Bool("bool.true"); !b || !ok {
		t.Errorf("Bool(bool.true) = %v, %v", b, ok)
	}
	if _, ok := md.Bool("u8"); ok {
		t.Errorf("Bool(u8) ok")
	}
	if s, ok := md.String("string.empty"); s != "" || !ok {
		t.Errorf("String(string.empty) = %q, %v", s, ok)
	}
	if _, ok := md.String("missing"); ok {
		t.Errorf("String(missing) ok")
	}
	if a, ok := md.Strings("a.string"); !ok || len(a) != 4 || a[3] != "▁the" {
		t.Errorf("Strings = %q, %v", a, ok)
	}
	if a, ok := md.Float32s("a.f32"); !ok || !slices.Equal(a, []float32{0.5, -1e30, 3}) {
		t.Errorf("Float32s = %v, %v", a, ok)
	}
	for key, want := range map[string][]int32{
		"a.i32": {-5, 5, math.MaxInt32}, "a.i8": {-1, 0, 127}, "a.u8": {0, 1, 255}, "a.i16": {-2, 2},
	} {
		if a, ok := md.Int32s(key); !ok || !slices.Equal(a, want) {
			t.Errorf("Int32s(%s) = %v, %v", key, a, ok)
		}
	}
	for _, key := range []string{"a.u32", "a.u64", "a.i64", "a.f32", "a.string", "u8"} {
		if a, ok := md.Int32s(key); ok {
			t.Errorf("Int32s(%s) = %v, want failure (out of range or not integers)", key, a)
		}
	}
	v, _ := md.Get("a.nested.mixed")
	if v.Len() != 3 || v.ElemType() != TypeArray || v.Index(1).Index(0).Index(0).str != "deep" {
		t.Errorf("nested array: %v", v)
	}
	if got := v.String(); got != `[[1, 2], [["deep"], [9]], []]` {
		t.Errorf("String() = %s", got)
	}
	big, _ := md.Get("a.big")
	if got := big.String(); got != "[0, 0, 0, 0, 0, 0, 0, 0, ... (50000 float32 elements)]" {
		t.Errorf("String() = %s", got)
	}
	md.Delete("u8")
	md.Delete("nothing")
	if _, ok := md.Get("u8"); ok || md.Keys()[1] != "i8" {
		t.Errorf("after Delete: %v", md.Keys()[:3])
	}
	if s, _ := md.String("string"); s != "héllo\x00 wörld" {
		t.Errorf("index broken after Delete: %q", s)
	}
	md.Set("i8", StringValue("replaced"))
	if md.Keys()[1] != "i8" {
		t.Errorf("Set of an existing key moved it: %v", md.Keys()[:3])
	}
}

func TestVersion2(t *testing.T) {
	file := writeTest(t, allValues(), testTensors)
	file[4] = 2
	g, err := ReadGGUF(bytes.NewReader(file), int64(len(file)))
	if err != nil {
		t.Fatal(err)
	}
	if g.Version != 2 {
		t.Errorf("version %d", g.Version)
	}
}

func TestWriteErrors(t *testing.T) {
	good := func(i int, w io.Writer) error { _, err := w.Write(tensorBytes(i, testTensors[i])); return err }
	bad := &Metadata{}
	bad.Set("nested", ArraysValue(Uint8Value(1)))
	badAlign := &Metadata{}
	badAlign.Set(KeyAlignment, Uint32Value(48))
	for _, c := range []struct {
		name    string
		md      *Metadata
		tensors []WriterTensor
		data    func(int, io.Writer) error
		want    string
	}{
		{"array of non-arrays", bad, nil, nil, "element 0"},
		{"alignment", badAlign, nil, nil, "power of two"},
		{"duplicate tensor", nil, []WriterTensor{testTensors[0], testTensors[0]}, good, "duplicate"},
		{"unknown type", nil, []WriterTensor{{Name: "x", Shape: []uint64{4}, Type: quant.Type(99)}}, good, "type(99)"},
		{"partial block", nil, []WriterTensor{{Name: "x", Shape: []uint64{33}, Type: quant.Q4_0}}, good, "whole number"},
		{"no dims", nil, []WriterTensor{{Name: "x", Shape: nil, Type: quant.F32}}, good, "dimensions"},
		{"overflow", nil, []WriterTensor{{Name: "x", Shape: []uint64{1 << 40, 1 << 40}, Type: quant.F32}}, good, "overflows"},
		{"short data", nil, testTensors[:1], func(i int, w io.Writer) error { _, err := w.Write(make([]byte, 10)); return err }, "is 10 bytes, want 2048"},
		{"long data", nil, testTensors[:1], func(i int, w io.Writer) error { _, err := w.Write(make([]byte, 2049)); return err }, "is 2049 bytes"},
		{"nil data", nil, testTensors[:1], nil, "nil data"},
		{"data error", nil, testTensors[:1], func(int, io.Writer) error { return io.ErrClosedPipe }, "closed pipe"},
	} {
		err := WriteGGUF(io.Discard, c.md, c.tensors, c.data)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
	// A failing destination is reported.
	if err := WriteGGUF(failWriter{}, allValues(), testTensors, good); err == nil {
		t.Errorf("no error from a failing writer")
	}
}

type failWriter struct{}

func (failWriter) Write(p []byte) (int, error) { return 0, io.ErrShortWrite }

func TestValueZero(t *testing.T) {
	var v Value
	if v.Type() != TypeUint8 || v.Len() != 0 || !reflect.DeepEqual(v, Uint8Value(0)) {
		t.Errorf("zero Value = %#v", v)
	}
}
