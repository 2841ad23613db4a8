package agentrun

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
)

// Bridge relays MCP between stdio and the rig's streamable HTTP server at
// url, for an agent that only launches servers (SSHRIG_MCP_COMMAND): each
// JSON-RPC message read from in, one per line, is POSTed; each answer is
// written to out on a line of its own. The server answers in JSON, never
// an event stream, except for what it asks the client itself (an
// elicitation, elicit.go), which comes on the session's standalone event
// stream: the bridge listens there once the session exists and writes each
// such request to out, and a request's POST runs beside the others, so a
// call the server holds while it asks does not keep the client's answer
// from being relayed. It returns when in ends.
func Bridge(ctx context.Context, url string, in io.Reader, out io.Writer) error {
	// When in ends, the requests in flight are answered first; then the
	// event stream is closed.
	listenCtx, stopListening := context.WithCancel(ctx)
	var listener, pending sync.WaitGroup
	defer listener.Wait()
	defer stopListening()
	defer pending.Wait()
	b := &bridge{url: url, out: out}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	listening := false
	for sc.Scan() {
		msg := bytes.TrimSpace(sc.Bytes())
		if len(msg) == 0 {
			continue
		}
		msg = bytes.Clone(msg)
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		json.Unmarshal(msg, &m)
		// A request after the session exists runs beside the others;
		// notifications and responses go in order, at once.
		if len(m.ID) > 0 && m.Method != "" && b.sessionID() != "" {
			pending.Add(1)
			go func() {
				defer pending.Done()
				if err := b.post(ctx, msg, m.ID); err != nil {
					b.fail(err)
				}
			}()
		} else if err := b.post(ctx, msg, m.ID); err != nil {
			return err
		}
		if err := b.failed(); err != nil {
			return err
		}
		if !listening && b.sessionID() != "" {
			// Open before the next message: the server asks only on a
			// stream that is open when it asks.
			listening = true
			if stream := b.openStream(listenCtx); stream != nil {
				listener.Add(1)
				go func() {
					defer listener.Done()
					b.listen(stream)
				}()
			}
		}
	}
	if err := b.failed(); err != nil {
		return err
	}
	return sc.Err()
}

// bridge is one relayed session.
type bridge struct {
	url string

	mu      sync.Mutex
	out     io.Writer
	session string
	err     error
}

func (b *bridge) sessionID() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.session
}

func (b *bridge) fail(err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.err == nil {
		b.err = err
	}
}

func (b *bridge) failed() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.err
}

// write puts one message on out, on a line of its own.
func (b *bridge) write(msg []byte) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, err := b.out.Write(append(bytes.TrimSpace(msg), '\n'))
	return err
}

// post sends one message and relays its answer.
func (b *bridge) post(ctx context.Context, msg []byte, id json.RawMessage) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, b.url, bytes.NewReader(msg))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if s := b.sessionID(); s != "" {
		req.Header.Set("Mcp-Session-Id", s)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("bridge: %v", err)
	}
	if s := resp.Header.Get("Mcp-Session-Id"); s != "" {
		b.mu.Lock()
		b.session = s
		b.mu.Unlock()
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return fmt.Errorf("bridge: %v", err)
	}
	body = bytes.TrimSpace(body)
	switch {
	case resp.StatusCode == http.StatusAccepted || len(body) == 0 && resp.StatusCode < 300:
		return nil // a notification or a response: nothing comes back
	case resp.StatusCode >= 300 && !json.Valid(body):
		// An HTTP error with no JSON-RPC in it: answer the request with a
		// JSON-RPC error, so the client is not left waiting.
		if len(id) == 0 {
			return nil
		}
		body, _ = json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id,
			"error": map[string]any{"code": -32603, "message": fmt.Sprintf("the rig's MCP server answered HTTP %d: %s", resp.StatusCode, body)}})
	}
	return b.write(body)
}

// openStream opens the session's standalone event stream, on which the
// server sends its own requests to the client; nil when it cannot.
func (b *bridge) openStream(ctx context.Context) io.ReadCloser {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.url, nil)
	if err != nil {
		return nil
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", b.sessionID())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil
	}
	return resp.Body
}

// listen relays each message of the event stream to out until the stream
// ends (ctx of openStream, or the server closed it).
func (b *bridge) listen(stream io.ReadCloser) {
	defer stream.Close()
	sc := bufio.NewScanner(stream)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var data []string
	for sc.Scan() {
		line := sc.Text()
		if d, ok := strings.CutPrefix(line, "data:"); ok {
			data = append(data, strings.TrimPrefix(d, " "))
			continue
		}
		if line == "" && len(data) > 0 {
			if b.write([]byte(strings.Join(data, "\n"))) != nil {
				return
			}
			data = nil
		}
	}
}
