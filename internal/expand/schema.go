package expand

import (
	"time"

	"context"
	"fmt"

	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/expand/schema"
)

// Schema validates and defaults one template's properties.
type Schema interface {
	// Apply returns props with defaults filled in, or an error listing
	// every violation with its property path. It must not modify props.
	Apply(props map[string]any) (map[string]any, error)
}

// SchemaCompiler parses a schema file (`<template file>.schema`); file
// names it in errors. Compiled schemas are cached by content.
type SchemaCompiler func(data []byte, file string) (Schema, error)

// unknownNamer is a Schema that can name the properties it does not
// define (schema.Schema does).
type unknownNamer interface {
	Unknown(props map[string]any) []string
}

// schemaWarner is a Schema with warnings about its own text (schema.Schema
// names its repeated mapping keys).
type schemaWarner interface {
	Warnings() []string
}

// defaulter is a Schema that can fill in defaults without validating
// (schema.Schema can).
type defaulter interface {
	Defaults(props map[string]any) map[string]any
}

// SkipSchemaHint says, in every schema violation's error, how to expand
// regardless: published templates exist whose schema and code disagree.
// It names dm's flag; registryd's JSON API answers with SkipSchemaHintAPI
// in its place.
const SkipSchemaHint = "--skip-schema-validation expands without validating"

// SkipSchemaHintAPI is SkipSchemaHint in the words of POST /v1/expand.
const SkipSchemaHintAPI = `"skip_schema_validation": true expands without validating`

// applySchema validates and defaults props with the schema file of b, and
// lists the properties it does not define and the schema's own warnings.
// With skip, defaults are applied and a violation is returned as
// violations instead of failing.
func (x *Expander) applySchema(ctx context.Context, b *bundle, file string, props map[string]any, skip bool) (out map[string]any, unknown, warns []string, violations, err error) {
	v, err := x.cached("schema:"+b.key+":"+file, func() (any, error) {
		data, ok := b.files[file]
		if !ok {
			return nil, fmt.Errorf("schema %s is missing: %w", file, derrors.NotFound)
		}
		s, err := x.opts.Schemas(data, file)
		if err != nil {
			return nil, fmt.Errorf("schema %s: %w", file, err)
		}
		return s, nil
	})
	if err != nil {
		return nil, nil, nil, nil, err
	}
	out, err = v.(Schema).Apply(props)
	if err != nil {
		if !skip {
			return nil, nil, nil, nil, classify(fmt.Errorf("properties do not match the schema: %w; %s", err, SkipSchemaHint))
		}
		violations = err
		out = props
		if d, ok := v.(defaulter); ok {
			out = d.Defaults(props)
		}
	}
	if u, ok := v.(unknownNamer); ok {
		unknown = u.Unknown(props)
	}
	if w, ok := v.(schemaWarner); ok {
		warns = w.Warnings()
	}
	return out, unknown, warns, violations, nil
}

// schemaCompiler compiles with the schema package: JSON Schema (draft 4
// unless the schema says otherwise) with DM's type names and Python's
// patterns, each match bounded by regexTimeout.
func schemaCompiler(regexTimeout time.Duration) SchemaCompiler {
	return func(data []byte, file string) (Schema, error) {
		s, err := schema.ParseWith(data, file, schema.Options{RegexTimeout: regexTimeout})
		if err != nil {
			return nil, err
		}
		return s, nil
	}
}
