// Command dm-helm renders and downloads Helm charts for dm. dm starts it
// on the first chart a command meets and talks to it over stdin and
// stdout (package helmproxy), so that Helm's start-up cost is paid only by
// commands that render charts. It is not meant to be run by hand.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/dmhq/dm/internal/expand/helmproxy"
	"github.com/dmhq/dm/internal/expand/helmserve"
)

func main() {
	if len(os.Args) > 1 {
		fmt.Fprintln(os.Stderr, "dm-helm renders Helm charts for dm, which starts it; it takes no arguments")
		os.Exit(2)
	}
	// Charts are other people's code: bound what one may take.
	for _, p := range helmproxy.ApplyLimits(helmproxy.DefaultMaxMemory) {
		fmt.Fprintln(os.Stderr, "dm-helm: warning:", p)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := helmproxy.Serve(ctx, os.Stdin, os.Stdout, &helmserve.Handler{}, 0); err != nil {
		fmt.Fprintln(os.Stderr, "dm-helm:", err)
		os.Exit(1)
	}
}
