package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qsf-llm/qsf/format"
	"github.com/qsf-llm/qsf/internal/testfiles"
	"github.com/qsf-llm/qsf/quant"
)

// lastJSON decodes the last line of out.
func lastJSON(t *testing.T, out string, v any) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), v); err != nil {
		t.Fatalf("last line is not JSON: %v\n%s", err, out)
	}
}

// TestQuantizeCalibrated quantizes stories260K (rows padded to 256) to
// each QSF type with a calibration text, checks the bits per weight, and
// runs the result.
func TestQuantizeCalibrated(t *testing.T) {
	in := testfiles.Path(t, "models", "gguf", "stories260K-pad256-f32.gguf")
	dir := t.TempDir()
	calib := filepath.Join(dir, "calib.txt")
	os.WriteFile(calib, []byte(strings.Repeat("Once upon a time, there was a little girl named Lily. She liked to play with her ball in the park.\n", 8)), 0o644)
	for _, tc := range []struct {
		quant string
		bpw   float64
	}{{"2bit", 2.5}, {"3bit", 3.5}, {"QSF_Q4A", 4.5}} {
		out := filepath.Join(dir, tc.quant+".qsf")
		var stdout, stderr bytes.Buffer
		if code := runMain([]string{"quantize", in, out, "--quant", tc.quant, "--calibration", calib, "--json"}, &stdout, &stderr); code != 0 {
			t.Fatalf("quantize %s: exit %d: %s", tc.quant, code, stderr.String())
		}
		var rep quantizeReport
		lastJSON(t, stdout.String(), &rep)
		if rep.BPW != tc.bpw || rep.CalibrationTokens == 0 || len(rep.Tensors) != 37 {
			t.Errorf("%s: bpw %v (want %v), %d calibration tokens, %d tensors", tc.quant, rep.BPW, tc.bpw, rep.CalibrationTokens, len(rep.Tensors))
		}
		for _, q := range rep.Tensors {
			if !(q.Cosine > 0.8) {
				t.Errorf("%s: %s cosine %v", tc.quant, q.Name, q.Cosine)
			}
		}
		stdout.Reset()
		if code := runMain([]string{"run", "-m", out, "-p", "Once upon a time", "-n", "8", "--temp", "0"}, &stdout, &stderr); code != 0 || len(stdout.String()) < len("Once upon a time")+4 {
			t.Fatalf("run %s: exit %d: %q %s", tc.quant, code, stdout.String(), stderr.String())
		}
	}
}

