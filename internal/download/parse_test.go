package download

import (
	"fmt"
	"net/http"
	"testing"
)

// FuzzHeaders checks the Content-Range and X-Linked-Etag parsers on any
// input, and that well-formed values parse back.
func FuzzHeaders(f *testing.F) {
	f.Add("bytes 100-199/200", int64(5), int64(9))
	f.Add("bytes */42", int64(0), int64(0))
	f.Add(`W/"abc"`, int64(1), int64(1<<40))
	f.Fuzz(func(t *testing.T, s string, start, total int64) {
		rangeStart(s)
		rangeTotal(s)
		if got := linkedSHA256(http.Header{"X-Linked-Etag": {s}}); got != "" && len(got) != 64 {
			t.Fatalf("linkedSHA256(%q) = %q", s, got)
		}
		if start < 0 || total < 0 {
			return
		}
		cr := fmt.Sprintf("bytes %d-%d/%d", start, total, total)
		if rangeStart(cr) != start || rangeTotal(cr) != total {
			t.Fatalf("%q: start %d total %d", cr, rangeStart(cr), rangeTotal(cr))
		}
	})
}
