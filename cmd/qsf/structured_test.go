package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qsf-llm/qsf/internal/testfiles"
)

// TestRunStructured runs qsf run with --json-schema (inline and from a
// file) and --grammar, and checks the outputs and the error paths.
func TestRunStructured(t *testing.T) {
	model := testfiles.Path(t, "models", "gguf", "stories260K-f32.gguf")
	dir := t.TempDir()
	schema := `{"type":"object","properties":{"name":{"type":"string","maxLength":8},"n":{"type":"integer","minimum":1,"maximum":9}},"required":["name","n"],"additionalProperties":false}`
	schemaFile := filepath.Join(dir, "s.json")
	grammarFile := filepath.Join(dir, "g.gbnf")
	os.WriteFile(schemaFile, []byte(schema), 0o644)
	os.WriteFile(grammarFile, []byte(`root ::= " there " ("was" | "were") " " [a-z]+ "."`+"\n"), 0o644)
	for _, args := range [][]string{
		{"--json-schema", schema},
		{"--json-schema", schemaFile},
		{"--grammar", grammarFile},
	} {
		var out, errb bytes.Buffer
		full := append([]string{"run", "-m", model, "-p", "Once upon a time", "-n", "200", "--seed", "5", "--json", "--threads", "1"}, args...)
		if code := runMain(full, &out, &errb); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errb.String())
		}
		var run struct {
			Text       string `json:"text"`
			StopReason string `json:"stop_reason"`
		}
		if err := json.Unmarshal(out.Bytes(), &run); err != nil {
			t.Fatal(err)
		}
		if run.StopReason != "grammar" && run.StopReason != "eos" {
			t.Errorf("%v: stop reason %s, text %q", args, run.StopReason, run.Text)
		}
		if args[0] == "--json-schema" {
			var v struct {
				Name string
				N    int
			}
			if err := json.Unmarshal([]byte(run.Text), &v); err != nil || v.N < 1 || v.N > 9 || len([]rune(v.Name)) > 8 {
				t.Errorf("%v: %q: %v", args, run.Text, err)
			}
		} else if !strings.HasPrefix(run.Text, " there w") || !strings.HasSuffix(run.Text, ".") {
			t.Errorf("--grammar: %q", run.Text)
		}
	}

	badGrammar := filepath.Join(dir, "bad.gbnf")
	os.WriteFile(badGrammar, []byte("root ::= \"a\"\nx ::= (\"b\""), 0o644)
	for _, tt := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"--grammar", grammarFile, "--json-schema", schema}, 2, "exclude each other"},
		{[]string{"--grammar", badGrammar}, 1, "line 2, column 11: expecting ')'"},
		{[]string{"--json-schema", `{"type":"string","format":"email"}`}, 1, "format email"},
		{[]string{"--json-schema", filepath.Join(dir, "missing.json")}, 1, "no such file"},
	} {
		var out, errb bytes.Buffer
		code := runMain(append([]string{"run", "-m", model, "-p", "x", "--threads", "1"}, tt.args...), &out, &errb)
		if code != tt.code || !strings.Contains(errb.String(), tt.msg) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d mentioning %q", tt.args, code, errb.String(), tt.code, tt.msg)
		}
	}

	// Output cut by -n is reported as incomplete.
	var out, errb bytes.Buffer
	if code := runMain([]string{"run", "-m", model, "-p", "x", "-n", "2", "--threads", "1", "--json-schema", schema}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.Contains(errb.String(), "incomplete") {
		t.Errorf("no incomplete warning: %q", errb.String())
	}
}
