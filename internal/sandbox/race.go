//go:build race

package sandbox

// raceEnabled: the race detector's runtime cannot grow its shadow memory
// under an address-space limit ("too many address space collisions for
// -race mode"), so a race build's workers run without one. Only tests are
// built so; the hostile-template suite runs a normal build.
const raceEnabled = true