// TestQuantizeErrors: bad input (not a model, corrupt or truncated GGUF,
// QSF and llama2.c files, quantized weights), bad calibration (empty, not
// text), bad options and an impossible --target-size fail with a clear
// message, leave nothing behind (no temporary file or directory) and
// leave a file already at OUT as it was.
func TestQuantizeErrors(t *testing.T) {
	f32 := testfiles.Path(t, "models", "gguf", "stories260K-f32.gguf")
	q8 := testfiles.Path(t, "models", "gguf", "stories260K-Q8_0.gguf")
	bin := testfiles.Path(t, "models", "llama2c", "stories260K.bin")
	tok := testfiles.Path(t, "models", "llama2c", "tok512.bin")
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	read := func(p string) []byte {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	empty := write("empty.txt", []byte(" \n"))
	binary := write("bin.txt", []byte{'a', 0, 0xff, 0xfe})
	calib := write("calib.txt", []byte("Lily and Ben went to the park. They saw a big dog and a red ball.\n"))
	raw := read(f32)
	truncated := write("truncated.gguf", raw[:len(raw)/2])
	corrupt := append([]byte(nil), raw...)
	for i := 8; i < 24; i++ {
		corrupt[i] = 0xff // tensor and key counts
	}
	corruptGGUF := write("corrupt.gguf", corrupt)
	// A QSF file with one byte of a layer flipped: its CRC fails.
	good := filepath.Join(dir, "good.qsf")
	var stdout, stderr bytes.Buffer
	if code := runMain([]string{"convert", f32, good}, &stdout, &stderr); code != 0 {
		t.Fatalf("convert: %s", stderr.String())
	}
	q := read(good)
	fq, err := format.Open(good)
	if err != nil {
		t.Fatal(err)
	}
	q[fq.QSF().Layers[2].Offset+100] ^= 0x40
	fq.Close()
	corruptQSF := write("corrupt.qsf", q)
	l2c := filepath.Join(dir, "l2c")
	os.Mkdir(l2c, 0o755)
	os.WriteFile(filepath.Join(l2c, "tok512.bin"), read(tok), 0o644)
	b := read(bin)
	truncBin := filepath.Join(l2c, "model.bin")
	os.WriteFile(truncBin, b[:len(b)-1000], 0o644)
	// A Hugging Face model whose safetensors file is cut short.
	hf := filepath.Join(dir, "hf")
	writeHFLlama(t, hf)
	st := read(filepath.Join(hf, "model.safetensors"))
	os.WriteFile(filepath.Join(hf, "model.safetensors"), st[:len(st)-4096], 0o644)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"truncated safetensors", []string{hf, "OUT", "--quant", "2bit"}, "malformed"},
		{"no type", []string{f32, "OUT"}, "no type"},
		{"bad type", []string{f32, "OUT", "--quant", "5bit"}, "unknown type"},
		{"float type", []string{f32, "OUT", "--quant", "F32"}, "not a type"},
		{"mixed without a size", []string{f32, "OUT", "--quant", "mixed", "--calibration", calib}, "--quant mixed needs --bpw"},
		{"quantized input", []string{q8, "OUT", "--quant", "2bit"}, "wants an f32"},
		{"not a model", []string{empty, "OUT", "--quant", "2bit"}, "not a GGUF or QSF file"},
		{"truncated", []string{truncated, "OUT", "--quant", "2bit"}, "truncated"},
		{"corrupt gguf", []string{corruptGGUF, "OUT", "--quant", "2bit"}, "corrupt.gguf"},
		{"corrupt qsf", []string{corruptQSF, "OUT", "--quant", "2bit"}, "CRC"},
		{"truncated llama2c", []string{truncBin, "OUT", "--quant", "2bit"}, "malformed"},
		{"empty calibration", []string{f32, "OUT", "--quant", "2bit", "--calibration", empty}, "is empty"},
		{"binary calibration", []string{f32, "OUT", "--quant", "2bit", "--calibration", binary}, "not UTF-8 text"},
		{"impossible target size", []string{f32, "OUT", "--target-size", "0.05", "--calibration", calib}, "target too small"},
		{"impossible bpw", []string{f32, "OUT", "--quant", "mixed", "--bpw", "1", "--calibration", calib}, "target too small"},
		{"outliers with mixed", []string{f32, "OUT", "--bpw", "3", "--calibration", calib, "--outliers", "1"}, "--outliers and --bpw"},
		{"fractional outlier count", []string{f32, "OUT", "--quant", "2bit", "--outliers", "1.5"}, "--outliers 1.5"},
		{"more outliers than columns", []string{f32, "OUT", "--quant", "2bit", "--outliers", "100"}, "outliers per row"},
	} {
		outDir := t.TempDir()
		out := filepath.Join(outDir, "out.qsf")
		os.WriteFile(out, []byte("previous"), 0o644)
		args := append([]string{"quantize"}, tc.args...)
		args[2] = out
		stderr.Reset()
		if code := runMain(args, &stdout, &stderr); code == 0 {
			t.Errorf("%s: exit 0", tc.name)
		}
		if !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%s: stderr %q lacks %q", tc.name, stderr.String(), tc.want)
		}
		if left, _ := os.ReadDir(outDir); len(left) != 1 {
			var names []string
			for _, e := range left {
				names = append(names, e.Name())
			}
			t.Errorf("%s: left %v in the output's directory", tc.name, names)
		}
		if got := read(out); string(got) != "previous" {
			t.Errorf("%s: the file at OUT was replaced", tc.name)
		}
	}
}

