package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"

	shlex "github.com/anmitsu/go-shlex"
	"github.com/rhysd/actionlint"
	"github.com/sshrig/sshrig/internal/testpeer"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"sigs.k8s.io/yaml"
)

// yamlBlock is one ```yaml block of a document.
type yamlBlock struct {
	line int // of its first line of YAML
	text string
}

func yamlBlocks(t *testing.T, file string) []yamlBlock {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []yamlBlock
	var cur *strings.Builder
	start := 0
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case cur == nil && line == "```yaml":
			cur, start = &strings.Builder{}, n+1
		case cur != nil && line == "```":
			out = append(out, yamlBlock{line: start, text: cur.String()})
			cur = nil
		case cur != nil:
			cur.WriteString(line + "\n")
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestNightlyManifests checks the YAML of docs/nightly.md as the systems
// that would run it do: each Kubernetes manifest decoded strictly as a
// batch/v1 Job with the API's own types, the GitHub Actions workflow by
// actionlint, and every sshrig command in them by sshrig's own flags.
func TestNightlyManifests(t *testing.T) {
	const doc = "../../docs/nightly.md"
	var jobs, workflows int
	for _, b := range yamlBlocks(t, doc) {
		where := fmt.Sprintf("%s:%d", doc, b.line)
		switch {
		case strings.HasPrefix(b.text, "apiVersion:"):
			jobs++
			checkJob(t, where, b.text)
		case strings.Contains(b.text, "\njobs:\n"):
			workflows++
			checkWorkflow(t, where, b.text)
		default:
			t.Errorf("%s: a YAML block that is neither a Kubernetes manifest nor a workflow", where)
		}
	}
	if jobs != 2 || workflows != 1 {
		t.Fatalf("%s has %d Kubernetes Jobs and %d workflows, want the shards' and the merge's Jobs and one workflow", doc, jobs, workflows)
	}
}

// checkJob decodes a Job strictly, as the API server does: a duplicate key
// (sigs.k8s.io/yaml), an unknown field or one spelt in another case
// (apimachinery's strict decoder; encoding/json alone would match
// "completionmode" to completionMode) fails.
func checkJob(t *testing.T, where, text string) {
	js, err := yaml.YAMLToJSONStrict([]byte(text))
	if err != nil {
		t.Errorf("%s: %v", where, err)
		return
	}
	scheme := runtime.NewScheme()
	if err := batchv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	obj, gvk, err := serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer().Decode(js, nil, nil)
	if err != nil {
		t.Errorf("%s: not a valid batch/v1 Job: %v", where, err)
		return
	}
	job, ok := obj.(*batchv1.Job)
	if !ok || gvk.Group != "batch" || gvk.Version != "v1" {
		t.Errorf("%s: a %s, want a batch/v1 Job", where, gvk)
		return
	}
	pod := job.Spec.Template.Spec
	if pod.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("%s: restartPolicy %q: a shard that ran must not run again in place", where, pod.RestartPolicy)
	}
	for _, c := range pod.Containers {
		// The Job controller sets JOB_COMPLETION_INDEX in every pod of an
		// Indexed Job; the kubelet expands $(VAR) in args.
		var argv []string
		for _, a := range c.Args {
			argv = append(argv, strings.ReplaceAll(a, "$(JOB_COMPLETION_INDEX)", "0"))
		}
		cmds := [][]string{argv}
		if len(c.Command) == 2 && c.Command[1] == "-c" {
			cmds = shellCommands(t, where, strings.Join(argv, " "), "sshrig")
		}
		for _, args := range cmds {
			flags := checkArgs(t, where, args)
			if job.Spec.CompletionMode == nil || *job.Spec.CompletionMode != batchv1.IndexedCompletion {
				continue
			}
			shards, _ := flags.GetInt("shards")
			if job.Spec.Completions == nil || int(*job.Spec.Completions) != shards || job.Spec.Parallelism == nil || *job.Spec.Parallelism != *job.Spec.Completions {
				t.Errorf("%s: an Indexed Job of %v completions and %v parallelism runs --shards=%d", where, job.Spec.Completions, job.Spec.Parallelism, shards)
			}
			if l := job.Spec.BackoffLimitPerIndex; l == nil || *l != 0 {
				t.Errorf("%s: backoffLimitPerIndex must be 0: a shard that fails its verdicts must neither run again nor stop the others", where)
			}
		}
	}
}

