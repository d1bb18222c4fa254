package crashtest_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// The durability settings the harness serves with.
const (
	leaseTTL     = 2 * time.Second
	pollInterval = 200 * time.Millisecond
	workers      = 32
	// recoveryBound is the acceptance bound on taking up a lost task:
	// lease TTL + 1 s from the restarted daemon being ready.
	recoveryBound = leaseTTL + time.Second
)

// agentName is the one agent of the workspace.
const agentName = "crash"

// script is what the replay model answers every session: three tool
// calls, one per answer, then a text reply. Each answer's text is a
// unique marker ("step N"), so that model.completed events show which
// answers a session consumed. The delays put some of the kills inside
// model calls.
const script = `model: crash-harness-v1
responses:
  - text: "step 1"
    tool_calls: [{name: record_key, input: {}}]
    delay_ms: 100
  - text: "step 2"
    tool_calls: [{name: counter, input: {}}]
    delay_ms: 100
  - text: "step 3"
    tool_calls: [{name: slow, input: {}}]
    delay_ms: 100
  - text: "step 4: done"
    delay_ms: 100
`

// scriptLen is the number of answers in script; markers are "step 1" to
// "step <scriptLen>".
const scriptLen = 4

// configYAML is agentrt.yaml; the listen address comes from serve's
// --listen flag.
const configYAML = `# The crash harness's workspace (internal/crashtest).
data_dir: data

durability:
  lease_ttl: %s
  poll_interval: %s
  workers: %d

agents:
  ` + agentName + `:
    instructions: Call record_key, counter and slow, then say done.
    model: {provider: replay, script: crash.replay.yaml}
    tools: [record_key, counter, slow]
    workspace: workspace

tools:
  record_key:
    description: Apply the call's idempotency key once.
    input_schema: {type: object}
    command: [./tools/record_key.sh]
    timeout: 30s
    annotations: {idempotent: true}
  counter:
    description: Count one call; not idempotent.
    input_schema: {type: object}
    command: [./tools/counter.sh]
    timeout: 30s
  slow:
    description: Sleep a little and say ok.
    input_schema: {type: object}
    command: [./tools/slow.sh]
    timeout: 30s
    annotations: {read_only: true}
`

// sleepRandom is sh that sleeps a random time from $1 to $2 milliseconds
// (dash has no $RANDOM, so the number comes from /dev/urandom).
const sleepRandom = `sleep_ms() {
  n=$(od -An -N2 -tu2 /dev/urandom | tr -d ' ')
  ms=$(( $1 + n % ($2 - $1 + 1) ))
  sleep "$(( ms / 1000 )).$(printf '%03d' $(( ms % 1000 )))"
}
`

// recordKeySh is the idempotent tool. It reads _idempotency_key from its
// JSON input, appends it to seen.log on every run, and to applied.log
// only when applied.log does not hold it yet: it applies each key once.
// The check and the append happen under flock, so concurrent runs (a run
// cut off by a crash and its re-run, or two sessions) cannot race; a
// single short append cannot be torn by a kill.
const recordKeySh = `#!/bin/sh
set -eu
input=$(cat)
key=$(printf '%s' "$input" | sed -n 's/.*"_idempotency_key":"\([^"]*\)".*/\1/p')
if [ -z "$key" ]; then
  echo "no _idempotency_key in the input: $input" >&2
  exit 2
fi
printf '%s\n' "$key" >> seen.log
exec 9>> applied.lock
flock 9
touch applied.log
if ! grep -qxF -e "$key" applied.log; then
  printf '%s\n' "$key" >> applied.log
fi
exec 9>&-
printf '{"key":"%s"}\n' "$key"
`

// counterSh is the non-idempotent tool: every run appends the call's
// idempotency key (<session>/<call>, from the environment) to counter.log.
// The pauses around the append widen the moments a kill can find the
// call started but not recorded, before or after its effect.
const counterSh = `#!/bin/sh
set -eu
cat > /dev/null
` + sleepRandom + `sleep_ms 0 150
printf '%s\n' "${AGENTRT_IDEMPOTENCY_KEY:?no idempotency key}" >> counter.log
sleep_ms 0 150
printf '{"counted":"%s"}\n' "$AGENTRT_TOOL_CALL_ID"
`

// slowSh is the read-only tool: it sleeps 200-800 ms and says ok.
const slowSh = `#!/bin/sh
set -eu
cat > /dev/null
` + sleepRandom + `sleep_ms 200 800
echo '{"ok":true}'
`

// workspace is the harness's directory tree.
type workspace struct {
	root    string // agentrt.yaml, crash.replay.yaml, tools/
	config  string // root/agentrt.yaml
	dataDir string // root/data: agentrt.db, api-token
	work    string // root/workspace: the agent's workspace and the tools' logs
	logs    string // root/logs: each daemon's stdout and stderr
	token   string
}

// writeWorkspace lays the workspace out under root, with the API token
// written before the first start (so serve never prints one).
func writeWorkspace(t *testing.T, root string) *workspace {
	t.Helper()
	return writeWorkspaceOf(t, root, workers, leaseTTL)
}

// writeWorkspaceOf is writeWorkspace with n workers a daemon and leases
// of ttl.
func writeWorkspaceOf(t *testing.T, root string, n int, ttl time.Duration) *workspace {
	t.Helper()
	return layOut(t, root, []wsFile{
		{"agentrt.yaml", fmt.Sprintf(configYAML, ttl, pollInterval, n), 0o600},
		{"crash.replay.yaml", script, 0o600},
		{"tools/record_key.sh", recordKeySh, 0o755},
		{"tools/counter.sh", counterSh, 0o755},
		{"tools/slow.sh", slowSh, 0o755},
	})
}

// wsFile is a file of a workspace, its name relative to the root.
type wsFile struct {
	name, text string
	mode       os.FileMode
}

// layOut makes a workspace's directories under root and writes files
// there (agentrt.yaml among them) and the API token.
func layOut(t *testing.T, root string, files []wsFile) *workspace {
	t.Helper()
	ws := &workspace{
		root:    root,
		config:  filepath.Join(root, "agentrt.yaml"),
		dataDir: filepath.Join(root, "data"),
		work:    filepath.Join(root, "workspace"),
		logs:    filepath.Join(root, "logs"),
		token:   "crash-harness-token-0123456789abcdef",
	}
	for _, d := range []string{ws.dataDir, ws.work, ws.logs, filepath.Join(root, "tools")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	files = append(files, wsFile{"data/api-token", ws.token + "\n", 0o600})
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(root, f.name), []byte(f.text), f.mode); err != nil {
			t.Fatal(err)
		}
	}
	return ws
}