// TestQuantizeOutliers: --outliers K adds a K-pair outlier table to every
// layer matrix; the report counts its bytes with its matrix (bits per
// weight, and the quality of the matrix with the table applied), which is
// closer to the input than without the tables; the file runs.
func TestQuantizeOutliers(t *testing.T) {
	in := testfiles.Path(t, "models", "gguf", "stories260K-pad256-f32.gguf")
	dir := t.TempDir()
	quality := func(k string) quantizeReport {
		out := filepath.Join(dir, "k"+k+".qsf")
		var stdout, stderr bytes.Buffer
		if code := runMain([]string{"quantize", in, out, "--quant", "2bit", "--outliers", k, "--json"}, &stdout, &stderr); code != 0 {
			t.Fatalf("quantize --outliers %s: exit %d: %s", k, code, stderr.String())
		}
		var rep quantizeReport
		lastJSON(t, stdout.String(), &rep)
		if k != "0" {
			stdout.Reset()
			if code := runMain([]string{"run", "-m", out, "-p", "Once upon a time", "-n", "8", "--temp", "0"}, &stdout, &stderr); code != 0 || len(stdout.String()) < len("Once upon a time")+4 {
				t.Fatalf("run: exit %d: %q %s", code, stdout.String(), stderr.String())
			}
		}
		return rep
	}
	base, with := quality("0"), quality("2")
	if len(with.Tensors) != len(base.Tensors) {
		t.Fatalf("%d tensors reported with outliers, %d without", len(with.Tensors), len(base.Tensors))
	}
	var mseBase, mseWith float64
	for i, q := range with.Tensors {
		want := 2.5
		if strings.HasPrefix(q.Name, "blk.") {
			want += 2 * 32 / 256.0 // pad256: every row is 256 long
			mseBase += base.Tensors[i].RelMSE
			mseWith += q.RelMSE
		}
		if math.Abs(q.BPW-want) > 1e-9 {
			t.Errorf("%s: %v bits per weight, want %v", q.Name, q.BPW, want)
		}
	}
	if !(with.BPW > base.BPW) || !(mseWith < 0.9*mseBase) {
		t.Errorf("with 2 outliers per row: %v bpw (without %v), summed rel MSE of the layer matrices %v (without %v)", with.BPW, base.BPW, mseWith, mseBase)
	}
	// qsf convert re-quantizes the matrices and copies the tables as they are.
	re := filepath.Join(dir, "f16.qsf")
	var stdout, stderr bytes.Buffer
	if code := runMain([]string{"convert", filepath.Join(dir, "k2.qsf"), re, "--type", "F16"}, &stdout, &stderr); code != 0 {
		t.Fatalf("convert: exit %d: %s", code, stderr.String())
	}
	f, err := format.Open(re)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if o, ok := f.Tensor("blk.0.attn_q.weight" + quant.OutlierSuffix); !ok || o.Type != quant.I16 {
		t.Fatalf("re-quantized file: outlier table %v", o)
	}
	if code := runMain([]string{"run", "-m", re, "-p", "Once upon a time", "-n", "4", "--temp", "0"}, &stdout, &stderr); code != 0 {
		t.Fatalf("run: exit %d: %s", code, stderr.String())
	}
}

