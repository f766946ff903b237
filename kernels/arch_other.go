//go:build purego || !(amd64 || arm64)

package kernels

// registerArch has no assembly tiers to add on this architecture or build.
func registerArch() {}

// prepQ4_0x8Rows is prepQ4_0x8Generic: this build has no assembly.
func prepQ4_0x8Rows(buf, act []byte, nb int) { prepQ4_0x8Generic(buf, act, nb) }
