package kernels

import "syscall"

// threadCPU returns the CPU time the calling OS thread has used, in
// nanoseconds, or -1 when it cannot be read. Benchmarks on a shared machine
// report throughput per CPU second as well as per wall second.
func threadCPU() int64 {
	var ru syscall.Rusage
	const rusageThread = 1 // RUSAGE_THREAD
	if err := syscall.Getrusage(rusageThread, &ru); err != nil {
		return -1
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// processCPU returns the CPU time the whole process has used, in
// nanoseconds, or -1 when it cannot be read.
func processCPU() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return -1
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
