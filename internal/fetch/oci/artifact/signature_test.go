package artifact

import (
	"strings"
	"testing"
)

func TestSignatureManifest(t *testing.T) {
	subj := Descriptor{MediaType: ManifestMediaType, Digest: "sha256:" + strings.Repeat("a", 64), Size: 123}
	m, d, err := SignatureManifest(subj, []byte(`{"mediaType":"x"}`))
	if err != nil {
		t.Fatal(err)
	}
	if d != Digest(m) {
		t.Errorf("digest %s of %s", d, m)
	}
	layer, err := ParseSignatureManifest(m, subj.Digest)
	if err != nil || layer.MediaType != BundleMediaType || layer.Digest != Digest([]byte(`{"mediaType":"x"}`)) {
		t.Fatalf("ParseSignatureManifest = %+v, %v", layer, err)
	}
	if _, err := ParseSignatureManifest(m, "sha256:"+strings.Repeat("b", 64)); err == nil {
		t.Error("a referrer of another manifest parsed")
	}
	if _, _, err := SignatureManifest(Descriptor{Digest: "md5:x"}, nil); err == nil {
		t.Error("a subject without a sha256 digest")
	}
	idx := `{"schemaVersion":2,"mediaType":"` + IndexMediaType + `","manifests":[
	  {"mediaType":"` + ManifestMediaType + `","digest":"` + d + `","size":1,"artifactType":"` + BundleMediaType + `"},
	  {"mediaType":"` + ManifestMediaType + `","digest":"` + d + `","size":1,"artifactType":"` + EmptyMediaType + `"},
	  {"mediaType":"` + ManifestMediaType + `","digest":"` + d + `","size":1,"artifactType":"application/spdx+json"},
	  {"mediaType":"text/plain","digest":"` + d + `","size":1}]}`
	refs, err := ParseReferrers([]byte(idx))
	if err != nil || len(refs) != 2 {
		t.Fatalf("ParseReferrers = %+v, %v; want the bundle and the untyped one", refs, err)
	}
	for _, bad := range []string{`[]`, `{"schemaVersion":1}`, `{"schemaVersion":2,"mediaType":"x"}`} {
		if _, err := ParseReferrers([]byte(bad)); err == nil {
			t.Errorf("ParseReferrers(%s) passed", bad)
		}
	}
	if tag, err := FallbackTag(subj.Digest); err != nil || tag != "sha256-"+strings.Repeat("a", 64) {
		t.Errorf("FallbackTag = %s, %v", tag, err)
	}
}

// FuzzParseReferrers: no input panics, and what parses is bounded and of
// image manifests with sha256 digests.
func FuzzParseReferrers(f *testing.F) {
	f.Add([]byte(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa","size":3,"artifactType":"application/vnd.dev.sigstore.bundle.v0.3+json"}]}`))
	f.Add([]byte(`{"schemaVersion":2,"manifests":null}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		refs, err := ParseReferrers(b)
		if err != nil {
			return
		}
		if len(refs) > MaxReferrers {
			t.Fatalf("%d referrers, over %d", len(refs), MaxReferrers)
		}
		for _, r := range refs {
			if r.MediaType != ManifestMediaType || !ValidDigest(r.Digest) {
				t.Fatalf("referrer %+v", r)
			}
		}
	})
}

// FuzzParseSignatureManifest: no input panics, and a parsed one has one
// bounded bundle layer and refers to the subject asked for.
func FuzzParseSignatureManifest(f *testing.F) {
	subj := "sha256:" + strings.Repeat("a", 64)
	m, _, _ := SignatureManifest(Descriptor{MediaType: ManifestMediaType, Digest: subj, Size: 9}, []byte("{}"))
	f.Add(m)
	f.Add([]byte(`{"schemaVersion":2}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		l, err := ParseSignatureManifest(b, subj)
		if err != nil {
			return
		}
		if l.MediaType != BundleMediaType || !ValidDigest(l.Digest) || l.Size < 0 || l.Size > MaxBundleBytes {
			t.Fatalf("layer %+v", l)
		}
	})
}
