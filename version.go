package qsf

import (
	"runtime/debug"
	"sync"
)

// modulePath is this module's import path.
const modulePath = "github.com/qsf-llm/qsf"

// Version returns the version of the qsf module linked into the program,
// as the Go toolchain recorded it in the build info: a release tag such as
// "v1.2.0", a pseudo-version for a commit, or "(devel)" when it was built
// from a work tree without version control information.
func Version() string { return version() }

var version = sync.OnceValue(func() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "(devel)"
	}
	return moduleVersion(bi)
})

// moduleVersion finds this module in bi: the main module when the program
// is built inside it, a dependency otherwise (following a replace).
func moduleVersion(bi *debug.BuildInfo) string {
	m := &bi.Main
	if m.Path != modulePath {
		m = nil
		for _, d := range bi.Deps {
			if d.Path == modulePath {
				m = d
				break
			}
		}
	}
	if m == nil {
		return "(devel)"
	}
	if m.Replace != nil && m.Replace.Version != "" {
		return m.Replace.Version
	}
	if m.Version == "" {
		return "(devel)"
	}
	return m.Version
}
