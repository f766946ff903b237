package load

import (
	"fmt"

	"github.com/qsf-llm/qsf/arena"
	"github.com/qsf-llm/qsf/format"
	"github.com/qsf-llm/qsf/kernels"
	"github.com/qsf-llm/qsf/model"
	"github.com/qsf-llm/qsf/quant"
)

// repackWeights rearranges, once at load, the matrices whose file layout
// the kernels read slowly into one they read fast, as llama.cpp does:
// Q4_0 matrices of a multiple of 8 rows become kernels.Q4_0x8, whose
// kernel does about half the work per byte (kernels.Q4_0x16 for a multiple
// of 16 rows on the avx512 tier, which reads it as one stream), and Q8_0 matrices of a
// multiple of 4 rows kernels.Q8_0x4, which the kernel reads as one stream
// instead of four (see kernels.RepackType). The results are the same bit
// for bit. The token embedding, and an LM head tied to it, keep the
// file's layout: rows of it are looked up one at a time.
//
// Resident memory does not grow: a matrix in the file's read-only mapping
// is copied into an arena (an anonymous mapping outside the Go heap, so
// the garbage collector's headroom does not grow with it either) in the
// new layout, and its mapped pages are handed back (format.File.Release)
// in runs of about 4 MiB; a GGUF matrix read into memory (NoMmap, a buffer
// of its own) is repacked in place. A QSF record read into memory (LZ4, or
// NoMmap) stays in the file's layout: the file caches it and would hand
// the repacked bytes to a later reader, and copying it would double it.
// The arena, nil when no matrix needed one, is the caller's to close after
// the weights' last use.
//
// huge says the model is resident without a RAM budget: the arena is
// then advised for transparent huge pages (where arena.HugePages), and
// the mapped matrices the tier does not repack go into it too (F32, and
// K-quants such as the Q6_K LM head of most files on the amd64 tiers),
// copied as they are: in the file's mapping of 4 KiB pages each page is a
// TLB miss, and a decode step reads every matrix once (12L-768 q4_0,
// whose Q6_K head is 20 MB: 4 batched sessions decode 2-3% faster, one
// the same). Where the tier has an F32H kernel
// (kernels.Tier.PacksF32H: avx512, rows of a multiple of 128 columns) and
// every row fits (kernels.F32HFits, tested in runs whose pages are handed
// back after), a matrix is packed as kernels.F32H, losslessly in 28 bits
// a weight: a decode step reads each F32 weight once, and 1-thread decode
// of 12L-768 F32 is bound by memory bandwidth, so 0.9 of the bytes is
// about that much less time (and resident memory). Otherwise, with huge
// pages, an F32 matrix is copied as it is: in the file's mapping of 4 KiB pages (the
// page cache keeps a file in huge pages only as its reads happened to
// allocate them, and Linux collapses none on request without
// CONFIG_READ_ONLY_THP_FOR_FS) each page is a TLB miss (12L-768 F32 on
// Zen 5: about 3% less CPU per decoded token at 1 and 2 threads).
//
// tier is the tier the model runs on: QSF's rotated types are repacked
// only where it has kernels for their x8 layouts (kernels.Tier.RepackType).
// experts says whether the routed experts of a mixture of experts are
// repacked too (not when they are streamed); progress, when not nil, is
// told the bytes repacked so far.
func repackWeights(w *model.Weights, f *format.File, tier *kernels.Tier, experts, huge bool, progress func(done, total int64)) (*arena.Arena, error) {
	var todo []*model.Tensor
	// unit holds the rows of each expert of a stacked expert tensor:
	// the model slices it there, so its layout's groups must not
	// straddle them (Q4_0x16 only when they are whole groups of 16).
	unit := map[*model.Tensor]int{}
	for i := range w.Blocks {
		for _, t := range w.Blocks[i].Matrices() {
			todo = append(todo, t)
		}
		if x := w.Blocks[i].Experts; x != nil {
			todo = append(todo, x.RepackableMatrices(experts)...)
			if n := x.Router.Rows; n > 0 {
				for _, t := range []*model.Tensor{&x.Gate, &x.Up, &x.Down} {
					unit[t] = t.Rows / n
				}
			}
		}
	}
	if !w.TiedOutput {
		todo = append(todo, &w.Output)
	}
	n := 0
	var size int
	packF32H := map[*model.Tensor]bool{}
	copyOnly := map[*model.Tensor]bool{}
	packType := map[*model.Tensor]quant.Type{}
	for _, t := range todo {
		rows := t.Rows
		if u, ok := unit[t]; ok {
			rows = u
		}
		pt, ok := tier.RepackType(t.Type, rows, t.Cols)
		packType[t] = pt
		mapped := f.IsMapped(t.Data)
		if huge && t.Type == quant.F32 && mapped && tier.PacksF32H(t.Cols) && f32hFits(t, f) {
			packF32H[t] = true
			rb, _ := kernels.F32HRowBytes(t.Cols)
			size += (t.Rows*rb + arena.Align - 1) &^ (arena.Align - 1)
			todo[n] = t
			n++
			continue
		}
		if ok && (mapped || f.QSF() == nil) || huge && arena.HugePages && mapped {
			copyOnly[t] = !ok
			todo[n] = t
			n++
			if mapped {
				size += (len(t.Data) + arena.Align - 1) &^ (arena.Align - 1)
			}
		}
	}
	todo = todo[:n]
	huge = huge && arena.HugePages
	var done, total int64
	for _, t := range todo {
		total += int64(len(t.Data))
	}
	var a *arena.Arena
	if size > 0 {
		var err error
		if a, err = arena.New(size); err != nil {
			return nil, err
		}
		if huge {
			a.AdviseHugePages()
		}
	}
	for _, t := range todo {
		dst := t.Data
		if f.IsMapped(t.Data) {
			n := len(t.Data)
			if packF32H[t] {
				rb, _ := kernels.F32HRowBytes(t.Cols)
				n = t.Rows * rb
			}
			var err error
			if dst, err = a.Alloc(t.Name, n); err != nil {
				a.Close()
				return nil, err
			}
		}
		typ, err := repackRows(t, dst, f, packType[t], packF32H[t], copyOnly[t])
		if err != nil {
			if a != nil {
				a.Close()
			}
			return nil, err
		}
		t.Data, t.Type = dst, typ
		if done += int64(len(dst)); progress != nil {
			progress(done, total)
		}
	}
	return a, nil
}

