//go:build !linux

package arena

// adviseHuge does nothing: huge pages on request are Linux's.
func adviseHuge([]byte) {}

// HugePages reports whether AdviseHugePages can give an arena huge pages
// on this system (Linux); where it cannot, it does nothing.
const HugePages = false
