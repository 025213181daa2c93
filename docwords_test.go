package dm_test

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/dmhq/dm/internal/gcp"
)

// trackerWordsRE matches the words of the project's own tracker, which say
// nothing to a reader of README or docs/: "issue 29", "§3", "seed 000".
// Links to other projects' issues (kro#519, .../issues/123) are references
// a reader can follow, and stay.
var trackerWordsRE = regexp.MustCompile(`(?i)\bissues? #?\d+\b|§|\bseeds? 0\d\d\b`)

// TestDocWords: README and docs/ speak of the user's task, not of the
// tracker that produced them.
func TestDocWords(t *testing.T) {
	for _, file := range docFiles(t) {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(data), "\n") {
			for _, m := range trackerWordsRE.FindAllStringIndex(line, -1) {
				if before := line[:m[0]]; strings.HasSuffix(before, "/") {
					continue // a URL's path: github.com/o/r/issues/12
				}
				t.Errorf("%s:%d: %q is the tracker's word, not the reader's: say what it is about", file, i+1, line[m[0]:m[1]])
			}
		}
	}
}

// spellingsRE finds README's count of the Google Cloud type spellings dm
// maps: "412 spellings of 88 Google Cloud kinds".
var spellingsRE = regexp.MustCompile(`(\d[\d,]*) spellings of (\d+) (?:Google Cloud )?kinds`)

// TestDocFigures checks the figures README and docs/ state that a command
// can count: the type spellings `dm convert --list-types` prints.
func TestDocFigures(t *testing.T) {
	types := gcp.Types()
	kinds := map[string]bool{}
	for _, ty := range types {
		kinds[ty.Kind] = true
	}
	found := 0
	for _, file := range docFiles(t) {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range spellingsRE.FindAllStringSubmatch(string(data), -1) {
			found++
			n, _ := strconv.Atoi(strings.ReplaceAll(m[1], ",", ""))
			k, _ := strconv.Atoi(m[2])
			if n != len(types) || k != len(kinds) {
				t.Errorf("%s says %q; dm convert --list-types lists %d spellings of %d kinds", file, m[0], len(types), len(kinds))
			}
		}
	}
	if found == 0 {
		t.Errorf("README states no count of type spellings: the check has nothing to check")
	}
}
