package main

import (
	"fmt"
	"os"
	"strconv"

	"github.com/spf13/pflag"

	"github.com/sshrig/sshrig/matrix"
	"github.com/sshrig/sshrig/report"
	"github.com/sshrig/sshrig/rig"
)

// Environment variables a sharded run reads when --shard is not given:
// Kubernetes sets JOB_COMPLETION_INDEX (from 0) in each pod of an Indexed
// Job; the shard count comes from --shards or SSHRIG_SHARDS.
const (
	envCompletionIndex = "JOB_COMPLETION_INDEX"
	envShards          = "SSHRIG_SHARDS"
)

// shardFlags are sshrig run's flags for one shard of a run split across
// machines (docs/nightly.md).
type shardFlags struct {
	shard  string
	shards int
	getenv func(string) string // os.Getenv unless a test says otherwise
}

func (f *shardFlags) register(fl *pflag.FlagSet) {
	fl.StringVar(&f.shard, "shard", "", "run only shard I of N (I/N, from 1/N to N/N) of the selected cases, split by sorted case id; merge the shards with 'sshrig merge'")
	fl.IntVar(&f.shards, "shards", 0, "the shard count when the index comes from "+envCompletionIndex+" (a Kubernetes Indexed Job; index k is shard k+1); default $"+envShards)
}

// resolve is the shard to run, if any: --shard, else JOB_COMPLETION_INDEX
// with --shards or SSHRIG_SHARDS.
func (f *shardFlags) resolve() (matrix.Shard, bool, error) {
	getenv := f.getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	if f.shard != "" {
		if f.shards != 0 {
			return matrix.Shard{}, false, usageError("--shard I/N and --shards N: give one")
		}
		sh, err := matrix.ParseShard(f.shard)
		if err != nil {
			return sh, false, usageError("--shard: %v", err)
		}
		return sh, true, nil
	}
	index := getenv(envCompletionIndex)
	count := f.shards
	if count == 0 && getenv(envShards) != "" {
		n, err := strconv.Atoi(getenv(envShards))
		if err != nil || n < 1 {
			return matrix.Shard{}, false, usageError("%s=%q: want a shard count of at least 1", envShards, getenv(envShards))
		}
		count = n
	}
	switch {
	case index == "" && f.shards != 0:
		return matrix.Shard{}, false, usageError("--shards needs %s (set in each pod of a Kubernetes Indexed Job); elsewhere give --shard I/N", envCompletionIndex)
	case index == "":
		return matrix.Shard{}, false, nil
	case count == 0:
		return matrix.Shard{}, false, usageError("%s=%s is set (a Kubernetes Indexed Job), but not the shard count: give --shards N or %s=N (the Job's completions)", envCompletionIndex, index, envShards)
	}
	k, err := strconv.Atoi(index)
	if err != nil || k < 0 || k >= count {
		return matrix.Shard{}, false, usageError("%s=%q: want an index from 0 to %d for %d shards", envCompletionIndex, index, count-1, count)
	}
	return matrix.Shard{Index: k + 1, Count: count}, true, nil
}

// split keeps the shard's part of the selected cases and the record of it
// for the report. A repeated run split across machines needs a seed given
// (needSeed): shards drawing seeds of their own would not be one run.
func (f *shardFlags) split(cases []matrix.Case, needSeed bool) (*report.ShardReport, []matrix.Case, error) {
	sh, ok, err := f.resolve()
	if err != nil || !ok {
		return nil, cases, err
	}
	if needSeed {
		return nil, nil, usageError("shard %s of a repeated run needs --seed: every shard must draw from the same seed to be one run", sh)
	}
	mine := sh.Cases(cases)
	if len(mine) == 0 {
		return nil, nil, usageError("shard %s has no cases: the selection has only %d", sh, len(cases))
	}
	return rig.NewShardReport(sh, cases), mine, nil
}

// shardNote says which shard a run is, for its first line.
func shardNote(r *report.ShardReport) string {
	if r == nil {
		return ""
	}
	return fmt.Sprintf(" (shard %s of %d)", r, len(r.Selection))
}
