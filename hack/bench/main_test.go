package main

import (
	"slices"
	"testing"
)

// TestOrderBalancesPositions checks that over n rounds every configuration runs once in every
// position, and, for an even n, follows every other configuration exactly once.
func TestOrderBalancesPositions(t *testing.T) {
	for _, n := range []int{3, 4} {
		positions := map[[2]int]int{}
		follows := map[[2]int]int{}
		for round := range n {
			o := order(n, round)
			if sorted := slices.Sorted(slices.Values(o)); !slices.Equal(sorted, []int{0, 1, 2, 3}[:n]) {
				t.Fatalf("n %d, round %d: order %v is not a permutation", n, round, o)
			}
			for pos, c := range o {
				positions[[2]int{c, pos}]++
				if pos > 0 {
					follows[[2]int{o[pos-1], c}]++
				}
			}
		}
		if len(positions) != n*n {
			t.Errorf("n %d: over %d rounds the configurations took %d of the %d (configuration, position) pairs", n, n, len(positions), n*n)
		}
		if n%2 == 0 && len(follows) != n*(n-1) {
			t.Errorf("n %d: %d distinct (before, after) pairs, want all %d: %v", n, len(follows), n*(n-1), follows)
		}
	}
}
