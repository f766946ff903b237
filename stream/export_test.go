package stream

// SetMinSplit sets the size above which units are read in two parallel
// halves and returns a function restoring it.
func SetMinSplit(n int) (restore func()) {
	old := minSplit
	minSplit = n
	return func() { minSplit = old }
}
