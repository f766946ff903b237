//go:build purego || !(amd64 || arm64)

package kernels

import "github.com/qsf-llm/qsf/quant"

// tileFor returns the tile kernel of tier tr for traits tt, or nil: this
// build has none.
func tileFor(tr *Tier, tt *quant.Traits) *tileKernel { return nil }
