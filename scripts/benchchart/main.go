// Command benchchart compares `dm expand` of a Helm chart with `helm
// template` of the same chart as whole processes: the CPU time (user +
// system) of each run, dm's including the dm-helm it starts, read from the
// kernel's accounting of reaped children (getrusage RUSAGE_CHILDREN), so
// every process a run starts counts. `make bench-chart` runs it.
//
// The chart is internal/expand/helm/testdata/charts/thirty (30 objects),
// copied into a temporary registry as thirty/v1. The two commands run in
// turn, -pairs times after a warm-up of each, so that load on the machine
// falls on both alike; the figure to quote is the median of the paired
// ratios dm/helm, with their spread and the load average.
//
// With -a and -b it compares any two commands the same way instead (each
// split at spaces): make bench-convert times dm convert of a 100-resource
// Deployment Manager configuration against dm expand -o json of it.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

func main() {
	dm := flag.String("dm", "bin/dm", "the dm binary (dm-helm beside it)")
	helm := flag.String("helm", ".testenv/bin/helm", "the helm binary")
	chart := flag.String("chart", "internal/expand/helm/testdata/charts/thirty", "the chart directory")
	pairs := flag.Int("pairs", 15, "runs of each command, in turn (1 to 100)")
	a := flag.String("a", "", "a command to compare with -b instead of the chart's (split at spaces)")
	b := flag.String("b", "", "the yardstick of -a")
	flag.Parse()
	var err error
	if *a != "" || *b != "" {
		err = compare(strings.Fields(*a), strings.Fields(*b), label(*a), label(*b), *pairs)
	} else {
		err = run(*dm, *helm, *chart, *pairs)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchchart:", err)
		os.Exit(1)
	}
}

func run(dm, helm, chart string, pairs int) error {
	reg, err := os.MkdirTemp("", "benchchart")
	if err != nil {
		return err
	}
	defer os.RemoveAll(reg)
	dir := filepath.Join(reg, "thirty", "v1")
	if err := os.CopyFS(dir, os.DirFS(chart)); err != nil {
		return fmt.Errorf("copying the chart: %w", err)
	}
	dmCmd := []string{dm, "--registry-dir", "bench/charts=" + reg, "expand", "thirty:v1", "-o", "manifest"}
	helmCmd := []string{helm, "template", "thirty", dir}
	return compare(dmCmd, helmCmd, "dm expand", "helm template", pairs)
}

// compare runs a and b in turn, pairs times after a warm-up of each, and
// prints their CPU seconds and the paired ratios a/b.
func compare(a, b []string, nameA, nameB string, pairs int) error {
	if pairs < 1 || pairs > 100 {
		return fmt.Errorf("-pairs %d: want 1 to 100", pairs)
	}
	if len(a) == 0 || len(b) == 0 {
		return errors.New("give both -a and -b")
	}
	fmt.Printf("A: %s\nB: %s\nload average before: %s\n", strings.Join(a, " "), strings.Join(b, " "), loadavg())
	var ta, tb, ratios []float64
	for i := -1; i < pairs; i++ { // i = -1: the warm-up, not counted
		ca, err := cpu(a)
		if err != nil {
			return err
		}
		cb, err := cpu(b)
		if err != nil {
			return err
		}
		if i >= 0 {
			ta, tb, ratios = append(ta, ca), append(tb, cb), append(ratios, ca/cb)
		}
	}
	fmt.Printf("load average after: %s\n", loadavg())
	fmt.Printf("%d pairs, CPU seconds (user+sys)   min      median   max\n", pairs)
	row := func(name string, v []float64) {
		slices.Sort(v)
		fmt.Printf("  %-30s %8.3f %8.3f %8.3f\n", name, v[0], median(v), v[len(v)-1])
	}
	row("A "+nameA, ta)
	row("B "+nameB, tb)
	row("A/B (paired)", ratios)
	return nil
}

// cpu runs args (output read and dropped) and returns the CPU seconds it
// and every process it reaped used.
func cpu(args []string) (float64, error) {
	var before, after syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &before); err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return 0, fmt.Errorf("%s: %w\n%s", args[0], err, stderr.Bytes())
	}
	if out.Len() == 0 {
		return 0, errors.New(args[0] + " printed nothing")
	}
	if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &after); err != nil {
		return 0, err
	}
	sec := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return sec(after.Utime) - sec(before.Utime) + sec(after.Stime) - sec(before.Stime), nil
}

// label names a command by its program and first argument (dm convert).
func label(cmd string) string {
	f := strings.Fields(cmd)
	if len(f) == 0 {
		return ""
	}
	f[0] = filepath.Base(f[0])
	return strings.Join(f[:min(2, len(f))], " ")
}

func median(sorted []float64) float64 {
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
