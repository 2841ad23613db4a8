package matrix

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Shard is one part of a run split across machines (sshrig run --shard
// I/N): a Kubernetes Indexed Job's pod or a CI matrix job. Index counts from
// 1 to Count.
//
// The split is by position in the selection's case ids sorted bytewise:
// the case at position p (from 0) belongs to shard p mod Count + 1. It
// depends only on the ids selected, so every machine computes the same split
// whatever its seed, its matrix order or its locale, and round-robin keeps
// the slow cases (the blackhole ones sort together) spread over the shards.
type Shard struct {
	Index int
	Count int
}

// ErrShardSyntax is wrapped by ParseShard's errors.
var ErrShardSyntax = errors.New("rig: bad shard")

// ParseShard reads "I/N", 1 <= I <= N.
func ParseShard(s string) (Shard, error) {
	i, n, ok := strings.Cut(s, "/")
	index, err1 := strconv.Atoi(i)
	count, err2 := strconv.Atoi(n)
	if !ok || err1 != nil || err2 != nil {
		return Shard{}, fmt.Errorf("%w %q: want I/N, such as 2/3", ErrShardSyntax, s)
	}
	sh := Shard{Index: index, Count: count}
	return sh, sh.Validate()
}

// Validate checks 1 <= Index <= Count.
func (s Shard) Validate() error {
	if s.Count < 1 || s.Index < 1 || s.Index > s.Count {
		return fmt.Errorf("%w %s: want 1 <= I <= N", ErrShardSyntax, s)
	}
	return nil
}

func (s Shard) String() string { return strconv.Itoa(s.Index) + "/" + strconv.Itoa(s.Count) }

// shardOf maps each id of a selection to its shard index.
func shardOf(ids []string, count int) map[string]int {
	sorted := slices.Clone(ids)
	slices.Sort(sorted)
	of := make(map[string]int, len(sorted))
	for p, id := range slices.Compact(sorted) {
		of[id] = p%count + 1
	}
	return of
}

// Cases is the shard's part of the selection, in the selection's order.
func (s Shard) Cases(selection []Case) []Case {
	ids := make([]string, len(selection))
	for i, c := range selection {
		ids[i] = c.ID
	}
	of := shardOf(ids, s.Count)
	var out []Case
	for _, c := range selection {
		if of[c.ID] == s.Index {
			out = append(out, c)
		}
	}
	return out
}

// IDs is the part of selection, case ids in matrix order, that is the
// shard's.
func (s Shard) IDs(selection []string) []string {
	of := shardOf(selection, s.Count)
	var out []string
	for _, id := range selection {
		if of[id] == s.Index {
			out = append(out, id)
		}
	}
	return out
}