// TestQuantizeImportanceFile: --save-importance then --importance gives the
// same file as --calibration; --output-type sets the LM head's type.
func TestQuantizeImportanceFile(t *testing.T) {
	in := testfiles.Path(t, "models", "gguf", "stories260K-pad256-f32.gguf")
	dir := t.TempDir()
	calib := filepath.Join(dir, "calib.txt")
	os.WriteFile(calib, []byte("Lily and Ben went to the park. They saw a big dog and a red ball.\n"), 0o644)
	imp := filepath.Join(dir, "imp.json")
	a, b := filepath.Join(dir, "a.qsf"), filepath.Join(dir, "b.qsf")
	var stdout, stderr bytes.Buffer
	if code := runMain([]string{"quantize", in, a, "--quant", "2bit", "--calibration", calib, "--save-importance", imp, "--output-type", "4bit", "--json"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	var rep quantizeReport
	lastJSON(t, stdout.String(), &rep)
	for _, q := range rep.Tensors {
		want := "QSF_Q2R"
		if q.Name == "output.weight" {
			want = "QSF_Q4R"
		}
		if q.Type != want {
			t.Errorf("%s is %s, want %s", q.Name, q.Type, want)
		}
	}
	if !(rep.BPW > 2.5 && rep.BPW < 2.7) {
		t.Errorf("bpw %v, want between 2.5 and 2.7", rep.BPW)
	}
	if code := runMain([]string{"quantize", in, b, "--quant", "2bit", "--importance", imp, "--output-type", "4bit"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	ab, _ := os.ReadFile(a)
	bb, _ := os.ReadFile(b)
	if !bytes.Equal(ab, bb) {
		t.Error("--importance gives another file than --calibration")
	}
	// Without importance the rounding differs.
	if code := runMain([]string{"quantize", in, b, "--quant", "2bit", "--output-type", "4bit"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if bb, _ = os.ReadFile(b); bytes.Equal(ab, bb) {
		t.Error("calibration changed nothing")
	}
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"tokens":1,"energy":{"blk.0.attn_q.weight":[1,2]}}`), 0o644)
	stderr.Reset()
	if code := runMain([]string{"quantize", in, filepath.Join(dir, "c.qsf"), "--quant", "2bit", "--importance", bad}, &stdout, &stderr); code == 0 || !strings.Contains(stderr.String(), "2 columns") {
		t.Errorf("importance of the wrong width: exit %d, %s", code, stderr.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "c.qsf")); err == nil {
		t.Error("output left behind")
	}
	stderr.Reset()
	if code := runMain([]string{"quantize", in, filepath.Join(dir, "c.qsf"), "--quant", "2bit", "--importance", bad, "--calibration", calib}, &stdout, &stderr); code == 0 || !strings.Contains(stderr.String(), "exclude") {
		t.Errorf("--importance with --calibration: exit %d, %s", code, stderr.String())
	}
}

// TestQuantizeMixed: --bpw chooses types per matrix within the budget and
// reports each matrix's measured sensitivity; an impossible --bpw or
// --target-size fails without leaving an output file.
func TestQuantizeMixed(t *testing.T) {
	in := testfiles.Path(t, "models", "gguf", "stories260K-pad256-f32.gguf")
	dir := t.TempDir()
	calib := filepath.Join(dir, "calib.txt")
	os.WriteFile(calib, []byte(strings.Repeat("Lily and Ben went to the park. They saw a big dog and a red ball.\n", 6)), 0o644)
	out := filepath.Join(dir, "m.qsf")
	var stdout, stderr bytes.Buffer
	if code := runMain([]string{"quantize", in, out, "--bpw", "3.2", "--calibration", calib, "--json"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	var rep quantizeReport
	lastJSON(t, stdout.String(), &rep)
	if !(rep.BPW > 2.9 && rep.BPW <= 3.2) || rep.Type != "mixed" || len(rep.Mixed) != 37 {
		t.Errorf("bpw %v (want in (2.9, 3.2]), type %q, %d sensitivities", rep.BPW, rep.Type, len(rep.Mixed))
	}
	types := map[string]bool{}
	for _, q := range rep.Tensors {
		types[q.Type] = true
	}
	if len(types) < 2 {
		t.Errorf("one type for every matrix: %v", types)
	}
	for _, m := range rep.Mixed {
		if !(m.KLSmallest >= 0) {
			t.Errorf("%s: sensitivity %v", m.Name, m.KLSmallest)
		}
	}
	for _, args := range [][]string{{"--bpw", "2"}, {"--target-size", "0.5"}} {
		bad := filepath.Join(dir, "bad.qsf")
		stderr.Reset()
		if code := runMain(append([]string{"quantize", in, bad, "--calibration", calib}, args...), &stdout, &stderr); code == 0 {
			t.Errorf("%v: exit 0", args)
		}
		if !strings.Contains(stderr.String(), "target too small") {
			t.Errorf("%v: stderr %q", args, stderr.String())
		}
		if left, _ := filepath.Glob(filepath.Join(dir, "bad.qsf*")); len(left) != 0 {
			t.Errorf("%v: left %v behind", args, left)
		}
	}
}

// tensorBytes returns the data of every tensor of the file at path.
func tensorBytes(t *testing.T, path string) map[string][]byte {
	t.Helper()
	f, err := format.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string][]byte{}
	for i := range f.Tensors {
		b, err := f.TensorData(&f.Tensors[i])
		if err != nil {
			t.Fatal(err)
		}
		out[f.Tensors[i].Name] = append([]byte(nil), b...)
	}
	return out
}

// TestQuantizeReportStored: the quality report printed and in --json is
// also in the output's metadata (qsf.quantize.*), the layer index holds
// each layer's importance from calibration (0 without), --compress lz4
// reports the compression of each type, and qsf inspect shows the report.
func TestQuantizeReportStored(t *testing.T) {
	in := testfiles.Path(t, "models", "gguf", "stories260K-pad256-f32.gguf")
	dir := t.TempDir()
	calib := filepath.Join(dir, "calib.txt")
	os.WriteFile(calib, []byte(strings.Repeat("Lily and Ben went to the park. They saw a big dog and a red ball.\n", 3)), 0o644)
	out := filepath.Join(dir, "q.qsf")
	var stdout, stderr bytes.Buffer
	if code := runMain([]string{"quantize", in, out, "--quant", "2bit", "--output-type", "ternary", "--calibration", calib, "--compress", "lz4", "--progress", "--json"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if !strings.Contains(stderr.String(), "quantize: layer 5/5") || !strings.Contains(stderr.String(), "write: layer 5/5") {
		t.Errorf("no progress on stderr: %q", stderr.String())
	}
	var rep quantizeReport
	lastJSON(t, stdout.String(), &rep)
	if len(rep.LayerImportance) != 5 || len(rep.LZ4) != 2 {
		t.Fatalf("%d layer scores, %d LZ4 types", len(rep.LayerImportance), len(rep.LZ4))
	}
	for _, l := range rep.LZ4 {
		want := map[string]int{"QSF_Q2R": 36, "TQ2_0": 1}[l.Type]
		if l.Tensors != want || !(l.Ratio > 0 && l.Ratio <= 1) || l.Compressed > l.Bytes {
			t.Errorf("LZ4 of %s: %+v", l.Type, l)
		}
	}
	if !strings.Contains(stdout.String(), "importance (1 - cos in/out)") || !strings.Contains(stdout.String(), "lz4 bytes") {
		t.Errorf("the printed report lacks the layer or LZ4 table:\n%s", stdout.String())
	}
	f, err := format.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	md := &f.QSF().Metadata
	names, _ := md.Strings(mdQuantNames)
	types, _ := md.Strings(mdQuantTypes)
	bpw, _ := md.Float32s(mdQuantTensorBPW)
	mse, _ := md.Float32s(mdQuantRelMSE)
	cos, _ := md.Float32s(mdQuantCosine)
	imp, _ := md.Float32s(mdQuantLayers)
	all, _ := md.Float(mdQuantBPW)
	tokens, _ := md.Uint(mdQuantTokens)
	if len(names) != len(rep.Tensors) || len(types) != len(names) || len(bpw) != len(names) || len(mse) != len(names) || len(cos) != len(names) {
		t.Fatalf("metadata holds %d names, %d types, %d bpw, %d MSE, %d cosines for %d tensors", len(names), len(types), len(bpw), len(mse), len(cos), len(rep.Tensors))
	}
	for i, q := range rep.Tensors {
		if names[i] != q.Name || types[i] != q.Type || bpw[i] != float32(q.BPW) || mse[i] != float32(q.RelMSE) || cos[i] != float32(q.Cosine) {
			t.Errorf("metadata of tensor %d: %s %s %v %v %v, report %+v", i, names[i], types[i], bpw[i], mse[i], cos[i], q)
		}
	}
	if float32(all) != float32(rep.BPW) || int(tokens) != rep.CalibrationTokens || tokens == 0 {
		t.Errorf("metadata: bpw %v, %d tokens; report %v, %d", all, tokens, rep.BPW, rep.CalibrationTokens)
	}
	for i, e := range f.QSF().Layers {
		if e.Importance != float32(rep.LayerImportance[i]) || imp[i] != e.Importance || !(e.Importance > 0) {
			t.Errorf("layer %d: index importance %v, metadata %v, report %v", i, e.Importance, imp[i], rep.LayerImportance[i])
		}
		if e.Compression != format.CompressLZ4 {
			t.Errorf("layer %d is stored %v", i, e.Compression)
		}
	}
	if v, _ := md.String("qsf.source_format"); v != "gguf" {
		t.Errorf("qsf.source_format %q", v)
	}
	f.Close()
	stdout.Reset()
	if code := runMain([]string{"inspect", out}, &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), "quantization report (2.") || !strings.Contains(stdout.String(), "blk.3.ffn_up.weight  QSF_Q2R  2.500") {
		t.Errorf("inspect: exit %d\n%s", code, stdout.String())
	}
	// Without calibration: no layer scores, importance 0.
	stdout.Reset()
	if code := runMain([]string{"quantize", in, out, "--quant", "ternary", "--json"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	rep = quantizeReport{}
	lastJSON(t, stdout.String(), &rep)
	if rep.LayerImportance != nil || rep.LZ4 != nil || rep.Type != "TQ2_0" {
		t.Errorf("without calibration and compression: %v layer scores, %v LZ4, type %s", rep.LayerImportance, rep.LZ4, rep.Type)
	}
	if f, err = format.Open(out); err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for i, e := range f.QSF().Layers {
		if e.Importance != 0 {
			t.Errorf("layer %d: importance %v without calibration", i, e.Importance)
		}
	}
	if _, ok := f.QSF().Metadata.Get(mdQuantLayers); ok {
		t.Error("layer importance in the metadata without calibration")
	}
}

// TestQuantizeInputs: a llama2.c checkpoint and a Hugging Face model (its
// directory or its .safetensors file) quantize to the same tensors as the
// GGUF or QSF file of the same weights, and the result runs.
func TestQuantizeInputs(t *testing.T) {
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	quantize := func(in, out string, args ...string) quantizeReport {
		t.Helper()
		stdout.Reset()
		stderr.Reset()
		if code := runMain(append([]string{"quantize", in, out, "--json"}, args...), &stdout, &stderr); code != 0 {
			t.Fatalf("quantize %s: exit %d: %s", in, code, stderr.String())
		}
		var rep quantizeReport
		lastJSON(t, stdout.String(), &rep)
		return rep
	}
	same := func(a, b string) {
		t.Helper()
		ta, tb := tensorBytes(t, a), tensorBytes(t, b)
		n := 0
		for name, x := range ta {
			if y, ok := tb[name]; ok {
				n++
				if !bytes.Equal(x, y) {
					t.Errorf("%s: tensor %s differs from %s's", filepath.Base(a), name, filepath.Base(b))
				}
			}
		}
		if n < len(ta)-1 || n < len(tb)-1 { // the llama2.c model has no copy of the tied LM head
			t.Errorf("%d tensors in common of %d and %d", n, len(ta), len(tb))
		}
	}
	// llama2.c (tok512.bin beside it) against the GGUF of the same weights.
	l2c := filepath.Join(dir, "l2c.qsf")
	gguf := filepath.Join(dir, "gguf.qsf")
	quantize(testfiles.Path(t, "models", "llama2c", "stories260K.bin"), l2c, "--quant", "4bit")
	quantize(testfiles.Path(t, "models", "gguf", "stories260K-f32.gguf"), gguf, "--quant", "4bit")
	same(l2c, gguf)
	md := tensorMetadata(t, l2c)
	if v, _ := md.String("qsf.source_format"); v != "llama2c" {
		t.Errorf("llama2.c input: qsf.source_format %q", v)
	}

	// A Hugging Face llama (random weights, byte-level tokenizer).
	hf := filepath.Join(dir, "hf")
	writeHFLlama(t, hf)
	f32 := filepath.Join(dir, "hf-f32.qsf")
	if code := runMain([]string{"convert", hf, f32}, &stdout, &stderr); code != 0 {
		t.Fatalf("convert: %s", stderr.String())
	}
	calib := filepath.Join(dir, "calib.txt")
	os.WriteFile(calib, []byte(strings.Repeat("hello world, hello all. ", 20)), 0o644)
	a, b, c := filepath.Join(dir, "a.qsf"), filepath.Join(dir, "b.qsf"), filepath.Join(dir, "c.qsf")
	ra := quantize(hf, a, "--quant", "2bit", "--calibration", calib)
	quantize(filepath.Join(hf, "model.safetensors"), b, "--quant", "2bit", "--calibration", calib)
	rc := quantize(f32, c, "--quant", "2bit", "--calibration", calib)
	same(a, c)
	same(b, c)
	if ra.BPW != 2.5 || len(ra.Tensors) != 16 || len(ra.LayerImportance) != 2 || ra.CalibrationTokens != rc.CalibrationTokens {
		t.Errorf("HF input: bpw %v, %d tensors, %d layer scores, %d calibration tokens (from its QSF: %d)", ra.BPW, len(ra.Tensors), len(ra.LayerImportance), ra.CalibrationTokens, rc.CalibrationTokens)
	}
	if v, _ := tensorMetadata(t, a).String("qsf.source_format"); v != "hf" {
		t.Errorf("HF input: qsf.source_format %q", v)
	}
	stdout.Reset()
	if code := runMain([]string{"run", "-m", a, "-p", "hello", "-n", "4", "--temp", "0"}, &stdout, &stderr); code != 0 {
		t.Fatalf("run: exit %d: %s", code, stderr.String())
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".qsf-quantize-*")); len(left) != 0 {
		t.Errorf("left %v behind", left)
	}
}

// tensorMetadata returns the QSF metadata section of the file at path.
func tensorMetadata(t *testing.T, path string) *format.Metadata {
	t.Helper()
	f, err := format.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	md := f.QSF().Metadata
	return &md
}

// writeHFLlama writes a small Hugging Face llama into dir: config.json,
// one model.safetensors of random f32 weights (2 layers, width 64, FFN
// 128) and a byte-level BPE tokenizer.json.
func writeHFLlama(t *testing.T, dir string) {
	t.Helper()
	const embd, heads, kvHeads, ffn, layers, vocab = 64, 4, 2, 128, 2, 259
	os.MkdirAll(dir, 0o755)
	cfg, _ := json.Marshal(map[string]any{"model_type": "llama", "hidden_size": embd, "num_attention_heads": heads,
		"num_key_value_heads": kvHeads, "intermediate_size": ffn, "num_hidden_layers": layers, "vocab_size": vocab,
		"rms_norm_eps": 1e-5, "rope_theta": 10000.0, "max_position_embeddings": 256, "bos_token_id": 258,
		"eos_token_id": 258, "tie_word_embeddings": false})
	os.WriteFile(filepath.Join(dir, "config.json"), cfg, 0o644)
	// Byte-level BPE: the 256 byte symbols (GPT-2's mapping), no merges.
	sym := map[int]rune{}
	for b := range 256 {
		if b >= '!' && b <= '~' || b >= 0xA1 && b <= 0xAC || b >= 0xAE {
			sym[b] = rune(b)
		}
	}
	extra := 0
	for b := range 256 {
		if _, ok := sym[b]; !ok {
			sym[b] = rune(256 + extra)
			extra++
		}
	}
	v := map[string]int{}
	for b := range 256 {
		v[string(sym[b])] = b
	}
	v["<pad1>"], v["<pad2>"] = 256, 257
	tok, _ := json.Marshal(map[string]any{
		"added_tokens":  []any{map[string]any{"id": 258, "content": "<|endoftext|>", "special": true}},
		"pre_tokenizer": map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true},
		"model":         map[string]any{"type": "BPE", "vocab": v, "merges": []string{}},
	})
	os.WriteFile(filepath.Join(dir, "tokenizer.json"), tok, 0o644)
	rng := rand.New(rand.NewPCG(1, 2))
	type tensor struct {
		name  string
		shape []int
	}
	var ts []tensor
	ts = append(ts, tensor{"model.embed_tokens.weight", []int{vocab, embd}})
	for l := range layers {
		p := fmt.Sprintf("model.layers.%d.", l)
		ts = append(ts, tensor{p + "input_layernorm.weight", []int{embd}},
			tensor{p + "self_attn.q_proj.weight", []int{embd, embd}},
			tensor{p + "self_attn.k_proj.weight", []int{kvHeads * embd / heads, embd}},
			tensor{p + "self_attn.v_proj.weight", []int{kvHeads * embd / heads, embd}},
			tensor{p + "self_attn.o_proj.weight", []int{embd, embd}},
			tensor{p + "post_attention_layernorm.weight", []int{embd}},
			tensor{p + "mlp.gate_proj.weight", []int{ffn, embd}},
			tensor{p + "mlp.up_proj.weight", []int{ffn, embd}},
			tensor{p + "mlp.down_proj.weight", []int{embd, ffn}})
	}
	ts = append(ts, tensor{"model.norm.weight", []int{embd}}, tensor{"lm_head.weight", []int{vocab, embd}})
	hdr := map[string]any{}
	var data []byte
	for _, x := range ts {
		n := 1
		for _, d := range x.shape {
			n *= d
		}
		start := len(data)
		for range n {
			f := float32(0.2 * rng.NormFloat64())
			if len(x.shape) == 1 {
				f += 1 // norm weights near 1
			}
			data = binary.LittleEndian.AppendUint32(data, math.Float32bits(f))
		}
		hdr[x.name] = map[string]any{"dtype": "F32", "shape": x.shape, "data_offsets": []int{start, len(data)}}
	}
	js, _ := json.Marshal(hdr)
	for len(js)%8 != 0 {
		js = append(js, ' ')
	}
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(js)))
	out = append(append(out, js...), data...)
	if err := os.WriteFile(filepath.Join(dir, "model.safetensors"), out, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestQuantizeMixedFallback: --quant mixed on stories260K, whose ffn_down
// rows (172) no type of the ladder holds, keeps those at --fallback (F16)
// and mixes the others within the budget.
func TestQuantizeMixedFallback(t *testing.T) {
	in := testfiles.Path(t, "models", "gguf", "stories260K-f32.gguf")
	dir := t.TempDir()
	calib := filepath.Join(dir, "calib.txt")
	os.WriteFile(calib, []byte("Lily and Ben went to the park. They saw a big dog.\n"), 0o644)
	var stdout, stderr bytes.Buffer
	if code := runMain([]string{"quantize", in, filepath.Join(dir, "m.qsf"), "--quant", "mixed", "--bpw", "5.5", "--calibration", calib, "--json"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	var rep quantizeReport
	lastJSON(t, stdout.String(), &rep)
	if !(rep.BPW > 5 && rep.BPW <= 5.5) || rep.Type != "mixed" {
		t.Errorf("bpw %v, type %s", rep.BPW, rep.Type)
	}
	for _, q := range rep.Tensors {
		if strings.Contains(q.Name, "ffn_down") != (q.Type == "F16") {
			t.Errorf("%s is %s", q.Name, q.Type)
		}
	}
}
