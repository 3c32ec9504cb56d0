// Package bound cuts the strings the operator writes into a status to the length the apiserver
// allows: a longer string would fail the whole status write, and so every retry of the pass.
package bound

import "unicode/utf8"

// Mark ends a string that String cut.
const Mark = " ... (truncated)"

// String returns s cut to at most limit bytes, at a rune boundary, ending with Mark when cut.
// The apiserver counts a string's length in characters, which are never more than its bytes, so
// a string within limit bytes is within limit characters.
func String(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	cut := limit - len(Mark)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + Mark
}
