package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentrt/agentrt/config"
	"github.com/agentrt/agentrt/configure"
	"github.com/agentrt/agentrt/model"
)

// DoctorReport is what agentrt doctor finds, and its --json output.
type DoctorReport struct {
	Config string `json:"config"`
	// OK is false when an agent has no model it can be routed to.
	OK     bool          `json:"ok"`
	Models []DoctorModel `json:"models"`
	Agents []DoctorAgent `json:"agents"`
}

// DoctorModel is one configured model and whether it can be called.
type DoctorModel struct {
	// Key is the model's key under models, or "<agent>/default" for a
	// model written inline under an agent.
	Key      string `json:"key"`
	Provider string `json:"provider"`
	Model    string `json:"model,omitempty"`
	BaseURL  string `json:"baseUrl,omitempty"`
	// KeySource is env (KeyEnv names the variable), inline (in the file),
	// file (api_key_file; KeyFile names it) or none (the provider needs no
	// key). The key itself is never shown.
	KeySource  string   `json:"keySource"`
	KeyEnv     string   `json:"keyEnv,omitempty"`
	KeyFile    string   `json:"keyFile,omitempty"`
	KeyPresent bool     `json:"keyPresent"`
	Priced     bool     `json:"priced"`
	Caps       []string `json:"capabilities"`
	// Problem says why the model cannot be called; empty when it can.
	Problem string `json:"problem,omitempty"`
}

// DoctorAgent is how routing would treat one agent's next turn.
type DoctorAgent struct {
	Name       string   `json:"name"`
	Candidates []string `json:"candidates"`
	// Selected is the candidate a turn would start with, and Fallbacks
	// the rest of the chain; both empty when routing is not possible.
	Selected  string            `json:"selected,omitempty"`
	Fallbacks []string          `json:"fallbacks"`
	Excluded  []model.Exclusion `json:"excluded"`
	Reason    string            `json:"reason"`
}

func newDoctorCmd() *cobra.Command {
	var configPath string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "doctor [--config FILE] [--json]",
		Short: "Check the configuration: providers, API keys and routing",
		Long: `Load agentrt.yaml and report which model providers are configured, whether their
API keys are present (keys are never printed), and which model each agent's next
turn would be routed to.

Exit codes: 0 every agent can be routed, 1 an agent has no usable model,
2 the configuration does not load.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			rep, err := doctor(configPath)
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				if err := enc.Encode(rep); err != nil {
					return err
				}
			} else {
				printDoctor(cmd.OutOrStdout(), rep)
			}
			if !rep.OK {
				return &exitError{code: ExitFailed, err: fmt.Errorf("")}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&configPath, "config", "agentrt.yaml", "the agentrt.yaml to check")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	return cmd
}

func doctor(path string) (*DoctorReport, error) {
	cfg, file, err := configure.Load(path)
	if err != nil {
		return nil, configErr(err)
	}
	rep := &DoctorReport{Config: file.Path, OK: true, Models: []DoctorModel{}, Agents: []DoctorAgent{}}
	for _, key := range sortedKeys(file.Models) {
		rep.Models = append(rep.Models, doctorModel(key, file.Models[key]))
	}
	for _, name := range file.AgentNames() {
		fa := file.Agents[name]
		for _, m := range fa.Models {
			if m.Key == config.InlineModel {
				rep.Models = append(rep.Models, doctorModel(name+"/"+config.InlineModel, m))
			}
		}
		a := cfg.Agents[name]
		route := model.Decide(&a.Profile, a.Models)
		da := DoctorAgent{Name: name, Fallbacks: []string{}, Excluded: route.Excluded, Reason: route.Reason}
		if da.Excluded == nil {
			da.Excluded = []model.Exclusion{}
		}
		for _, c := range a.Models {
			da.Candidates = append(da.Candidates, c.Name)
		}
		if len(route.Eligible) == 0 {
			rep.OK = false
		} else {
			da.Selected = route.Eligible[0].Name
			for _, c := range route.Eligible[1:] {
				da.Fallbacks = append(da.Fallbacks, c.Name)
			}
		}
		rep.Agents = append(rep.Agents, da)
	}
	return rep, nil
}

func doctorModel(key string, m *config.Model) DoctorModel {
	d := DoctorModel{Key: key, Provider: m.Provider, Model: m.Name, BaseURL: m.BaseURL, Caps: m.Capabilities,
		Priced: m.Price != (config.Price{}), KeySource: "none", KeyPresent: true}
	switch {
	case m.Provider == config.ProviderReplay:
	case m.APIKeyFile != "":
		d.KeySource, d.KeyFile = "file", m.APIKeyFile
	case m.APIKey != "":
		d.KeySource = "inline"
	case m.APIKeyEnv != "":
		d.KeySource, d.KeyEnv = "env", m.APIKeyEnv
		_, missing := configure.APIKey(m)
		d.KeyPresent, d.Problem = missing == "", missing
	}
	return d
}

func printDoctor(w io.Writer, rep *DoctorReport) {
	fmt.Fprintf(w, "config %s\n\nmodels\n", rep.Config)
	for _, m := range rep.Models {
		name := m.Provider
		if m.Model != "" {
			name += "/" + m.Model
		}
		key := "no key needed"
		switch m.KeySource {
		case "inline":
			key = "key in the config file"
		case "file":
			key = "key from " + m.KeyFile
		case "env":
			key = "key from $" + m.KeyEnv
			if !m.KeyPresent {
				key = "✘ $" + m.KeyEnv + " is not set"
			}
		}
		price := "no price"
		if m.Priced {
			price = "priced"
		}
		mark := "✔"
		if m.Problem != "" {
			mark = "✘"
		}
		fmt.Fprintf(w, "  %s %-18s %-40s %s · %s · %s\n", mark, m.Key, name, key, price, strings.Join(m.Caps, ","))
	}
	fmt.Fprintln(w, "\nagents")
	for _, a := range rep.Agents {
		if a.Selected == "" {
			fmt.Fprintf(w, "  ✘ %-18s cannot be routed: %s\n", a.Name, a.Reason)
		} else {
			chain := ""
			if len(a.Fallbacks) > 0 {
				chain = " (then " + strings.Join(a.Fallbacks, ", ") + ")"
			}
			fmt.Fprintf(w, "  ✔ %-18s → %s%s\n", a.Name, a.Selected, chain)
		}
		for _, ex := range a.Excluded {
			fmt.Fprintf(w, "      excluded %s: %s\n", ex.Candidate, ex.Reason)
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
