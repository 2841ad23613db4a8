package main

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sshrig/sshrig/internal/testpeer"
	"github.com/sshrig/sshrig/internal/verdict"
	"github.com/sshrig/sshrig/report"
)

// TestCutUploadReported: an upload of 4 KiB over OpenSSH's sftp, cut at 64
// bytes by the step cases step.upload-64B.*: report.json (and JUnit) show
// the partial file, 64 bytes with the SHA-256 of the script's first 64; a
// tool that runs the partial script anyway and says it succeeded fails by
// partial_upload_claimed beside unsafe_category, and one that says the
// failed upload ran nothing passes. testdata/upload4k.sh is both tools.
func TestCutUploadReported(t *testing.T) {
	testpeer.Need(t, "ssh", "sftp")
	t.Parallel()
	header, err := os.ReadFile("testdata/job-header.txt")
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(header[:64])
	firstBytes := hex.EncodeToString(sum[:])
	for _, mode := range []string{"honest", "naive"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			junit := filepath.Join(dir, "junit.xml")
			code, _, stderr, _ := sshrigIn(t, dir, "run", "--tool", "exec:testdata/upload4k.sh "+mode,
				"--cases", "step.upload-64B.*", "--budget", "10s", "--junit", junit)
			rep, err := report.ReadReport(dir)
			if err != nil {
				t.Fatalf("exit %d, no report: %v\n%s", code, err, stderr)
			}
			wantCode := exitPass
			if mode == "naive" {
				wantCode = exitFail
			}
			if code != wantCode || len(rep.Cases) != 2 {
				t.Errorf("exit %d with %d cases, want %d with the two step.upload-64B cases\n%s", code, len(rep.Cases), wantCode, stderr)
			}
			j, err := os.ReadFile(junit)
			if err != nil {
				t.Fatal(err)
			}
			for _, cr := range rep.Cases {
				up := cr.Upload
				if !strings.HasPrefix(cr.ID, "step.upload-64B.") || up == nil {
					t.Errorf("%s: upload %+v, want a step.upload-64B case with its upload", cr.ID, up)
					continue
				}
				if path.Base(up.Path) != "job-"+cr.CorrelationID+".sh" || up.Arrived != 64 || up.Size != 64 || up.SHA256 != firstBytes || !up.LeftPartial() {
					t.Errorf("%s: upload %+v; want job-%s.sh, 64 bytes arrived and on the host, sha256 %s (the script's first 64 bytes)",
						cr.ID, up, cr.CorrelationID, firstBytes)
				}
				if !strings.Contains(string(j), "64 of its bytes arrived; on the host 64 bytes, sha256 "+firstBytes) {
					t.Errorf("%s: JUnit does not show the partial file", cr.ID)
				}
				var rules []string
				for _, v := range cr.Violations {
					rules = append(rules, v.Assertion+"/"+v.Rule)
				}
				switch {
				case mode == "honest" && cr.Verdict != report.Pass:
					t.Errorf("%s: %s %v %s; an upload that failed ran nothing, and the tool said so", cr.ID, cr.Verdict, rules, cr.Reason)
				case mode == "naive" && (cr.Verdict != report.Fail || !slices.Contains(rules, report.AssertEvidence+"/"+verdict.RulePartialUpload) ||
					!slices.Contains(rules, report.AssertCategory+"/"+verdict.RuleUnsafeCategory)):
					t.Errorf("%s: %s %v %s; want a failure by %s and %s", cr.ID, cr.Verdict, rules, cr.Reason, verdict.RulePartialUpload, verdict.RuleUnsafeCategory)
				}
			}
		})
	}
}
