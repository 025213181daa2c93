package openshift

import (
	"errors"
	"maps"
	"strings"
	"testing"

	"github.com/dmhq/dm/internal/derrors"
)

func TestParseParamFlags(t *testing.T) {
	tests := []struct {
		args    []string
		want    map[string]string
		wantErr string
	}{
		{args: nil, want: map[string]string{}},
		{args: []string{"A=1", "B=x=y", "C="}, want: map[string]string{"A": "1", "B": "x=y", "C": ""}},
		{args: []string{"A"}, wantErr: "want NAME=VALUE"},
		{args: []string{"=x"}, wantErr: "name is empty"},
		{args: []string{"A B=x"}, wantErr: "only letters"},
		{args: []string{"A=1", "A=2"}, wantErr: "A given more than once"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, ","), func(t *testing.T) {
			got, err := ParseParamFlags(tt.args)
			check(t, got, err, tt.want, tt.wantErr)
		})
	}
}

func TestParseParamFile(t *testing.T) {
	tests := []struct {
		name    string
		src     string
		want    map[string]string
		wantErr string
	}{
		{name: "empty", src: "", want: map[string]string{}},
		{name: "env", src: "# comment\nA=1\n\n  B=two words\r\nC=\"quoted\"\nD=x=y\n", want: map[string]string{"A": "1", "B": "two words", "C": `"quoted"`, "D": "x=y"}},
		{name: "env duplicate", src: "A=1\nA=2\n", wantErr: "line 2: parameter A given more than once"},
		{name: "yaml", src: "A: 1\nB: two\nC: true\nD: 1.5\n", want: map[string]string{"A": "1", "B": "two", "C": "true", "D": "1.5"}},
		{name: "json", src: `{"A": "x"}`, want: map[string]string{"A": "x"}},
		{name: "yaml nested", src: "A: {b: c}\n", wantErr: "A: got an object, want a scalar"},
		{name: "yaml bad name", src: "a-b: 1\n", wantErr: "only letters"},
		{name: "neither", src: "just words\n", wantErr: "not KEY=VALUE lines nor a YAML mapping"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseParamFile([]byte(tt.src))
			check(t, got, err, tt.want, tt.wantErr)
		})
	}
}

func check(t *testing.T, got map[string]string, err error, want map[string]string, wantErr string) {
	t.Helper()
	if wantErr != "" {
		if err == nil || !strings.Contains(err.Error(), wantErr) || !errors.Is(err, derrors.InvalidArgument) {
			t.Fatalf("error = %v, want InvalidArgument containing %q", err, wantErr)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}
