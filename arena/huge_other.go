//go:build !linux

package arena

// adviseHuge does nothing: huge pages on request are Linux's.
func adviseHuge([]byte) {}
