package kvcache

// Policy chooses which slot a full cache overwrites. Implementations must
// be deterministic; the cache falls back to the oldest slot when Victim
// returns a slot out of range.
type Policy interface {
	// Victim returns the slot to overwrite, given the position held by
	// each slot of one layer, each slot's accumulated attention (zeros
	// unless Tracks) and the position about to be written.
	Victim(pos []int32, score []float32, next int) int
	// Tracks reports whether the policy reads the attention scores, which
	// the forward pass then accumulates with Cache.Observe.
	Tracks() bool
}

// Window is the sliding-window policy: the oldest position is evicted, so
// the cache holds the last Capacity positions.
type Window struct{}

// Victim returns the slot of the oldest position.
func (Window) Victim(pos []int32, _ []float32, _ int) int { return oldest(pos) }

// Tracks returns false: a window needs no attention scores.
func (Window) Tracks() bool { return false }

// HeavyHitter is the H2O policy (Zhang et al., 2023): the Recent most
// recent positions are always kept; among the older ones the position with
// the smallest accumulated attention is evicted, so the "heavy hitters"
// that many queries attend to stay in the cache.
type HeavyHitter struct {
	Recent int
}

// Victim returns the least-attended slot outside the recent window, or the
// oldest slot when every slot is recent.
func (h HeavyHitter) Victim(pos []int32, score []float32, next int) int {
	best := -1
	for s, p := range pos {
		if int(p) >= next-h.Recent {
			continue
		}
		if best < 0 || score[s] < score[best] || (score[s] == score[best] && p < pos[best]) {
			best = s
		}
	}
	if best < 0 {
		return oldest(pos)
	}
	return best
}

// Tracks returns true: the policy ranks positions by attention.
func (HeavyHitter) Tracks() bool { return true }

// oldest returns the slot holding the smallest position (an empty slot
// first).
func oldest(pos []int32) int {
	best := 0
	for s, p := range pos {
		if p < pos[best] {
			best = s
		}
	}
	return best
}
