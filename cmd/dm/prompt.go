package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/term"

	"github.com/dmhq/dm/internal/api"
	"github.com/dmhq/dm/internal/deploy/kube"
	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/expand/schema"
	"github.com/dmhq/dm/internal/gcp"
)

// Bounds of one answer: its length, and the attempts at a valid one.
const (
	maxAnswer   = 1 << 20
	maxAttempts = 5
)

// refProperties prepares the properties of a template reference: values
// --properties gave that its schema types as strings keep their text
// (schema.KeepText), and with ask, the required properties without a value or
// default are asked for on a terminal or listed in one error.
func (g *globals) refProperties(ctx context.Context, b api.Backend, ref string, props map[string]any, text map[string]string, ask bool, stdin io.Reader) (map[string]any, error) {
	if len(text) == 0 && !ask {
		return props, nil
	}
	tv, err := b.TemplateInputs(ctx, ref, g.registry)
	if err != nil {
		return nil, err
	}
	schema.KeepText(tv.PropertyTypes(), props, text)
	if !ask {
		return props, nil
	}
	inputs, err := api.MissingInputs(ctx, b, tv, props)
	if err != nil || len(inputs) == 0 {
		return props, err
	}
	if props == nil {
		props = map[string]any{}
	}
	what, how := "property", "--properties KEY=VALUE or --values FILE"
	if tv.Language == "openshift" && tv.SchemaContent == "" {
		what = "parameter"
	}
	err = g.ask(inputs, what, how, stdin, func(name string, v any) { props[name] = v })
	return props, err
}

// ask obtains every input: on a terminal (standard input one, and no
// --no-prompt) it asks for each in turn, showing its description, type and
// choices, reading secrets without echo, and asking again while the
// answer does not fit the schema. Otherwise it fails with one error that
// lists them all, so that a script learns every one at once.
func (g *globals) ask(inputs []schema.Input, what, how string, stdin io.Reader, set func(name string, v any)) error {
	if len(inputs) == 0 {
		return nil
	}
	tty, ok := stdin.(*os.File)
	if g.noPrompt || !ok || !term.IsTerminal(int(tty.Fd())) {
		return &schema.MissingError{What: what, How: how, Inputs: inputs}
	}
	fmt.Fprintf(g.stderr, "%s without a value:\n", schema.Count(len(inputs), what))
	for _, in := range inputs {
		fmt.Fprintf(g.stderr, "\n%s\n", in.Describe())
		var err error
		for attempt := 1; ; attempt++ {
			fmt.Fprintf(g.stderr, "%s: ", in.Name)
			var line string
			if in.Secret {
				var b []byte
				b, err = term.ReadPassword(int(tty.Fd()))
				fmt.Fprintln(g.stderr) // the newline the terminal did not echo
				line = string(b)
			} else {
				line, err = readLine(tty)
			}
			if err != nil {
				return fmt.Errorf("reading %s: %w", in.Name, err)
			}
			v, perr := in.Parse(line)
			if perr == nil {
				set(in.Name, v)
				break
			}
			if attempt == maxAttempts {
				return fmt.Errorf("%s: %w (after %d attempts)", in.Name, perr, maxAttempts)
			}
			fmt.Fprintf(g.stderr, "  %v; try again\n", perr)
		}
	}
	fmt.Fprintln(g.stderr)
	return nil
}

// readLine reads one line from the terminal a byte at a time, so that
// nothing past it is taken from a later answer (a hidden one reads the
// descriptor directly).
func readLine(f *os.File) (string, error) {
	var b strings.Builder
	buf := make([]byte, 1)
	for b.Len() <= maxAnswer {
		n, err := f.Read(buf)
		if n == 1 {
			if buf[0] == '\n' {
				return strings.TrimSuffix(b.String(), "\r"), nil
			}
			b.WriteByte(buf[0])
			continue
		}
		if errors.Is(err, io.EOF) {
			return "", fmt.Errorf("input ended: %w", io.ErrUnexpectedEOF)
		}
		if err != nil {
			return "", err
		}
	}
	return "", fmt.Errorf("answer longer than %d bytes", maxAnswer)
}

// configProperties asks for (or lists) the required properties without a
// value or default of the templates a configuration's resources
// instantiate; answers join props keyed by resource name, as --values
// keys a configuration's, and are returned.
func (g *globals) configProperties(ctx context.Context, b api.Backend, req *api.ExpandRequest, props map[string]any, stdin io.Reader) (map[string]any, error) {
	missing := api.MissingConfigInputs(ctx, b, g.registry, req, props)
	if len(missing) == 0 {
		return props, nil
	}
	inputs := make([]schema.Input, len(missing))
	owner := map[string][2]string{}
	for i, m := range missing {
		inputs[i] = m.Input
		owner[m.Name] = [2]string{m.Resource, m.Property}
	}
	if props == nil {
		props = map[string]any{}
	}
	err := g.ask(inputs, "property", "--values FILE keyed by resource name", stdin, func(name string, v any) {
		o := owner[name]
		rp, _ := props[o[0]].(map[string]any)
		if rp == nil {
			rp = map[string]any{}
			props[o[0]] = rp
		}
		rp[o[1]] = v
	})
	return props, err
}

// confirmDelete asks on a terminal whether to delete deployment name
// although deleting objs deletes their Google Cloud resources, listing
// them, as gcloud deployment-manager deployments delete asked; without a
// terminal (or with --no-prompt) it refuses, naming them and the flags
// that decide.
func (g *globals) confirmDelete(name string, objs []kube.ObjectRef, stdin io.Reader) error {
	list := make([]string, len(objs))
	for i, o := range objs {
		list[i] = "  " + o.String()
	}
	what := fmt.Sprintf("deleting deployment %s deletes the Google Cloud resources of %s (Config Connector deletes a resource with its object unless the object carries %s: abandon):\n%s",
		name, plural(len(objs), "Config Connector object", "Config Connector objects"), gcp.DeletionPolicyAnnotation, strings.Join(list, "\n"))
	tty, ok := stdin.(*os.File)
	if g.noPrompt || !ok || !term.IsTerminal(int(tty.Fd())) {
		return derrors.Errorf(derrors.InvalidArgument, "%s\nnothing was deleted: give --deletion-policy abandon to leave the resources (dm stops managing them), or --deletion-policy delete or --yes to delete them", what)
	}
	fmt.Fprintf(g.stderr, "%s\nDelete them? (y/N) ", what)
	line, err := readLine(tty)
	if err != nil {
		return fmt.Errorf("reading the answer: %w", err)
	}
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return nil
	}
	return derrors.Errorf(derrors.InvalidArgument, "deleting deployment %s: not confirmed; nothing was deleted (--deletion-policy abandon leaves the Google Cloud resources)", name)
}
