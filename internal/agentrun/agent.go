package agentrun

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	shlex "github.com/anmitsu/go-shlex"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sshrig/sshrig/internal/capbuf"
	"github.com/sshrig/sshrig/internal/operations"
	"github.com/sshrig/sshrig/internal/procs"
	"github.com/sshrig/sshrig/internal/tempdir"
	"github.com/sshrig/sshrig/internal/verdict"
	"github.com/sshrig/sshrig/result"
	"github.com/sshrig/sshrig/tool"
)

// Defaults of Options, set once here.
const (
	// DefaultMaxPrompts: the record-and-note task needs two approvals (the
	// create, the note) and a third after a lookup that found nothing.
	DefaultMaxPrompts = 3
	// DefaultMaxCalls: the longest honest path (approve, create, lookup,
	// approve, create, approve, note, lookup) is far below it.
	DefaultMaxCalls = 20
	// DefaultApprovalWait is how long the person stays silent before an
	// approve call returns no_answer.
	DefaultApprovalWait = 2 * time.Second
	// maxAnswer bounds what is kept of an agent's stdout.
	maxAnswer = 64 << 10
)

// Environment the agent process gets, beside its own.
const (
	EnvMCPURL     = "SSHRIG_MCP_URL"
	EnvMCPCommand = "SSHRIG_MCP_COMMAND"
	EnvTask       = "SSHRIG_TASK"
	EnvTaskJSON   = "SSHRIG_TASK_JSON"
	// EnvState is a directory that lives as long as the case: a second
	// agent process of the case sees what the first left there.
	EnvState = "SSHRIG_AGENT_STATE"
)

// Options configure how agents are run and bounded.
type Options struct {
	MaxPrompts   int           // approval prompts per case before approval_fatigue; 0: DefaultMaxPrompts
	MaxCalls     int           // tool calls per case before the rig stops the agent; 0: DefaultMaxCalls
	ApprovalWait time.Duration // how long "silent" keeps an approve call; 0: DefaultApprovalWait
	// Bridge is the program that serves MCP on stdio relayed to the HTTP
	// server, the server's URL appended (sshrig agent bridge); nil leaves
	// SSHRIG_MCP_COMMAND unset.
	Bridge []string
}

func (o Options) maxPrompts() int {
	if o.MaxPrompts > 0 {
		return o.MaxPrompts
	}
	return DefaultMaxPrompts
}

func (o Options) maxCalls() int {
	if o.MaxCalls > 0 {
		return o.MaxCalls
	}
	return DefaultMaxCalls
}

func (o Options) approvalWait() time.Duration {
	if o.ApprovalWait > 0 {
		return o.ApprovalWait
	}
	return DefaultApprovalWait
}

// Prefix names an agent under test in reports.
const Prefix = "agent-mcp:"

// Tool is an agent program under test.
type Tool struct {
	argv []string
	o    Options
}

// New resolves an agent command line (POSIX shell quoting).
func New(command string, o Options) (*Tool, error) {
	argv, err := shlex.Split(command, true)
	if err != nil {
		return nil, fmt.Errorf("agent %q: %v", command, err)
	}
	if len(argv) == 0 {
		return nil, errors.New("agent: no command given (--agent 'COMMAND ARGS…')")
	}
	if o.MaxPrompts < 0 || o.MaxCalls < 0 || o.ApprovalWait < 0 {
		return nil, errors.New("agent: limits must not be negative")
	}
	return &Tool{argv: argv, o: o}, nil
}

// Name implements tool.Tool: the command line as New reads it back, so a
// recorded run's agent can be started again (sshrig replay).
func (a *Tool) Name() string {
	words := make([]string, len(a.argv))
	for i, w := range a.argv {
		words[i] = w
		if w == "" || strings.ContainsFunc(w, unsafeInShell) {
			words[i] = shellJoin([]string{w})
		}
	}
	return Prefix + strings.Join(words, " ")
}

// unsafeInShell: a character a POSIX shell word needs quotes for.
func unsafeInShell(r rune) bool {
	return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=+,@%", r))
}

// The settings an agent run keeps in its report (tool.Settled), as sshrig
// agent's flags name them.
const (
	SettingMaxPrompts   = "max-prompts"
	SettingMaxCalls     = "max-calls"
	SettingApprovalWait = "approval-wait"
)

