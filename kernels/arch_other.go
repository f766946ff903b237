//go:build purego || !amd64

package kernels

// registerArch has no assembly tiers to add on this architecture or build.
func registerArch() {}
