// Package download fetches a file over HTTP into a local path: resumably
// (a partial download is kept beside the destination and continued with a
// Range request), checked against a SHA-256 digest, and renamed into place
// only when complete and verified.
package download

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// ErrChecksum is returned when the downloaded bytes do not have the
// expected SHA-256 digest; the partial file is removed.
var ErrChecksum = errors.New("download: sha256 mismatch")

// Options adjust File.
type Options struct {
	// SHA256 is the expected hex digest. When empty, the digest the
	// server states is used: Hugging Face's X-Linked-Etag header (on the
	// response or on a redirect leading to it) when it is a SHA-256.
	SHA256 string
	// Client makes the requests (http.DefaultClient when nil).
	Client *http.Client
	// Retries is how many times a transfer cut in the middle is resumed,
	// after a pause of 250 ms times the attempt, before File gives up
	// (keeping the partial file for a later call).
	Retries int
	// Progress, when not nil, is called as bytes arrive with the bytes
	// on disk so far and the total (-1 when unknown).
	Progress func(done, total int64)
}

// Result describes a completed download.
type Result struct {
	Path     string
	Size     int64
	SHA256   string // hex digest of the file
	Verified bool   // whether it was checked against an expected digest
	Resumed  bool   // whether a partial file or a cut transfer was continued
}

// PartName returns where File keeps the partial download of path.
func PartName(path string) string {
	dir, base := filepath.Split(path)
	return filepath.Join(dir, "."+base+".part")
}

// File downloads url to path. A partial file left by an earlier call
// (interrupted, or cut off after its retries) is continued with an HTTP
// Range request when the server supports them, and restarted otherwise.
// On ctx's cancellation or a network error the partial file is kept; on a
// checksum mismatch it is removed and the error wraps ErrChecksum.
func File(ctx context.Context, url, path string, opts Options) (*Result, error) {
	part := PartName(path)
	f, err := os.OpenFile(part, os.O_RDWR|os.O_CREATE, 0o666)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f) // the bytes from an earlier call
	if err != nil {
		return nil, err
	}
	res := &Result{Path: path, Resumed: n > 0}
	want := strings.ToLower(opts.SHA256)
	for attempt := 0; ; attempt++ {
		var stated string
		n, stated, err = fetch(ctx, opts, url, f, h, n)
		if want == "" {
			want = stated
		}
		if err == nil {
			break
		}
		if ctx.Err() != nil || attempt >= opts.Retries || errors.Is(err, errPermanent) {
			return nil, err
		}
		select { // a short pause before resuming
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Duration(attempt+1) * 250 * time.Millisecond):
		}
		res.Resumed = true
	}
	if err := f.Sync(); err != nil {
		return nil, err
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	res.Size, res.SHA256 = n, hex.EncodeToString(h.Sum(nil))
	if want != "" {
		if res.SHA256 != want {
			os.Remove(part)
			return nil, fmt.Errorf("%w: %s has sha256 %s, want %s (removed)", ErrChecksum, url, res.SHA256, want)
		}
		res.Verified = true
	}
	if err := os.Rename(part, path); err != nil {
		return nil, err
	}
	return res, nil
}

// errPermanent marks errors a retry cannot fix (an HTTP error status).
var errPermanent = errors.New("download: request failed")

// fetch makes one request for the bytes from offset n on and appends them
// to f (and h). It returns the new size and the digest the server states.
func fetch(ctx context.Context, opts Options, url string, f *os.File, h hash.Hash, n int64) (int64, string, error) {
	client := http.DefaultClient
	if opts.Client != nil {
		client = opts.Client
	}
	var stated string
	c := *client
	c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if s := linkedSHA256(req.Response.Header); s != "" {
			stated = s
		}
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		return nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return n, "", fmt.Errorf("%w: %w", errPermanent, err)
	}
	if n > 0 {
		req.Header.Set("Range", "bytes="+strconv.FormatInt(n, 10)+"-")
	}
	resp, err := c.Do(req)
	if err != nil {
		return n, stated, err
	}
	defer resp.Body.Close()
	if s := linkedSHA256(resp.Header); s != "" {
		stated = s
	}
	switch {
	case resp.StatusCode == http.StatusPartialContent && n > 0:
		if start := rangeStart(resp.Header.Get("Content-Range")); start != n {
			return n, stated, fmt.Errorf("%w: GET %s: asked for bytes from %d, got Content-Range %q", errPermanent, url, n, resp.Header.Get("Content-Range"))
		}
	case resp.StatusCode == http.StatusOK:
		if n > 0 { // no range support: start over
			if err := f.Truncate(0); err != nil {
				return n, stated, err
			}
			if _, err := f.Seek(0, io.SeekStart); err != nil {
				return n, stated, err
			}
			h.Reset()
			n = 0
		}
	case resp.StatusCode == http.StatusRequestedRangeNotSatisfiable && n > 0 && rangeTotal(resp.Header.Get("Content-Range")) == n:
		return n, stated, nil // the partial file is already complete
	default:
		return n, stated, fmt.Errorf("%w: GET %s: %s", errPermanent, url, resp.Status)
	}
	total := int64(-1)
	if resp.ContentLength >= 0 {
		total = n + resp.ContentLength
	}
	w := io.MultiWriter(f, h)
	buf := make([]byte, 256<<10)
	for {
		k, rerr := resp.Body.Read(buf)
		if k > 0 {
			if _, err := w.Write(buf[:k]); err != nil {
				return n, stated, err
			}
			n += int64(k)
			if opts.Progress != nil {
				opts.Progress(n, total)
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return n, stated, rerr
		}
	}
	if total >= 0 && n != total {
		return n, stated, fmt.Errorf("GET %s: %d bytes, want %d", url, n, total)
	}
	return n, stated, nil
}

// linkedSHA256 returns the SHA-256 a Hugging Face response states for an
// LFS file (X-Linked-Etag), or "".
func linkedSHA256(h http.Header) string {
	s := strings.TrimPrefix(h.Get("X-Linked-Etag"), "W/")
	s = strings.ToLower(strings.Trim(s, `"`))
	if len(s) != 64 {
		return ""
	}
	if _, err := hex.DecodeString(s); err != nil {
		return ""
	}
	return s
}

// rangeStart parses the first byte of "bytes START-END/TOTAL", or -1.
func rangeStart(cr string) int64 {
	s, ok := strings.CutPrefix(cr, "bytes ")
	if !ok {
		return -1
	}
	s, _, ok = strings.Cut(s, "-")
	if !ok {
		return -1
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return -1
	}
	return v
}

// rangeTotal parses TOTAL in "bytes */TOTAL" or "bytes A-B/TOTAL", or -1.
func rangeTotal(cr string) int64 {
	_, s, ok := strings.Cut(cr, "/")
	if !ok {
		return -1
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return -1
	}
	return v
}