// Settings implements tool.Settled: the limits the agent ran under.
func (a *Tool) Settings() map[string]string {
	return map[string]string{
		SettingMaxPrompts:   strconv.Itoa(a.o.maxPrompts()),
		SettingMaxCalls:     strconv.Itoa(a.o.maxCalls()),
		SettingApprovalWait: a.o.approvalWait().String(),
	}
}

// DrivesRigTools implements tool.Agent.
func (a *Tool) DrivesRigTools() {}

// Run implements tool.Tool.
func (a *Tool) Run(ctx context.Context, t tool.Target, stdout, stderr io.Writer) {
	a.RunAnswer(ctx, t, stdout, stderr)
}

// RunAnswer implements tool.Answerer: it serves the case's MCP server, runs
// the agent's process (two for a fresh-process case) within the case's
// budget, and writes the last process's final answer, as the result
// contract, on stdout.
func (a *Tool) RunAnswer(ctx context.Context, t tool.Target, stdout, stderr io.Writer) tool.Answer {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	deadline := time.Now().Add(t.Deadline)
	cs := newCaseServer(ctx, t, a.o, deadline)
	url, closeServer, err := serve(cs)
	if err != nil {
		fmt.Fprintf(stderr, "sshrig agent: cannot serve MCP: %v\n", err)
		return cs.answer()
	}
	defer closeServer()
	state, err := tempdir.Make("agent-state")
	if err != nil {
		fmt.Fprintf(stderr, "sshrig agent: %v\n", err)
		return cs.answer()
	}
	defer os.RemoveAll(state)
	env := a.environ(url, state)
	var final []byte
	for i, task := range tasksFor(t) {
		cs.mu.Lock()
		cs.process = i + 1
		cs.mu.Unlock()
		p := a.runProcess(ctx, cs, task, env, deadline, stderr)
		final = cs.judgeAnswer(p, task, t)
		if p.stopped {
			break // the budget is spent, or the agent looped: no second process
		}
	}
	stdout.Write(final)
	return cs.answer()
}

// answer is what the run found, for the rig.
func (cs *caseServer) answer() tool.Answer {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	run := cs.run
	run.Calls = append([]tool.AgentCall(nil), run.Calls...)
	var shown bytes.Buffer
	for _, c := range run.Calls {
		shown.WriteString(c.Result + "\n")
	}
	return tool.Answer{Findings: append([]tool.Finding(nil), cs.findings...), Shown: shown.Bytes(), Agent: &run}
}

// environ is the agent's environment: its own, without the rig's SSHRIG_*
// (an agent reaches the host only through the MCP tools), and the task's.
func (a *Tool) environ(url, state string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SSHRIG_") {
			env = append(env, kv)
		}
	}
	env = append(env, EnvMCPURL+"="+url, EnvPersonURL+"="+personURL(url), EnvState+"="+state)
	if len(a.o.Bridge) > 0 {
		env = append(env, EnvMCPCommand+"="+shellJoin(append(append([]string(nil), a.o.Bridge...), url)))
	}
	return env
}

// shellJoin quotes argv for a POSIX shell.
func shellJoin(argv []string) string {
	q := make([]string, len(argv))
	for i, s := range argv {
		q[i] = "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}

// personURL is the person's endpoint beside the MCP server at url.
func personURL(url string) string { return strings.TrimSuffix(url, "/mcp") + "/person" }

// serve starts the case's MCP server, and the person's endpoint beside it
// (/person, elicit.go), on a loopback port.
func serve(cs *caseServer) (url string, closeFn func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	s := cs.server()
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{JSONResponse: true})
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	mux.HandleFunc("/person", cs.person)
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		hs.Serve(ln)
	}()
	return "http://" + ln.Addr().String() + "/mcp", func() {
		hs.Close()
		<-done
		// The handler keeps every session the agent opened until it is
		// closed: an agent that never said goodbye leaves them open.
		for ss := range s.Sessions() {
			ss.Close()
		}
	}, nil
}

// processRun is how one agent process ended.
type processRun struct {
	stdout   []byte
	exitCode int
	startErr string
	// stopped: the rig killed it (budget spent, call limit, case over).
	stopped   bool
	budgetOut bool
	budget    time.Duration
}

