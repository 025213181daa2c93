// Package derrors defines the sentinel errors that every layer of dm wraps
// with %w, so that the HTTP layer and the command line can map a failure to a
// status code or exit code in one place instead of guessing from its text.
package derrors

import (
	"errors"
	"net/http"
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
	// LimitExceeded means a configured limit (size, depth, steps, time) was
	// reached.
	LimitExceeded = errors.New("limit exceeded")
	// AlreadyExists means something that is only ever created once, such
	// as a revision of a deployment's history, already exists.
	AlreadyExists = errors.New("already exists")
	// Conflict means a write lost an optimistic-concurrency race: what it
	// was based on changed in the meantime.
	Conflict = errors.New("conflict")
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
	case errors.Is(err, LimitExceeded):
		return http.StatusUnprocessableEntity
	case errors.Is(err, Unavailable):
		return http.StatusServiceUnavailable
	default:
		return http.StatusInternalServerError
	}
}
