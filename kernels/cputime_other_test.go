//go:build !linux

package kernels

func threadCPU() int64  { return -1 }
func processCPU() int64 { return -1 }
