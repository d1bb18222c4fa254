package config

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// DefaultDataDir is the data directory, relative to the config file's
// folder, used when the file names none.
const DefaultDataDir = ".agentrt"

// DefaultListen is the server address used when the file names none.
const DefaultListen = "127.0.0.1:7420"

// DefaultMaxToolHops is an agent's hop limit when the file sets none.
const DefaultMaxToolHops = 8

// ProviderReplay is the model provider that plays back a scripted
// conversation; it is the only provider supported today.
const ProviderReplay = "replay"

// Limits on an agent's max_tool_hops.
const (
	minToolHops = 1
	maxToolHops = 1000
)

// File is a loaded and validated agentrt.yaml.
type File struct {
	// Path is the file's absolute path when it came from Load, or the name
	// given to Parse.
	Path string
	// Dir is the absolute folder relative paths in the file resolve against.
	Dir string
	// DataDir is the absolute directory holding the SQLite file, blobs and
	// the API token.
	DataDir string
	Server  Server
	// Agents maps an agent's name to the agent. It is never empty.
	Agents map[string]*Agent
	// Tools maps a declared tool's name to the tool. It is never nil.
	Tools map[string]*Tool
}

// Server holds the HTTP server's settings.
type Server struct {
	// Listen is the host:port the daemon listens on.
	Listen string
}

// Agent is one agent definition.
type Agent struct {
	// Name is the agent's key under agents.
	Name         string
	Instructions string
	Model        Model
	// Tools lists the tools the agent may call, declared or builtin, in the
	// order the file lists them.
	Tools []string
	// RequireCompletion makes the run end only through the completion tool.
	RequireCompletion bool
	// MaxToolHops bounds the model ↔ tools round trips of one run.
	MaxToolHops int
	// Workspace is the absolute directory for file tools and the working
	// directory of command tools; empty when the agent has none.
	Workspace string
}

// Model says which model provider answers for an agent.
type Model struct {
	// Provider is the provider's kind; only ProviderReplay is supported.
	Provider string
	// Script is the absolute path of the replay script; empty for other
	// providers.
	Script string
	// Name is the provider's model name (the YAML key "model"), if any.
	Name string
}

// Tool is a tool declared in the file and run as a command.
type Tool struct {
	// Name is the tool's key under tools.
	Name        string
	Description string
	// InputSchema is the JSON Schema for the tool's input, converted from
	// YAML with the key order kept. Its type is "object".
	InputSchema json.RawMessage
	// Command is the program and its arguments. Command[0] is an absolute
	// path when the file wrote it as a path, and a bare name otherwise.
	Command []string
	// Timeout bounds one call; zero means the tool layer's default.
	Timeout time.Duration
	// Env holds extra environment variables for the command; nil when none.
	Env         map[string]string
	Annotations Annotations
}

// Annotations are hints about a tool's effects, as in MCP tool annotations.
type Annotations struct {
	ReadOnly    bool
	Destructive bool
	Idempotent  bool
}

// Options tune how a file is validated.
type Options struct {
	// Builtins names the built-in tools, which agents may list without
	// declaring them and which declared tools may not shadow.
	Builtins []string
}

// AgentNames returns the names of the file's agents, sorted.
func (f *File) AgentNames() []string {
	names := make([]string, 0, len(f.Agents))
	for name := range f.Agents {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// Load reads and validates the file at path. Problems with the file's
// content are returned as Errors naming path as given.
func Load(path string, opts Options) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading config: %w", err)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("resolving config path: %w", err)
	}
	f, err := Parse(path, data, filepath.Dir(abs), opts)
	if err != nil {
		return nil, err
	}
	f.Path = abs
	return f, nil
}

// Parse validates data as the content of an agentrt.yaml. Name is used in
// error positions and as File.Path; relative paths in the file resolve
// against baseDir (the current directory when empty). Every problem found
// is returned, as Errors.
func Parse(name string, data []byte, baseDir string, opts Options) (*File, error) {
	dir, err := filepath.Abs(baseDir)
	if err != nil {
		return nil, fmt.Errorf("resolving base directory: %w", err)
	}
	d := newDecoder(name, dir, opts)
	f := d.decode(data)
	if errs := d.errors(); errs != nil {
		return nil, errs
	}
	return f, nil
}
