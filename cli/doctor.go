package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentrt/agentrt/config"
	"github.com/agentrt/agentrt/configure"
	"github.com/agentrt/agentrt/model"
)

// DoctorReport is what agentrt doctor finds, and its --json output.
type DoctorReport struct {
	Config string `json:"config"`
	// Store is the store the config selects ($AGENTRT_STORE_URL over its
	// store.url): "sqlite FILE", or "postgres URL" without the URL's
	// user, password and query.
	Store string `json:"store"`
	// OK is false when an agent has no model it can be routed to.
	OK     bool          `json:"ok"`
	Models []DoctorModel `json:"models"`
	Agents []DoctorAgent `json:"agents"`
	// MCP is a check per MCP server of the config: that it starts (or
	// answers) and lists its tools. A server that does not is a warning:
	// the runtime runs without its tools, so OK stays as it is.
	MCP []MCPServerInfo `json:"mcp,omitempty"`
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
	// Probe is what --probe found calling the endpoint; absent without
	// --probe.
	Probe *DoctorProbe `json:"probe,omitempty"`
}

// DoctorProbe is the outcome of asking a model's endpoint for its models
// (doctor --probe): a request that generates nothing, but needs the
// network, the base URL and the key to be right.
type DoctorProbe struct {
	// Status is ok (the endpoint answered), failed or skipped (not
	// called: Reason says why).
	Status string `json:"status"`
	// LatencyMs is how long the endpoint took to answer or fail.
	LatencyMs int64 `json:"latencyMs"`
	// Models is how many models the endpoint listed, and Listed whether
	// the configured one is among them (an alias may be served without
	// being listed: worth a look, not a failure).
	Models int  `json:"models,omitempty"`
	Listed bool `json:"listed"`
	// Kind is the failure's kind (auth, network, timeout,
	// invalid_request, server, …: model.ErrorKind) and StatusCode its
	// HTTP status, when there was one.
	Kind       string `json:"kind,omitempty"`
	StatusCode int    `json:"statusCode,omitempty"`
	// Reason says why the probe failed or was skipped. It never holds
	// the API key.
	Reason string `json:"reason,omitempty"`
}

