package main

import (
	"net/netip"
	"testing"
)

// TestParseProxy: --trusted-proxy takes a CIDR or one address.
func TestParseProxy(t *testing.T) {
	for _, tt := range []struct {
		in, want string
		err      bool
	}{
		{"10.0.0.0/8", "10.0.0.0/8", false},
		{"10.1.2.3/8", "10.0.0.0/8", false},
		{"192.0.2.7", "192.0.2.7/32", false},
		{"fd00::/8", "fd00::/8", false},
		{"::ffff:192.0.2.7", "192.0.2.7/32", false},
		{"ingress", "", true},
		{"10.0.0.0/33", "", true},
	} {
		got, err := parseProxy(tt.in)
		if (err != nil) != tt.err || err == nil && got != netip.MustParsePrefix(tt.want) {
			t.Errorf("parseProxy(%q) = %v, %v; want %s (error %v)", tt.in, got, err, tt.want, tt.err)
		}
	}
}
