package helm

import "github.com/dmhq/dm/internal/expand/helm/chartdoc"

// Property is one row of a chart's values table (chartdoc.Property).
type Property = chartdoc.Property

// Properties returns a chart's values table; see chartdoc.Properties,
// which describes charts without linking Helm.
func Properties(valuesYAML, schemaJSON []byte) ([]Property, error) {
	return chartdoc.Properties(valuesYAML, schemaJSON)
}