// repackChunk is about how many bytes of a matrix repackRows repacks
// before it hands their mapped pages back, bounding how far resident
// memory overshoots the weights' size while a model loads.
const repackChunk = 4 << 20

// repackRows repacks t into dst in layout pt (kernels.RepackTo) in runs of
// whole 16-row groups (a multiple of every repacked type's group) of about
// repackChunk bytes, releasing each run's mapped source pages once it is
// copied, and returns the new type. F32 rows are packed as kernels.F32H
// with f32h, else copied as they are.
func repackRows(t *model.Tensor, dst []byte, f *format.File, pt quant.Type, f32h, copyOnly bool) (quant.Type, error) {
	rb := t.RowBytes()
	step := max(16, repackChunk/rb/16*16)
	typ := t.Type
	for lo := 0; lo < t.Rows; lo += step {
		hi := min(lo+step, t.Rows)
		src := t.Data[lo*rb : hi*rb]
		if f32h {
			prb, _ := kernels.F32HRowBytes(t.Cols)
			if err := kernels.PackF32H(dst[lo*prb:hi*prb], src, hi-lo, t.Cols); err != nil {
				return t.Type, fmt.Errorf("qsf: pack %s: %w", t.Name, err)
			}
			f.Release(src)
			typ = kernels.F32H
			continue
		}
		if copyOnly {
			copy(dst[lo*rb:hi*rb], src)
			f.Release(src)
			continue
		}
		if err := kernels.RepackTo(pt, dst[lo*rb:hi*rb], src, hi-lo, t.Cols); err != nil {
			return t.Type, fmt.Errorf("qsf: repack %s: %w", t.Name, err)
		}
		typ = pt
		f.Release(src)
	}
	return typ, nil
}

// f32hFits reports whether the F32 matrix t packs as kernels.F32H
// (kernels.F32HFits), reading it in runs of about repackChunk bytes and
// releasing each run's mapped pages after, so that the test does not make
// the whole matrix resident before it is packed.
func f32hFits(t *model.Tensor, f *format.File) bool {
	rb := t.RowBytes()
	step := max(1, repackChunk/rb)
	for lo := 0; lo < t.Rows; lo += step {
		hi := min(lo+step, t.Rows)
		src := t.Data[lo*rb : hi*rb]
		ok := kernels.F32HFits(src, hi-lo, t.Cols)
		f.Release(src)
		if !ok {
			return false
		}
	}
	return true
}
