package arena

import "golang.org/x/sys/unix"

// adviseHuge asks for transparent huge pages for mem (where the system
// gives them on request): a decode step streams every weight once, and
// with 4 KiB pages each of them is a TLB miss (12L-768 q4_0 repacked: 10%
// less CPU per token at 1 thread). Without them the pages stay small.
func adviseHuge(mem []byte) { _ = unix.Madvise(mem, unix.MADV_HUGEPAGE) }

// HugePages reports whether AdviseHugePages can give an arena huge pages
// on this system (Linux); where it cannot, it does nothing.
const HugePages = true
