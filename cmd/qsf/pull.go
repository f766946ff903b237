package main

import (
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/qsf-llm/qsf/internal/download"
)

// modelsDir returns the local model folder: $QSF_MODELS, or qsf/models in
// the user cache folder.
func modelsDir() (string, error) {
	if d := os.Getenv("QSF_MODELS"); d != "" {
		return d, nil
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no model folder: set QSF_MODELS (%w)", err)
	}
	return filepath.Join(cache, "qsf", "models"), nil
}

// resolveModel returns the file -m names: the path itself when it exists,
// otherwise, for a bare name, NAME, NAME.gguf or NAME.qsf in the model
// folder; the path unchanged when none exists (opening it gives the
// error).
func resolveModel(name string) string {
	if _, err := os.Stat(name); err == nil || strings.ContainsAny(name, `/\`) {
		return name
	}
	dir, err := modelsDir()
	if err != nil {
		return name
	}
	for _, ext := range []string{"", ".gguf", ".qsf"} {
		p := filepath.Join(dir, name+ext)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			return p
		}
	}
	return name
}

// hfURL turns hf://OWNER/REPO/PATH into the Hugging Face download URL of
// PATH at revision rev, on $HF_ENDPOINT (default https://huggingface.co).
func hfURL(ref, rev string) (string, error) {
	rest, _ := strings.CutPrefix(ref, "hf://")
	parts := strings.SplitN(rest, "/", 3)
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		return "", usagef("%q: want hf://OWNER/REPO/FILE", ref)
	}
	endpoint := strings.TrimSuffix(os.Getenv("HF_ENDPOINT"), "/")
	if endpoint == "" {
		endpoint = "https://huggingface.co"
	}
	return endpoint + "/" + parts[0] + "/" + parts[1] + "/resolve/" + url.PathEscape(rev) + "/" + parts[2], nil
}

func cmdPull(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("pull", "URL|hf://OWNER/REPO/FILE.gguf [-o DIR]", stderr)
	out := fs.String("o", "", "folder to save the model in (default: $QSF_MODELS, or qsf/models in the user cache folder)")
	sum := fs.String("sha256", "", "expected SHA-256 of the file (default: the one Hugging Face states, if any)")
	rev := fs.String("revision", "main", "hf://: branch, tag or commit")
	retries := fs.Int("retries", 5, "resume a cut transfer this many times")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("want one URL or hf://OWNER/REPO/FILE")
	}
	src := pos[0]
	if strings.HasPrefix(src, "hf://") {
		if src, err = hfURL(src, *rev); err != nil {
			return err
		}
	}
	u, err := url.Parse(src)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return usagef("%q: want an http(s) URL or hf://OWNER/REPO/FILE", pos[0])
	}
	name := path.Base(u.Path)
	if name == "." || name == "/" || name == ".." || strings.HasPrefix(name, ".") {
		return usagef("%q names no file", pos[0])
	}
	dir := *out
	if dir == "" {
		if dir, err = modelsDir(); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return err
	}
	dst := filepath.Join(dir, name)
	if _, err := os.Stat(dst); err == nil {
		fmt.Fprintf(stdout, "%s is already there\n", dst)
		return nil
	}
	ctx, stop := interruptContext()
	defer stop()
	opts := download.Options{SHA256: strings.ToLower(*sum), Retries: *retries}
	if isTerminal(stderr) {
		opts.Progress = downloadBar(stderr, name)
	}
	res, err := download.File(ctx, src, dst, opts)
	if opts.Progress != nil {
		fmt.Fprintln(stderr)
	}
	if err != nil {
		if errors.Is(err, download.ErrChecksum) {
			return err
		}
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		if _, serr := os.Stat(download.PartName(dst)); serr == nil {
			return fmt.Errorf("%w (the partial file is kept; run the same command to resume)", err)
		}
		return err
	}
	check := "not verified: no checksum given or stated by the server"
	if res.Verified {
		check = "verified"
	}
	fmt.Fprintf(stdout, "saved %s (%s), sha256 %s %s\n", dst, mib(res.Size), res.SHA256, check)
	fmt.Fprintf(stdout, "run it with: qsf run -m %s -p \"...\"\n", strings.TrimSuffix(strings.TrimSuffix(name, ".gguf"), ".qsf"))
	return nil
}

// downloadBar returns a Progress function drawing a bar on a terminal.
func downloadBar(w io.Writer, name string) func(done, total int64) {
	start := time.Now()
	var last time.Time
	return func(done, total int64) {
		now := time.Now()
		if now.Sub(last) < 100*time.Millisecond && done != total {
			return
		}
		last = now
		speed := float64(done) / (1 << 20) / max(now.Sub(start).Seconds(), 1e-3)
		if total <= 0 {
			fmt.Fprintf(w, "\r\x1b[K%s: %s (%.1f MiB/s)", name, mib(done), speed)
			return
		}
		const width = 30
		fill := int(int64(width) * done / total)
		fmt.Fprintf(w, "\r\x1b[K%s [%s%s] %3d%% of %s (%.1f MiB/s)", name, strings.Repeat("#", fill), strings.Repeat(".", width-fill),
			100*done/total, mib(total), speed)
	}
}

func cmdList(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("list", "[--dir DIR]", stderr)
	dirFlag := fs.String("dir", "", "model folder (default: $QSF_MODELS, or qsf/models in the user cache folder)")
	if _, err := parse(fs, args); err != nil {
		return err
	}
	dir := *dirFlag
	if dir == "" {
		var err error
		if dir, err = modelsDir(); err != nil {
			return err
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	fmt.Fprintf(stdout, "models in %s:\n", dir)
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSIZE\tMODIFIED")
	n := 0
	for _, e := range entries {
		ext := filepath.Ext(e.Name())
		if !e.Type().IsRegular() || strings.HasPrefix(e.Name(), ".") || !slices.Contains([]string{".gguf", ".qsf"}, ext) {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", strings.TrimSuffix(e.Name(), ext), mib(info.Size()), info.ModTime().Format("2006-01-02 15:04"))
		n++
	}
	tw.Flush()
	if n == 0 {
		fmt.Fprintln(stdout, "(none: qsf pull URL|hf://OWNER/REPO/FILE.gguf downloads one)")
	}
	return nil
}