// Probe statuses.
const (
	probeOK      = "ok"
	probeFailed  = "failed"
	probeSkipped = "skipped"
)

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
	var asJSON, probe bool
	var probeTimeout time.Duration
	cmd := &cobra.Command{
		Use:   "doctor [--config FILE] [--probe] [--json]",
		Short: "Check the configuration: providers, API keys and routing",
		Long: `Load agentrt.yaml and report which model providers are configured, whether their
API keys are present (keys are never printed), and which model each agent's next
turn would be routed to.

With --probe, also call the endpoint of every model an agent uses, all at once: ask it for
its models (GET models for the OpenAI kinds and OpenAI-compatible servers, GET v1/models for
Anthropic), which costs no tokens but needs the network, the base URL and the key to be
right. Each model then shows "probe ok" with the latency and whether the endpoint lists the
configured model, or "probe failed" with why (auth: the key was refused; network: nothing
answered; timeout; invalid_request with HTTP 404: the base URL is wrong; …). Replay models need no probe, and a
model whose key is missing is not called.

For a config with mcp_servers, every server is reached as agentrt mcp list does (a stdio
server started in the sandbox, within --probe-timeout) and must list its tools: one that does
not is a warning with the reason (the runtime runs without its tools), not a failure.

Exit codes: 0 every agent can be routed (and, with --probe, every probed endpoint
answered), 1 an agent has no usable model or a probe failed, 2 the configuration does
not load.`,
		Example: `  agentrt doctor --config agentrt.yaml
  agentrt doctor --config agentrt.yaml --probe --probe-timeout 5s`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if probeTimeout <= 0 {
				return usageErr("invalid --probe-timeout %s: must be positive", probeTimeout)
			}
			rep, providers, err := doctor(configPath)
			if err != nil {
				return err
			}
			if err := checkMCP(commandContext(cmd), rep, configPath, probeTimeout); err != nil {
				return err
			}
			if probe {
				probeModels(commandContext(cmd), rep, providers, probeTimeout)
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
	cmd.Flags().BoolVar(&probe, "probe", false, "call each model's endpoint (a models list) and report its latency or error")
	cmd.Flags().DurationVar(&probeTimeout, "probe-timeout", 10*time.Second, "how long each probe may take")
	return cmd
}

// doctorProvider is a model's provider as the runtime would build it.
type doctorProvider struct {
	p           model.Provider
	unavailable string // why it cannot be called (its key is missing)
}

// doctor reads the config at path into a report, and returns the
// providers of the models agents use, by the report's model key.
func doctor(path string) (*DoctorReport, map[string]doctorProvider, error) {
	cfg, file, err := configure.Load(path)
	if err != nil {
		return nil, nil, configErr(err)
	}
	providers := map[string]doctorProvider{}
	rep := &DoctorReport{Config: file.Path, OK: true, Models: []DoctorModel{}, Agents: []DoctorAgent{}}
	sel, err := selectStore("", file.Store)
	if err != nil {
		return nil, nil, err
	}
	rep.Store = "sqlite " + filepath.Join(file.DataDir, "agentrt.db")
	if sel.URL != "" {
		rep.Store = "postgres " + config.StoreLocation(sel.URL)
	}
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
			key := c.Name
			if key == config.InlineModel {
				key = name + "/" + config.InlineModel
			}
			providers[key] = doctorProvider{p: c.Provider, unavailable: c.Unavailable}
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
	return rep, providers, nil
}

// checkMCP reaches every MCP server of the config at path, at once, each
// within timeout, as agentrt mcp list does.
func checkMCP(ctx context.Context, rep *DoctorReport, path string, timeout time.Duration) error {
	_, m, err := openMCP(&mcpCommon{config: path, timeout: timeout})
	if err != nil {
		return err
	}
	defer m.Close()
	if len(m.Servers()) > 0 {
		rep.MCP = pingServers(ctx, m, m.Servers(), timeout)
	}
	return nil
}

// probeModels probes every model of rep an agent uses, at once, each
// within timeout, and fails rep for every probe that fails.
func probeModels(ctx context.Context, rep *DoctorReport, providers map[string]doctorProvider, timeout time.Duration) {
	var wg sync.WaitGroup
	for i := range rep.Models {
		m := &rep.Models[i]
		dp, used := providers[m.Key]
		switch {
		case !used:
			m.Probe = &DoctorProbe{Status: probeSkipped, Reason: "no agent uses it"}
			continue
		case dp.unavailable != "":
			m.Probe = &DoctorProbe{Status: probeSkipped, Reason: dp.unavailable}
			continue
		}
		prober, ok := dp.p.(model.Prober)
		if !ok {
			m.Probe = &DoctorProbe{Status: probeSkipped, Reason: m.Provider + " needs no probe"}
			continue
		}
		wg.Go(func() { m.Probe = probeOne(ctx, prober, timeout) })
	}
	wg.Wait()
	for i := range rep.Models {
		if p := rep.Models[i].Probe; p != nil && p.Status == probeFailed {
			rep.OK = false
			rep.Models[i].Problem = cmp.Or(rep.Models[i].Problem, "its endpoint failed the probe: "+cmp.Or(p.Kind, "error")+": "+p.Reason)
		}
	}
}

// probeOne probes one endpoint.
func probeOne(ctx context.Context, p model.Prober, timeout time.Duration) *DoctorProbe {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	res, err := p.Probe(ctx)
	dp := &DoctorProbe{Status: probeOK, LatencyMs: time.Since(start).Milliseconds()}
	var me *model.Error
	switch {
	case err == nil:
		dp.Models, dp.Listed = res.Models, res.Listed
	case errors.As(err, &me):
		dp.Status, dp.Kind, dp.StatusCode, dp.Reason = probeFailed, string(me.Kind), me.StatusCode, cmp.Or(me.Message, "no message")
	case errors.Is(err, context.DeadlineExceeded):
		dp.Status, dp.Kind, dp.Reason = probeFailed, string(model.ErrTimeout), "no answer within --probe-timeout "+timeout.String()
	default:
		dp.Status, dp.Reason = probeFailed, err.Error()
	}
	return dp
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
	fmt.Fprintf(w, "config %s\n", rep.Config)
	if !strings.HasPrefix(rep.Store, "sqlite ") { // the default goes without saying
		fmt.Fprintf(w, "store  %s\n", rep.Store)
	}
	fmt.Fprintf(w, "\nmodels\n")
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
		if p := m.Probe; p != nil {
			fmt.Fprintf(w, "      %s\n", probeText(p))
		}
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
	if len(rep.MCP) == 0 {
		return
	}
	fmt.Fprintln(w, "\nmcp servers")
	for _, s := range rep.MCP {
		if s.Status == mcpOK {
			fmt.Fprintf(w, "  ✔ %-18s %s: started, %d tools, protocol %s (%dms)\n", s.Name, s.Transport, s.Tools, s.ProtocolVersion, s.LatencyMs)
		} else {
			fmt.Fprintf(w, "  ! %-18s %s: warning: its tools will not be offered: %s\n", s.Name, s.Transport, s.Error)
		}
	}
}

// probeText says what a probe found, in one line.
func probeText(p *DoctorProbe) string {
	latency := "<1ms"
	if p.LatencyMs > 0 {
		latency = (time.Duration(p.LatencyMs) * time.Millisecond).String()
	}
	switch p.Status {
	case probeSkipped:
		return "probe skipped: " + p.Reason
	case probeFailed:
		what := p.Kind
		if p.StatusCode != 0 {
			what += fmt.Sprintf(" (HTTP %d)", p.StatusCode)
		}
		return fmt.Sprintf("✘ probe failed after %s: %s: %s", latency, cmp.Or(what, "error"), oneLine(p.Reason, 200))
	}
	listed := "the model is listed"
	if !p.Listed {
		listed = "the model is not among them (an alias may still be served)"
	}
	return fmt.Sprintf("probe ok in %s: %d models; %s", latency, p.Models, listed)
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
