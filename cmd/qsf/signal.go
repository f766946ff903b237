package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// interruptContext returns a context cancelled by SIGINT (Ctrl-C) or
// SIGTERM, so a command can stop cleanly: remove its temporary files and
// exit with status 130. Call stop to restore the default handling.
func interruptContext() (ctx context.Context, stop context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}
