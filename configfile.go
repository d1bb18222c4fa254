package agentrt

import (
	"fmt"
	"slices"

	"github.com/agentrt/agentrt/config"
	"github.com/agentrt/agentrt/model/replay"
	"github.com/agentrt/agentrt/tool"
	"github.com/agentrt/agentrt/tool/builtin"
	"github.com/agentrt/agentrt/tool/command"
)

// LoadConfig reads an agentrt.yaml file and builds the Config it describes:
// its command tools, its agents with their model providers, and its data
// directory. Errors in the file (or in a replay script it names) carry
// file:line:column.
func LoadConfig(path string) (Config, *config.File, error) {
	f, err := config.Load(path, config.Options{Builtins: builtin.Names()})
	if err != nil {
		return Config{}, nil, err
	}
	cfg, err := FromFile(f)
	return cfg, f, err
}

// FromFile builds a Config from a parsed agentrt.yaml.
func FromFile(f *config.File) (Config, error) {
	cfg := Config{DataDir: f.DataDir, Agents: make(map[string]*Agent, len(f.Agents))}
	for _, name := range sortedKeys(f.Tools) {
		t := f.Tools[name]
		ct, err := command.New(tool.Spec{
			Name:        t.Name,
			Description: t.Description,
			InputSchema: t.InputSchema,
			Annotations: tool.Annotations{ReadOnly: t.Annotations.ReadOnly, Destructive: t.Annotations.Destructive, Idempotent: t.Annotations.Idempotent},
			Timeout:     t.Timeout,
			Source:      "command",
		}, command.Config{Argv: t.Command, Dir: f.Dir, Env: t.Env})
		if err != nil {
			return Config{}, fmt.Errorf("tool %q: %w", name, err)
		}
		cfg.Tools = append(cfg.Tools, ct)
	}
	for _, name := range f.AgentNames() {
		a := f.Agents[name]
		var p *replay.Provider
		switch a.Model.Provider {
		case config.ProviderReplay:
			s, err := replay.Load(a.Model.Script)
			if err != nil {
				return Config{}, err
			}
			p = replay.New(s)
		default:
			return Config{}, fmt.Errorf("agent %q: model provider %q is not supported", name, a.Model.Provider)
		}
		cfg.Agents[name] = &Agent{
			Instructions:      a.Instructions,
			Provider:          p,
			Tools:             a.Tools,
			RequireCompletion: a.RequireCompletion,
			MaxToolHops:       a.MaxToolHops,
			Workspace:         a.Workspace,
		}
	}
	return cfg, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
