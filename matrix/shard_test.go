package matrix

import (
	"slices"
	"testing"
)

// TestShardsPartition: the shards of a selection are disjoint, cover it,
// keep its order, and do not depend on the order the matrix lists cases in.
func TestShardsPartition(t *testing.T) {
	m := DefaultMatrix()
	reversed := slices.Clone(m)
	slices.Reverse(reversed)
	for _, n := range []int{1, 2, 3, 7, len(m)} {
		seen := map[string]int{}
		for i := 1; i <= n; i++ {
			sh := Shard{Index: i, Count: n}
			part := sh.Cases(m)
			if len(part) < len(m)/n || len(part) > len(m)/n+1 {
				t.Errorf("shard %s has %d of %d cases: not balanced", sh, len(part), len(m))
			}
			var ids, again []string
			for _, c := range part {
				ids = append(ids, c.ID)
				seen[c.ID]++
			}
			for _, c := range sh.Cases(reversed) {
				again = append(again, c.ID)
			}
			slices.Reverse(again)
			if !slices.Equal(ids, again) {
				t.Errorf("shard %s depends on the matrix's order", sh)
			}
			var selection []string
			for _, c := range m {
				selection = append(selection, c.ID)
			}
			if got := sh.IDs(selection); !slices.Equal(got, ids) {
				t.Errorf("shard %s: the IDs of its selection %v, its cases %v", sh, got, ids)
			}
		}
		for _, c := range m {
			if seen[c.ID] != 1 {
				t.Errorf("%d shards: %s in %d shards", n, c.ID, seen[c.ID])
			}
		}
	}
}

func TestParseShard(t *testing.T) {
	for in, ok := range map[string]bool{"1/1": true, "2/3": true, "3/3": true, "0/3": false, "4/3": false, "1/0": false, "x": false, "1/": false, "/3": false, "1/3/4": false} {
		sh, err := ParseShard(in)
		if (err == nil) != ok {
			t.Errorf("ParseShard(%q) = %v, %v", in, sh, err)
		}
		if ok && sh.String() != in {
			t.Errorf("ParseShard(%q).String() = %q", in, sh)
		}
	}
}