// flagSet is what checkArgs hands back.
type flagSet interface{ GetInt(string) (int, error) }

// checkArgs parses args (after "sshrig") as sshrig itself would, without
// running anything.
func checkArgs(t *testing.T, where string, args []string) flagSet {
	root := newRoot(io.Discard, io.Discard)
	cmd, rest, err := root.Find(args)
	if err == nil && cmd == root {
		err = fmt.Errorf("no sshrig command in %q", args)
	}
	if err == nil {
		err = cmd.ParseFlags(rest)
	}
	if err == nil {
		err = cmd.ValidateArgs(cmd.Flags().Args())
	}
	if err != nil {
		t.Errorf("%s: sshrig %s: %v", where, strings.Join(args, " "), err)
	}
	return cmd.Flags()
}

// shellCommands splits a one-line shell script at ';' and returns the
// arguments of each command that starts with prefix (e.g. "sshrig", or
// "go run ./cmd/sshrig").
func shellCommands(t *testing.T, where, script, prefix string) [][]string {
	var out [][]string
	want := strings.Fields(prefix)
	for _, stmt := range strings.Split(script, ";") {
		words, err := shlex.Split(stmt, true)
		if err != nil {
			t.Errorf("%s: %q: %v", where, stmt, err)
			continue
		}
		if len(words) > len(want) && strings.Join(words[:len(want)], " ") == prefix {
			out = append(out, words[len(want):])
		}
	}
	return out
}

// checkWorkflow lints the workflow with actionlint (and shellcheck on its
// scripts, where installed) and parses its sshrig commands.
func checkWorkflow(t *testing.T, where, text string) {
	opts := &actionlint.LinterOptions{ConfigFile: os.DevNull}
	if sc, err := testpeer.Lookup("shellcheck"); err == nil {
		opts.Shellcheck = sc
	} else if testpeer.Required() {
		t.Fatalf("%s=1, but %v", testpeer.RequireEnv, err)
	} else {
		t.Logf("%v: the workflow's scripts are not checked by it", err)
	}
	var out strings.Builder
	l, err := actionlint.NewLinter(&out, opts)
	if err != nil {
		t.Fatal(err)
	}
	errs, err := l.Lint("nightly.yml", []byte(text), nil)
	if err != nil {
		t.Fatalf("%s: actionlint: %v", where, err)
	}
	line, _ := strconv.Atoi(where[strings.LastIndexByte(where, ':')+1:])
	for _, e := range errs {
		t.Errorf("%s:%d:%d: actionlint [%s]: %s", where[:strings.LastIndexByte(where, ':')], line+e.Line-1, e.Column, e.Kind, e.Message)
	}
	wf, perrs := actionlint.Parse([]byte(text))
	if len(perrs) > 0 {
		return // reported above
	}
	shards := 0
	for _, job := range wf.Jobs {
		if job.Strategy != nil && job.Strategy.Matrix != nil {
			if row := job.Strategy.Matrix.Rows["shard"]; row != nil {
				shards = len(row.Values)
			}
		}
		for _, st := range job.Steps {
			run, ok := st.Exec.(*actionlint.ExecRun)
			if !ok || run.Run == nil {
				continue
			}
			script := strings.NewReplacer("${{ matrix.shard }}", "1", "${{ github.run_id }}", "4711").Replace(run.Run.Value)
			for _, args := range shellCommands(t, where, script, "go run ./cmd/sshrig") {
				flags := checkArgs(t, where, args)
				if args[0] == "merge" && shards > 0 && len(args) < 1+shards {
					t.Errorf("%s: merge of %d shards given fewer directories: %q", where, shards, args)
				}
				if sh, _ := flags.(interface{ GetString(string) (string, error) }).GetString("shard"); sh != "" && !strings.HasSuffix(sh, "/"+strconv.Itoa(shards)) {
					t.Errorf("%s: --shard %s, but the matrix has %d shards", where, sh, shards)
				}
			}
		}
	}
	if shards == 0 {
		t.Errorf("%s: the workflow has no matrix of shards", where)
	}
}
