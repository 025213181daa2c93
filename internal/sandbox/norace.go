//go:build !race

package sandbox

// raceEnabled tells whether this is a race-detector build (race.go).
const raceEnabled = false
