package qsf_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestArchitectureImports checks the package table of docs/ARCHITECTURE.md
// against the code: every package of the module has a row, and imports
// (outside its tests) exactly the packages of the module its row names
// (rows that say "everything below" or "all" are not checked). The
// compiler already refuses import cycles; this keeps the layering the
// table states true.
func TestArchitectureImports(t *testing.T) {
	const module = "github.com/qsf-llm/qsf"
	doc, err := os.ReadFile("docs/ARCHITECTURE.md")
	if err != nil {
		t.Fatal(err)
	}
	rowRE := regexp.MustCompile("^\\| `([^`]+)`[^|]*\\|[^|]*\\| (.*) \\|$")
	nameRE := regexp.MustCompile("`([^`]+)`")
	rows := map[string][]string{} // package dir -> imports named, nil: not checked
	for _, line := range strings.Split(string(doc), "\n") {
		m := rowRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		dir := m[1]
		if dir == "qsf" {
			dir = "."
		}
		names := []string{}
		if strings.Contains(m[2], "everything below") || strings.TrimSpace(m[2]) == "all" {
			names = nil
		} else {
			for _, n := range nameRE.FindAllStringSubmatch(m[2], -1) {
				names = append(names, n[1])
			}
		}
		rows[dir] = names
	}
	imports := map[string]map[string]bool{} // package dir -> module packages imported
	err = filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != "." && (strings.HasPrefix(d.Name(), ".") || strings.HasPrefix(d.Name(), "_") || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		dir := filepath.ToSlash(filepath.Dir(path))
		if imports[dir] == nil {
			imports[dir] = map[string]bool{}
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if p == module {
				imports[dir]["qsf"] = true
			} else if rest, ok := strings.CutPrefix(p, module+"/"); ok {
				imports[dir][rest] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(imports) < 10 || len(rows) < 10 {
		t.Fatalf("found %d packages and %d table rows: the walk or the table's format changed", len(imports), len(rows))
	}
	for dir, imp := range imports {
		named, ok := rows[dir]
		if !ok {
			t.Errorf("package %s has no row in docs/ARCHITECTURE.md's package table", dir)
			continue
		}
		if named == nil {
			continue
		}
		var got []string
		for p := range imp {
			got = append(got, p)
		}
		slices.Sort(got)
		slices.Sort(named)
		if !slices.Equal(got, named) {
			t.Errorf("package %s imports %v; its row in docs/ARCHITECTURE.md names %v", dir, got, named)
		}
	}
}
