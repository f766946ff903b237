//go:build unix

package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// buildQSF builds the qsf binary into a temporary folder.
func buildQSF(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "qsf")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// interruptMidWrite starts qsf with args, waits until a temporary file
// appears in dir and grows, sends SIGINT and checks that the command
// exits with status 130 leaving nothing in dir but the files in keep.
func interruptMidWrite(t *testing.T, bin, dir string, keep map[string]bool, args ...string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var first int64 = -1
	deadline := time.After(60 * time.Second)
wait:
	for {
		select {
		case err := <-done:
			t.Fatalf("qsf %s ended before it was interrupted (%v): %s", args[0], err, stderr.String())
		case <-deadline:
			cmd.Process.Kill()
			t.Fatalf("qsf %s: no growing temporary file after 60 s", args[0])
		case <-time.After(20 * time.Millisecond):
		}
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if keep[e.Name()] || !strings.HasSuffix(e.Name(), ".tmp") {
				continue
			}
			info, err := e.Info()
			if err != nil {
				continue
			}
			if first < 0 {
				first = info.Size()
			} else if info.Size() > first {
				break wait
			}
		}
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err := <-done
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 130 {
		t.Errorf("qsf %s after SIGINT: %v, want exit status 130; stderr: %s", args[0], err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "interrupted") {
		t.Errorf("stderr does not say interrupted: %q", stderr.String())
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if !keep[e.Name()] {
			t.Errorf("qsf %s left %s behind", args[0], e.Name())
		}
	}
}

func TestInterruptLeavesNoFile(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and writes a few hundred MiB")
	}
	bin := buildQSF(t)
	t.Run("synth", func(t *testing.T) {
		dir := t.TempDir()
		interruptMidWrite(t, bin, dir, nil,
			"synth", "--shape", "12L-768", "--type", "f32", "--threads", "1", "-o", filepath.Join(dir, "big.gguf"))
	})
	t.Run("convert", func(t *testing.T) {
		dir := t.TempDir()
		in := filepath.Join(dir, "in.gguf")
		var out, errb bytes.Buffer
		if code := runMain([]string{"synth", "--shape", "12L-768", "--type", "q8_0", "-o", in}, &out, &errb); code != 0 {
			t.Fatalf("synth: exit %d: %s", code, errb.String())
		}
		interruptMidWrite(t, bin, dir, map[string]bool{"in.gguf": true},
			"convert", in, filepath.Join(dir, "out.qsf"), "--type", "Q4_K", "--threads", "1")
	})
}
