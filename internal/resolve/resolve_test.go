package resolve_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/index"
	"github.com/dmhq/dm/internal/index/indextest"
	"github.com/dmhq/dm/internal/resolve"
)

func registry(name string, files map[string]string) *index.Registry {
	r := &index.Registry{Name: name}
	r.Install(index.Build(name, indextest.Tree(files), []byte(files[index.MetadataFile])))
	return r
}

func testResolver() *resolve.Resolver {
	files := map[string]string{}
	add := func(dir, file string) {
		files[dir+"/"+file] = dir
		files[dir+"/example.yaml"] = "resources: []"
	}
	for _, v := range []string{"v1.0.2", "v1.1.7", "v1.1.3", "v2.0.0", "v2.1.0-rc.1"} {
		add("t/"+v, "t.jinja")
	}
	for _, v := range []string{"v1", "v1.0.1", "v1.1"} {
		add("common/web/"+v, "web.gotmpl")
	}
	add("dup/v1", "dup.py")
	add("dup/v1.0.0", "dup.py")
	add("dup2/v1", "dup2.py")
	add("dup2/v1.0.0", "dup2.py")
	add("dup2/v1.0.3", "dup2.py")
	add("pre/v0.1.0-alpha", "pre.jinja")
	files["stacks/apps/gb/v1.0.0/gb.jinja"] = "gb"
	files["registry.yaml"] = "collections:\n  apps: stacks/apps\n"
	acme := registry("github.com/acme/templates", files)
	other := registry("github.com/other/repo", map[string]string{"t/v3.0.0/t.py": "x", "t/v3.0.0/example.yaml": ""})
	def, _ := resolve.ParseRegistry("acme/templates")
	return resolve.New(def, acme, other)
}

func TestResolve(t *testing.T) {
	r := testResolver()
	ctx := context.Background()
	tests := []struct {
		ref, def, want string
	}{
		{"t:v1", "", "github.com/acme/templates/t:v1.0.2"},
		{"t:v1.0", "", "github.com/acme/templates/t:v1.0.2"},
		{"t:v1.1", "", "github.com/acme/templates/t:v1.1.7"},
		{"t:v1.1.3", "", "github.com/acme/templates/t:v1.1.7"},
		{"t:v1.1.7", "", "github.com/acme/templates/t:v1.1.7"},
		{"t", "", "github.com/acme/templates/t:v2.0.0"},
		{"t:v2", "", "github.com/acme/templates/t:v2.0.0"},
		{"t:v2.1.0-rc.1", "", "github.com/acme/templates/t:v2.1.0-rc.1"},
		{"github.com/other/repo/t:v3", "", "github.com/other/repo/t:v3.0.0"},
		{"common/web:v1", "", "github.com/acme/templates/common/web:v1.0.1"},
		{"web:v1.1", "acme/templates/common", "github.com/acme/templates/common/web:v1.1.0"},
		{"apps/gb:v1", "", "github.com/acme/templates/apps/gb:v1.0.0"},
		{"gb:v1", "acme/templates/apps", "github.com/acme/templates/apps/gb:v1.0.0"},
		{"t:v3", "other/repo", "github.com/other/repo/t:v3.0.0"},
		{"dup2:v1.0", "", "github.com/acme/templates/dup2:v1.0.3"}, // a duplicate that is not chosen does not matter
		{"https://raw.githubusercontent.com/acme/templates/main/common/web/v1.1/web.gotmpl", "", "github.com/acme/templates/common/web:v1.1.0"},
	}
	for _, tt := range tests {
		t.Run(tt.ref+" in "+tt.def, func(t *testing.T) {
			def := r.Default
			if tt.def != "" {
				def, _ = resolve.ParseRegistry(tt.def)
			}
			res, err := r.ResolveIn(ctx, tt.ref, def)
			if err != nil {
				t.Fatal(err)
			}
			if res.Resolved() != tt.want || res.Ref.String() != tt.want {
				t.Errorf("resolved %q (ref %q), want %q", res.Resolved(), res.Ref.String(), tt.want)
			}
		})
	}
}

func TestResolveNote(t *testing.T) {
	res, err := testResolver().Resolve(context.Background(), "t")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Note, "chose v2.0.0") {
		t.Errorf("note = %q", res.Note)
	}
}

func TestResolveDigest(t *testing.T) {
	r := testResolver()
	ctx := context.Background()
	v117, err := r.Resolve(ctx, "t:v1.1.7")
	if err != nil {
		t.Fatal(err)
	}
	v113, _ := r.Resolve(ctx, "t:v1.1.3")
	_ = v113
	res, err := r.Resolve(ctx, "t:v1.1@"+v117.Digest)
	if err != nil || res.Resolved() != v117.Resolved() {
		t.Fatalf("pin to v1.1.7's digest: %v, %v", res, err)
	}
	// The digest of v1.1.3, which the reference allows but is not the highest.
	snap, _ := r.Registry(context.Background(), "github.com/acme/templates")
	tm, _ := snap.Snapshot().Template("", "t")
	var d113 string
	for _, v := range tm.Versions {
		if v.Semver == "v1.1.3" {
			d113 = v.Digest
		}
	}
	res, err = r.Resolve(ctx, "t:v1.1@"+d113)
	if err != nil || res.Version.Semver != "v1.1.3" {
		t.Fatalf("pin to v1.1.3's digest: %v, %v", res, err)
	}
	_, err = r.Resolve(ctx, "t:v1.0@"+d113)
	if !errors.Is(err, derrors.NotFound) || !strings.Contains(err.Error(), "that digest is github.com/acme/templates/t:v1.1.3") {
		t.Fatalf("pin outside the allowed versions: %v", err)
	}
}

