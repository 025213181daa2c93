package jinja

import (
	"strings"
	"testing"
)

// FuzzJinjaTagNewlines checks the line-break fix for Jinja tags: no
// panic, lines kept, and only blanks added.
func FuzzJinjaTagNewlines(f *testing.F) {
	for _, s := range []string{"{{ x\n|\nupper }}", "{% raw %}{{ a\nb }}{% endraw %}", "{# a\nb #}{{ 'a\nb' }}", "{%- set a = b\n-%}", "{{ \"\\\"\n\" }}", "{{", "{#"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		out := string(jinjaTagNewlines([]byte(src)))
		if strings.Count(out, "\n") != strings.Count(src, "\n") {
			t.Fatalf("line count changed: %q -> %q", src, out)
		}
		if strings.ReplaceAll(out, "\n ", "\n") != strings.ReplaceAll(src, "\n ", "\n") && len(out) != len(src) {
			t.Fatalf("more than blanks added: %q -> %q", src, out)
		}
	})
}

// FuzzJinjaTagLiterals checks the rewrite of adjacent literals,
// backslash-newlines and trailing commas: no panic, lines kept, and the
// text outside tags untouched.
func FuzzJinjaTagLiterals(f *testing.F) {
	for _, s := range []string{"{{ 'a'\n 'b' }}", "{{ 'ab\\\ncd' }}", "{{ m(1,\n) }}", "{{ {'a': 1,} }}", "{{ (1,) }}", "{{ 'a", "{{ 'a' '", "x{% raw %}{{ 'a' 'b' }}{% endraw %}", "{# 'a' 'b' #}", "{{ \"\\\r\n\" }}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		out := string(jinjaSource([]byte(src)))
		if strings.Count(out, "\n") != strings.Count(src, "\n") {
			t.Fatalf("line count changed: %q -> %q", src, out)
		}
		if !strings.Contains(src, "{") && out != src {
			t.Fatalf("text without tags changed: %q -> %q", src, out)
		}
	})
}
