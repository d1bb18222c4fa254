package testenv

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"testenv","version":"0"}}}`

// initializeResult is what the tests read of an initialize response.
type initializeResult struct {
	JSONRPC string `json:"jsonrpc"`
	ID      int    `json:"id"`
	Result  struct {
		ProtocolVersion string `json:"protocolVersion"`
		ServerInfo      struct {
			Name string `json:"name"`
		} `json:"serverInfo"`
	} `json:"result"`
}

func TestMCPServerStdio(t *testing.T) {
	tests := []struct {
		name     string
		args     func(t *testing.T) []string
		env      func(t *testing.T) []string
		wantName string
	}{
		{name: "everything", wantName: "mcp-servers/everything"},
		{
			name:     "filesystem",
			args:     func(t *testing.T) []string { return []string{t.TempDir()} },
			wantName: "secure-filesystem-server",
		},
		{
			name: "memory",
			env: func(t *testing.T) []string {
				return []string{"MEMORY_FILE_PATH=" + filepath.Join(t.TempDir(), "memory.jsonl")}
			},
			wantName: "memory-server",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			argv := MCPServer(t, tt.name)
			if tt.args != nil {
				argv = append(argv, tt.args(t)...)
			}
			cmd := exec.Command(argv[0], argv[1:]...)
			if tt.env != nil {
				cmd.Env = append(cmd.Environ(), tt.env(t)...)
			}
			var stderr strings.Builder
			cmd.Stderr = &stderr
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				_ = cmd.Process.Kill()
				_ = cmd.Wait()
			})
			if _, err := io.WriteString(stdin, initialize+"\n"); err != nil {
				t.Fatal(err)
			}
			line, err := bufio.NewReader(stdout).ReadBytes('\n')
			if err != nil {
				t.Fatalf("reading the initialize response: %v (stderr: %s)", err, stderr.String())
			}
			var got initializeResult
			if err := json.Unmarshal(line, &got); err != nil {
				t.Fatalf("the first line is not JSON: %v: %s", err, line)
			}
			if got.JSONRPC != "2.0" || got.ID != 1 || got.Result.ServerInfo.Name != tt.wantName {
				t.Errorf("initialize answered %s, want a result from %s", line, tt.wantName)
			}
		})
	}
}

func TestMCPEverythingHTTP(t *testing.T) {
	url := MCPEverythingHTTP(t)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(initialize))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("initialize: %s: %s", resp.Status, body)
	}
	if resp.Header.Get("Mcp-Session-Id") == "" {
		t.Errorf("initialize answered without an Mcp-Session-Id header: %v", resp.Header)
	}
	// The answer is one server-sent event whose data is the response.
	var data string
	for line := range strings.SplitSeq(string(body), "\n") {
		if d, ok := strings.CutPrefix(line, "data: "); ok {
			data = d
		}
	}
	var got initializeResult
	if err := json.Unmarshal([]byte(data), &got); err != nil {
		t.Fatalf("no JSON response in the event stream: %v: %s", err, body)
	}
	want := initializeResult{JSONRPC: "2.0", ID: 1}
	want.Result.ProtocolVersion = "2025-06-18"
	want.Result.ServerInfo.Name = "mcp-servers/everything"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("initialize result (-want +got):\n%s", diff)
	}
}

func TestMCPConformance(t *testing.T) {
	argv := MCPConformance(t)
	out, err := exec.Command(argv[0], append(argv[1:], "--version")...).CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %v: %s", argv, err, out)
	}
	if got := strings.TrimSpace(string(out)); got != "0.1.16" {
		t.Errorf("conformance --version = %q, want 0.1.16", got)
	}
}

func TestNode22(t *testing.T) {
	out, err := exec.Command(Node22(t), "--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(out)); !strings.HasPrefix(got, "v22.") {
		t.Errorf("the pinned node is %s, want v22.x", got)
	}
}

func TestMCPEverythingHTTPStopsAtCleanup(t *testing.T) {
	var url string
	t.Run("serve", func(t *testing.T) {
		url = MCPEverythingHTTP(t)
	})
	if t.Skipped() || url == "" {
		return
	}
	host := strings.TrimSuffix(strings.TrimPrefix(url, "http://"), "/mcp")
	if c, err := net.Dial("tcp", host); err == nil {
		c.Close()
		t.Errorf("%s still accepts connections after the test that started the server ended", host)
	}
}
