package report

import "strconv"

// ShardReport records, in a shard's report.json, which part of which
// selection it ran, so that sshrig merge can check the shards fit together.
type ShardReport struct {
	Index int `json:"index"`
	Count int `json:"count"`
	// Selection is every case id of the whole selection, in matrix order.
	Selection []string `json:"selection"`
}

// String is the shard as --shard names it, "index/count".
func (r *ShardReport) String() string { return strconv.Itoa(r.Index) + "/" + strconv.Itoa(r.Count) }

// MergedShard records, in a merged report, one shard it was made of: where
// it was read and the head its event log verified against.
type MergedShard struct {
	Dir   string `json:"dir"`
	Index int    `json:"index"`
	Count int    `json:"count"`
	Head  string `json:"log_head"`
	Lines int    `json:"log_lines"`
}
