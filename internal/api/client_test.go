package api

import (
	"errors"
	"testing"

	"github.com/dmhq/dm/internal/derrors"
)

func TestHTTPErrorUnwrap(t *testing.T) {
	tests := []struct {
		status int
		want   error
	}{
		{404, derrors.NotFound}, {400, derrors.InvalidArgument}, {409, derrors.Ambiguous},
		{401, derrors.Unauthorized}, {403, derrors.Unauthorized}, {503, derrors.Unavailable},
		{422, derrors.LimitExceeded},
	}
	for _, tt := range tests {
		if err := error(&HTTPError{Status: tt.status, Message: "x"}); !errors.Is(err, tt.want) {
			t.Errorf("status %d: errors.Is(%v) false", tt.status, tt.want)
		}
	}
	if _, err := NewClient("not a url", nil); !errors.Is(err, derrors.InvalidArgument) {
		t.Errorf("NewClient with a bad URL: %v", err)
	}
}
