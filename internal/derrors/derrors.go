// Package derrors defines the sentinel errors that every layer of dm wraps
// with %w, so that the HTTP layer and the command line can map a failure to a
// status code or exit code in one place instead of guessing from its text.
package derrors

import (
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"unicode/utf8"
)

var (
	// NotFound means the requested registry, collection, template, version
	// or file does not exist.
	NotFound = errors.New("not found")
	// InvalidArgument means the input (a reference, a request, a
	// configuration) is malformed.
	InvalidArgument = errors.New("invalid argument")
	// Ambiguous means the input names more than one thing and dm will not
	// pick one, such as version directories v1 and v1.0.0 of one template.
	Ambiguous = errors.New("ambiguous")
	// Unavailable means an upstream (GitHub) could not be reached or refused
	// the request, for example because of a rate limit.
	Unavailable = errors.New("unavailable")
	// NotModified means a conditional request found nothing new.
	NotModified = errors.New("not modified")
	// Unauthorized means a write request lacked a valid token.
	Unauthorized = errors.New("unauthorized")
	// Forbidden means the request may not be made from where it came,
	// such as a cross-site form.
	Forbidden = errors.New("forbidden")
	// LimitExceeded means a configured limit (size, depth, steps, time) was
	// reached.
	LimitExceeded = errors.New("limit exceeded")
	// AlreadyExists means something that is only ever created once, such
	// as a revision of a deployment's history, already exists.
	AlreadyExists = errors.New("already exists")
	// Conflict means a write lost an optimistic-concurrency race: what it
	// was based on changed in the meantime.
	Conflict = errors.New("conflict")
	// VerificationFailed means a template version's signature did not
	// verify against its registry's policy, or it has none and the policy
	// requires one.
	VerificationFailed = errors.New("verification failed")
)

// HTTPStatus returns the HTTP status code that corresponds to err.
func HTTPStatus(err error) int {
	switch {
	case err == nil:
		return http.StatusOK
	case errors.Is(err, NotFound):
		return http.StatusNotFound
	case errors.Is(err, InvalidArgument):
		return http.StatusBadRequest
	case errors.Is(err, Ambiguous), errors.Is(err, AlreadyExists), errors.Is(err, Conflict):
		return http.StatusConflict
	case errors.Is(err, Unauthorized):
		return http.StatusUnauthorized
	case errors.Is(err, Forbidden):
		return http.StatusForbidden
	case errors.Is(err, LimitExceeded), errors.Is(err, VerificationFailed):
		return http.StatusUnprocessableEntity
	case errors.Is(err, Unavailable):
		return http.StatusServiceUnavailable
	default:
		return http.StatusInternalServerError
	}
}

// Errorf is fmt.Errorf whose result also matches kind (errors.Is) without
// kind's text. It is for messages that already say what went wrong and end
// with a suggestion, which a trailing ": not found" would turn around
// ("...; try redis:v1.1: not found").
func Errorf(kind error, format string, a ...any) error {
	return &kindError{err: fmt.Errorf(format, a...), kind: kind}
}

type kindError struct{ err, kind error }

func (e *kindError) Error() string   { return e.err.Error() }
func (e *kindError) Unwrap() []error { return []error{e.err, e.kind} }

// Near returns the candidates that differ from name only in case or by at
// most a third of its letters (edit distance, a transposition counting
// one: "ngnix" is near "nginx"), nearest first and at most three: the
// names a "did you mean" suggests.
func Near(name string, candidates []string) []string {
	type near struct {
		name string
		d    int
	}
	var found []near
	lower := strings.ToLower(name)
	for _, c := range candidates {
		if d := editDistance(lower, strings.ToLower(c)); d <= len(name)/3 {
			found = append(found, near{c, d})
		}
	}
	sort.Slice(found, func(i, j int) bool {
		if found[i].d != found[j].d {
			return found[i].d < found[j].d
		}
		return found[i].name < found[j].name
	})
	var names []string
	for i, f := range found {
		if i == 3 {
			break
		}
		names = append(names, f.name)
	}
	return names
}

// editDistance is the optimal string alignment distance of a and b in
// bytes.
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return max(len(a), len(b)) // names are short; never quadratic on junk
	}
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}

// MaxMessageBytes bounds the error messages dm answers and logs (Message):
// an error quotes its input, and the input may be megabytes long.
const MaxMessageBytes = 512

// Message returns err's text, shortened to at most about MaxMessageBytes:
// its beginning and its end, which say what failed and why, around a note
// of how many bytes were left out. Every message registryd answers goes
// through it, so that no error echoes more than a few hundred bytes of
// whatever input it quotes.
func Message(err error) string {
	if err == nil {
		return ""
	}
	return Clip(err.Error(), MaxMessageBytes)
}

// Clip shortens s to about limit bytes (at least 64), keeping its first
// two thirds and last third on UTF-8 boundaries.
func Clip(s string, limit int) string {
	limit = max(limit, 64)
	if len(s) <= limit {
		return s
	}
	head, tail := limit*2/3, limit/3
	for head > 0 && !utf8.RuneStart(s[head]) {
		head--
	}
	start := len(s) - tail
	for start < len(s) && !utf8.RuneStart(s[start]) {
		start++
	}
	return fmt.Sprintf("%s … [%d bytes left out] … %s", s[:head], start-head, s[start:])
}
