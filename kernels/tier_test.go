package kernels

import (
	"testing"

	"github.com/qsf-llm/qsf/quant"
)

// rowsOf returns tr's decode kernel for the matrices of key k, nil when
// it runs the generic one.
func (tr *Tier) rowsOf(k quant.Type) rowsFunc { return tr.table[k].rows }

// withoutTiles returns a copy of tr that multiplies several activations
// one at a time (no tile kernels), for benchmarks and tests that compare
// the two paths.
func (tr *Tier) withoutTiles() *Tier {
	c := &Tier{name: tr.name}
	c.inherit(tr)
	for k, r := range c.table {
		r.tile, r.tileTier = nil, ""
		c.table[k] = r
	}
	return c
}

// withTile returns a copy of tr whose tile kernel for key is k.
func (tr *Tier) withTile(key quant.Type, k *tileKernel) *Tier {
	c := &Tier{name: tr.name}
	c.inherit(tr)
	c.register([]kernelRow{{key: key, tile: k}})
	return c
}

// TestKernelTiers checks what KernelTiers reports for a few rows of the
// tables: the generic tier's own code everywhere, and on the assembly
// tiers the tier whose code a row is.
func TestKernelTiers(t *testing.T) {
	for _, typ := range []quant.Type{quant.Q4_K, quant.F32, Q4_0x8, quant.Q2_K} {
		rows, tile := genericTier.KernelTiers(typ, 1)
		if rows != "generic" || tile != "" {
			t.Errorf("generic %v: rows %q, tile %q", typeName(typ), rows, tile)
		}
	}
	for _, tr := range available[1:] {
		for typ, k := range tr.table {
			n := 1 // Q4_0 of an odd number of rows: the key Q4_0
			if typ == q4_0Gemv {
				typ, n = quant.Q4_0, 8
			}
			rows, tile := tr.KernelTiers(typ, n)
			if k.rows != nil && rows != k.rowsTier || k.rows == nil && rows != "generic" {
				t.Errorf("%s %v: rows %q, table %q", tr.name, typeName(typ), rows, k.rowsTier)
			}
			if (k.tile == nil) != (tile == "") {
				t.Errorf("%s %v: tile %q, table has tile %v", tr.name, typeName(typ), tile, k.tile != nil)
			}
		}
	}
}
