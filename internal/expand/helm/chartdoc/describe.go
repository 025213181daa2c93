package chartdoc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"

	yaml3 "go.yaml.in/yaml/v3"

	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/expand/engine"
)

// Describer is the helm language's engine.Describer.
type Describer struct{}

var _ engine.Describer = Describer{}

// Describe describes the chart whose Chart.yaml is file: its name (and
// version) as the title, its description and keywords, and its values
// table (Properties), each value's default from values.yaml. A chart's
// values are never required by dm; values.schema.json's required list is
// Helm's to enforce when rendering.
func (Describer) Describe(ctx context.Context, file string, read func(name string) ([]byte, error)) (*engine.Description, error) {
	dir := path.Dir(file)
	opt := func(name string) ([]byte, error) {
		b, err := read(path.Join(dir, name))
		if errors.Is(err, derrors.NotFound) {
			return nil, nil
		}
		return b, err
	}
	meta, err := read(file)
	if err != nil {
		return nil, err
	}
	var md struct {
		Name        string   `yaml:"name"`
		Description string   `yaml:"description"`
		Keywords    []string `yaml:"keywords"`
	}
	if err := yaml3.Unmarshal(meta, &md); err != nil {
		return nil, invalid(fmt.Errorf("%s: %w", file, err))
	}
	d := &engine.Description{Title: md.Name, Description: md.Description, Tags: md.Keywords}
	values, err := opt("values.yaml")
	if err != nil {
		return d, err
	}
	sch, err := opt("values.schema.json")
	if err != nil {
		return d, err
	}
	props, err := Properties(values, sch)
	for _, p := range props {
		var def any
		if p.Default != "" {
			_ = json.Unmarshal([]byte(p.Default), &def) // Properties wrote it as JSON
		}
		d.Properties = append(d.Properties, engine.Property{Name: p.Name, Type: p.Type, Default: def, Description: p.Description})
	}
	return d, err
}

func invalid(err error) error { return fmt.Errorf("%w: %w", err, derrors.InvalidArgument) }
