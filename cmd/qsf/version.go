package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/qsf-llm/qsf"
)

func cmdVersion(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("version", "", stderr)
	if _, err := parse(fs, args); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "qsf %s (%s %s/%s%s)\n", qsf.Version(), runtime.Version(), runtime.GOOS, runtime.GOARCH, vcsInfo())
	return nil
}

// vcsInfo returns ", commit abc123def456 (modified)" from the build info
// when the binary was built in a git work tree.
func vcsInfo() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	var rev, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = " (modified)"
			}
		}
	}
	if rev == "" {
		return ""
	}
	return ", commit " + rev[:min(12, len(rev))] + modified
}
