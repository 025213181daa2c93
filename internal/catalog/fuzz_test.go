package catalog

import (
	"net/url"
	"strings"
	"testing"
)

// FuzzForm: any submitted form types into properties or errors next to
// fields, never a panic; and the diff of any two texts replays to the
// second.
func FuzzForm(f *testing.F) {
	f.Add("replicas=3&labels.tier=web", "a\nb\n", "a\nc\n")
	f.Add("a.b=1&a=2&.x=&y..z=3", "", "x")
	f.Add("ports=%5B80%2C443%5D&on=true", "1\n2\n3\n", "3\n2\n1\n")
	fields := formFields()
	f.Fuzz(func(t *testing.T, form, a, b string) {
		vals, err := url.ParseQuery(form)
		if err != nil {
			return
		}
		st := &previewState{values: map[string]string{}, fieldErrors: map[string]string{}}
		props, ok := formProperties(fields, vals, st)
		if ok && len(st.fieldErrors) > 0 {
			t.Errorf("ok with field errors %v", st.fieldErrors)
		}
		if !ok && len(st.fieldErrors) == 0 {
			t.Errorf("not ok without a field error (%v)", props)
		}
		lines, _ := unified(a, b, 1<<20)
		var got []string
		for _, l := range lines {
			if l.Kind == " " || l.Kind == "+" {
				got = append(got, l.Text)
			}
		}
		if strings.IndexByte(a, 0) < 0 && strings.IndexByte(b, 0) < 0 && a != b {
			if want := splitLines(b); strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("diff of %q and %q replays to %q", a, b, got)
			}
		}
	})
}