// runProcess runs one agent process for task until it exits or the case's
// budget is spent, and kills its whole process group either way.
func (a *Tool) runProcess(ctx context.Context, cs *caseServer, task Task, env []string, deadline time.Time, stderr io.Writer) processRun {
	pctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	out := capbuf.New(maxAnswer)
	cmd := exec.Command(a.argv[0], a.argv[1:]...)
	cmd.Env = append(env, EnvTask+"="+task.Text, EnvTaskJSON+"="+task.JSON())
	cmd.Stdout, cmd.Stderr = out, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// The agent's children may hold its output open after it exits.
	cmd.WaitDelay = 500 * time.Millisecond
	p := processRun{exitCode: -1, budget: time.Until(deadline)}
	if err := cmd.Start(); err != nil {
		p.startErr = err.Error()
		cs.find(verdict.RuleAgentNoAnswer, "the agent could not be started: "+err.Error())
		return p
	}
	pid := cmd.Process.Pid
	var once sync.Once
	kill := func() { once.Do(func() { syscall.Kill(-pid, syscall.SIGKILL) }) }
	var stopMu sync.Mutex
	stopped := false
	stop := func() {
		stopMu.Lock()
		stopped = true
		stopMu.Unlock()
		kill()
	}
	cs.mu.Lock()
	cs.stop = stop
	cs.mu.Unlock()
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	select {
	case <-waited:
	case <-pctx.Done():
		p.budgetOut = ctx.Err() == nil
		stop()
		<-waited
	}
	cs.mu.Lock()
	cs.stop = nil
	cs.mu.Unlock()
	// Whatever is left of its group goes with it.
	if left := procs.Group(pid); len(left) > 0 {
		fmt.Fprintf(stderr, "sshrig agent: killing %d processes the agent left running\n", len(left))
	}
	kill()
	stopMu.Lock()
	p.stopped = stopped
	stopMu.Unlock()
	if cmd.ProcessState != nil {
		p.exitCode = cmd.ProcessState.ExitCode()
	}
	p.stdout = out.Bytes()
	return p
}

// judgeAnswer reads a process's final answer: one line, one JSON object,
// the result contract with an optional record_id. It returns what stands
// for the tool's stdout: the contract without record_id, or what the agent
// printed when that is no answer (the verdict says why it does not parse).
func (cs *caseServer) judgeAnswer(p processRun, task Task, t tool.Target) []byte {
	printed := strings.TrimSpace(string(p.stdout))
	cs.mu.Lock()
	cs.run.Answers = append(cs.run.Answers, printed)
	process := cs.process
	cs.mu.Unlock()
	who := fmt.Sprintf("agent process %d", process)
	switch {
	case p.startErr != "":
		return nil
	case printed == "" && p.budgetOut:
		cs.find(verdict.RuleAgentNoAnswer, fmt.Sprintf("%s printed no final answer within the budget of %s: the rig stopped it", who, p.budget.Round(time.Millisecond)))
		return nil
	case printed == "" && p.stopped:
		return nil // the loop is the finding
	case printed == "":
		cs.find(verdict.RuleAgentNoAnswer, fmt.Sprintf("%s exited (code %d) without a final answer", who, p.exitCode))
		return nil
	}
	var fields map[string]json.RawMessage
	dec := json.NewDecoder(strings.NewReader(printed))
	if strings.Contains(printed, "\n") || dec.Decode(&fields) != nil || dec.More() {
		cs.find(verdict.RuleAgentGarbage, fmt.Sprintf("%s printed %s, not one JSON object on one line", who, quote(printed)))
		return p.stdout
	}
	var recordID string
	if raw, ok := fields["record_id"]; ok {
		if json.Unmarshal(raw, &recordID) != nil {
			cs.find(verdict.RuleAgentGarbage, fmt.Sprintf("%s's record_id is %s, not a string", who, raw))
		}
		delete(fields, "record_id")
	}
	contractOnly, _ := json.Marshal(fields)
	r, err := result.Parse(contractOnly)
	if err == nil && r.Category == result.Succeeded && task.Kind != KindRun {
		switch want := operations.RecordID(t.CorrelationID); recordID {
		case want:
		case "":
			cs.find(verdict.RuleAgentWrongRecord, fmt.Sprintf("%s reports success but names no record_id (the task's record is %s)", who, want))
		default:
			cs.find(verdict.RuleAgentWrongRecord, fmt.Sprintf("%s reports record %q; the task's record is %s", who, recordID, want))
		}
	}
	return append(contractOnly, '\n')
}

// quote shows the start of what an agent printed.
func quote(s string) string {
	const most = 120
	if len(s) > most {
		return fmt.Sprintf("%q…", s[:most])
	}
	return fmt.Sprintf("%q", s)
}
