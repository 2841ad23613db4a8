package agentrun

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
)

// Bridge relays MCP between stdio and the rig's streamable HTTP server at
// url, for an agent that only launches servers (SSHRIG_MCP_COMMAND): each
// JSON-RPC message read from in, one per line, is POSTed; each answer is
// written to out on a line of its own. The server answers in JSON (never
// an event stream) and asks the client nothing, so one POST per message is
// the whole protocol. It returns when in ends.
func Bridge(ctx context.Context, url string, in io.Reader, out io.Writer) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	session := ""
	for sc.Scan() {
		msg := bytes.TrimSpace(sc.Bytes())
		if len(msg) == 0 {
			continue
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(msg))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return fmt.Errorf("bridge: %v", err)
		}
		if s := resp.Header.Get("Mcp-Session-Id"); s != "" {
			session = s
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return fmt.Errorf("bridge: %v", err)
		}
		body = bytes.TrimSpace(body)
		switch {
		case resp.StatusCode == http.StatusAccepted || len(body) == 0 && resp.StatusCode < 300:
			continue // a notification or a response: nothing comes back
		case resp.StatusCode >= 300 && !json.Valid(body):
			// An HTTP error with no JSON-RPC in it: answer the request
			// with a JSON-RPC error, so the client is not left waiting.
			var m struct {
				ID json.RawMessage `json:"id"`
			}
			if json.Unmarshal(msg, &m) != nil || len(m.ID) == 0 {
				continue
			}
			e, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": m.ID,
				"error": map[string]any{"code": -32603, "message": fmt.Sprintf("the rig's MCP server answered HTTP %d: %s", resp.StatusCode, body)}})
			body = e
		}
		if _, err := out.Write(append(body, '\n')); err != nil {
			return err
		}
	}
	return sc.Err()
}
