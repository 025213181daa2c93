package openshift

import (
	"context"
	"reflect"
	"testing"

	"github.com/dmhq/dm/internal/expand/engine"
)

func TestDescribe(t *testing.T) {
	src := `apiVersion: template.openshift.io/v1
kind: Template
metadata:
  name: db
  annotations:
    description: A database.
    tags: "database, sql"
parameters:
- name: NAME
  displayName: Service name
  value: db
- name: PASSWORD
  description: The password.
  generate: expression
  from: "[a-z]{8}"
  required: true
- name: REPLICAS
  type: int
objects: []
`
	read := func(string) ([]byte, error) { return []byte(src), nil }
	got, err := Describer{}.Describe(context.Background(), "db.yaml", read)
	if err != nil {
		t.Fatal(err)
	}
	want := &engine.Description{Title: "db", Description: "A database.", Tags: []string{"database", "sql"}, Required: []string{"PASSWORD"},
		Properties: []engine.Property{
			{Name: "NAME", Type: "string", Default: "db", Description: "Service name"},
			{Name: "PASSWORD", Type: "string", Default: "generated: [a-z]{8}", Description: "The password.", Required: true},
			{Name: "REPLICAS", Type: "int"},
		}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	if _, err := (Describer{}).Describe(context.Background(), "db.yaml", func(string) ([]byte, error) { return []byte("kind: Nope\n"), nil }); err == nil {
		t.Error("a document that is not a Template described without an error")
	}
}
