package model

import (
	"fmt"
	"os"
	"testing"

	"github.com/qsf-llm/qsf/kernels"
)

// TestMain applies QSF_KERNEL to the package functions' default tier, so
// that CI can run this package's tests under each tier; the package itself
// never reads the environment.
func TestMain(m *testing.M) {
	if name := os.Getenv("QSF_KERNEL"); name != "" {
		if err := kernels.SetTier(name); err != nil {
			fmt.Fprintf(os.Stderr, "QSF_KERNEL=%s: %v\n", name, err)
			os.Exit(2)
		}
	}
	os.Exit(m.Run())
}