func TestResolveErrors(t *testing.T) {
	r := testResolver()
	tests := []struct {
		ref      string
		sentinel error
		want     string
	}{
		{"t:v1.3", derrors.NotFound, "t:v1.3: v1.3 not found; available: v1.0.2, v1.1.3, v1.1.7, v2.0.0, v2.1.0-rc.1; try github.com/acme/templates/t:v1.1"},
		{"t:v3", derrors.NotFound, "v3 not found; available:"},
		{"t:v2.1", derrors.NotFound, "v2.1 not found"}, // a pre-release is never picked unless asked for
		{"pre", derrors.NotFound, "no stable version; available: v0.1.0-alpha"},
		{"dup:v1", derrors.Ambiguous, "version directories v1 and v1.0.0 of dup both hold v1.0.0"},
		{"nope:v1", derrors.NotFound, `no template "nope" in the root collection`},
		{"web:v1", derrors.NotFound, "did you mean github.com/acme/templates/common/web:v1?"},
		{"nocol/web:v1", derrors.NotFound, `has no collection "nocol"`},
		{"github.com/else/where/t:v1", derrors.NotFound, "registry github.com/else/where is not configured"},
		{"t:1", derrors.InvalidArgument, `version "1"`},
		{"T:v1", derrors.NotFound, `no template "T" in the root collection of github.com/acme/templates; did you mean github.com/acme/templates/t:v1?`},
		{"common/wbe:v1", derrors.NotFound, "did you mean github.com/acme/templates/common/web:v1?"},
		{"common/WEB", derrors.NotFound, "did you mean github.com/acme/templates/common/web?"},
		{"common/zebra:v1", derrors.NotFound, `no template "zebra" in collection "common" of github.com/acme/templates: not found`},
	}
	for _, tt := range tests {
		t.Run(tt.ref, func(t *testing.T) {
			_, err := r.Resolve(context.Background(), tt.ref)
			if !errors.Is(err, tt.sentinel) {
				t.Fatalf("error %v is not %v", err, tt.sentinel)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q lacks %q", err, tt.want)
			}
			// A suggestion comes last, after the cause, never followed by
			// the sentinel's text.
			msg := err.Error()
			if i := strings.LastIndex(msg, "; "); i > 0 && strings.ContainsAny(msg[i:], "?") || strings.Contains(msg, "; try ") || strings.Contains(msg, "; fix ") {
				if strings.HasSuffix(msg, ": "+tt.sentinel.Error()) {
					t.Errorf("error %q: the sentinel's text follows the suggestion", msg)
				}
			}
		})
	}
}

func TestResolveNoDefault(t *testing.T) {
	r := resolve.New(resolve.Registry{})
	_, err := r.Resolve(context.Background(), "t:v1")
	if !errors.Is(err, derrors.InvalidArgument) || !strings.Contains(err.Error(), "no default registry") {
		t.Fatalf("err = %v", err)
	}
}

// BenchmarkResolve resolves against a warm index of 10,000 template
// versions: the target is 1 µs/op.
func BenchmarkResolve(b *testing.B) {
	name := "github.com/acme/templates"
	reg := registry(name, indextest.Files(4, 250, 10))
	r := resolve.New(resolve.Registry{Host: "github.com", Owner: "acme", Repo: "templates"}, reg)
	ctx := context.Background()
	refs := []string{"t17:v1.1", "col2/t200:v1", "github.com/acme/templates/col3/t99:v1.0.3", "t5"}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := r.Resolve(ctx, refs[i%len(refs)]); err != nil {
			b.Fatal(err)
		}
	}
}

// TestPutRemove changes the set of registries while the resolver serves:
// a registry put resolves at once, a replaced one resolves to the new
// index, a removed one is not configured any more.
func TestPutRemove(t *testing.T) {
	r := testResolver()
	ctx := context.Background()
	const ref = "github.com/new/reg/x:v1"
	if _, err := r.Resolve(ctx, ref); !errors.Is(err, derrors.NotFound) {
		t.Fatalf("before Put: %v, want not found", err)
	}
	if old := r.Put(registry("github.com/new/reg", map[string]string{"x/v1.0.0/x.py": "a"})); old != nil {
		t.Fatalf("Put of a new registry replaced %s", old.Name)
	}
	res, err := r.Resolve(ctx, ref)
	if err != nil || res.Resolved() != "github.com/new/reg/x:v1.0.0" {
		t.Fatalf("after Put: %v, %v", res, err)
	}
	second := registry("github.com/new/reg", map[string]string{"x/v1.0.1/x.py": "b"})
	if old := r.Put(second); old == nil {
		t.Fatal("Put of a registry of the same name replaced nothing")
	}
	if res, err := r.Resolve(ctx, ref); err != nil || res.Resolved() != "github.com/new/reg/x:v1.0.1" {
		t.Fatalf("after the second Put: %v, %v", res, err)
	}
	if n := len(r.Registries()); n != 3 {
		t.Fatalf("%d registries, want 3", n)
	}
	if !r.Remove(second) || r.Remove(second) {
		t.Fatal("Remove did not remove exactly once")
	}
	if _, err := r.Resolve(ctx, ref); !errors.Is(err, derrors.NotFound) || !strings.Contains(err.Error(), "not configured") {
		t.Fatalf("after Remove: %v", err)
	}
}
