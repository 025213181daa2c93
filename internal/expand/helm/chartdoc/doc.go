// Package chartdoc describes a Helm chart from its files alone, for the
// catalog and the API: its title and description from Chart.yaml and its
// values table from values.schema.json or values.yaml and its comments.
// It imports no Helm library, so programs that do not render charts (dm)
// still describe them.
package chartdoc
