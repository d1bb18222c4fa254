package config

import (
	"fmt"
	"io"
	"net/url"
	"os"
	"slices"
	"strings"

	"github.com/agentrt/agentrt/internal/yamlpos"
)

// The keys of model, profile and budget mappings.
var (
	modelKeys = []string{"provider", "model", "script", "base_url", "api_key_env", "api_key", "api_key_file", "price",
		"context_window", "max_output_tokens", "capabilities", "typical_latency", "timeout", "idle_timeout",
		"temperature", "reasoning_effort", "reasoning_summary", "thinking_budget", "headers"}
	priceKeys   = []string{"input", "cached_input", "output"}
	profileKeys = []string{"kind", "requires", "min_context_window", "prefer", "fallback"}
	budgetsKeys = []string{"session", "tenant", "low_threshold", "on_exceeded"}
	budgetKeys  = []string{"max_tokens", "max_cost_usd"}
	tenantKeys  = []string{"max_tokens", "max_cost_usd", "window"}

	capabilityNames = []string{"tools", "vision", "json_output", "reasoning", "streaming"}
	preferences     = []string{"order", "cost", "latency"}
	efforts         = []string{"minimal", "low", "medium", "high"}
	summaries       = []string{"auto", "concise", "detailed"}
)

// providerOnly names the model keys that apply to some provider kinds only.
var providerOnly = map[string][]string{
	"script":            {ProviderReplay},
	"base_url":          {ProviderOpenAIChat, ProviderOpenAIResponses, ProviderAnthropic, ProviderOpenAICompatible},
	"api_key_env":       {ProviderOpenAIChat, ProviderOpenAIResponses, ProviderAnthropic, ProviderOpenAICompatible},
	"api_key":           {ProviderOpenAIChat, ProviderOpenAIResponses, ProviderAnthropic, ProviderOpenAICompatible},
	"api_key_file":      {ProviderOpenAIChat, ProviderOpenAIResponses, ProviderAnthropic, ProviderOpenAICompatible},
	"timeout":           {ProviderOpenAIChat, ProviderOpenAIResponses, ProviderAnthropic, ProviderOpenAICompatible},
	"idle_timeout":      {ProviderOpenAIChat, ProviderOpenAIResponses, ProviderAnthropic, ProviderOpenAICompatible},
	"temperature":       {ProviderOpenAIChat, ProviderOpenAIResponses, ProviderAnthropic, ProviderOpenAICompatible},
	"headers":           {ProviderOpenAIChat, ProviderOpenAIResponses, ProviderAnthropic, ProviderOpenAICompatible},
	"reasoning_effort":  {ProviderOpenAIChat, ProviderOpenAIResponses, ProviderOpenAICompatible},
	"reasoning_summary": {ProviderOpenAIResponses},
	"thinking_budget":   {ProviderAnthropic},
}

// anthropicDefaultOutput is the max_tokens the Anthropic adapter sends
// when a model sets no max_output_tokens.
const anthropicDefaultOutput = 4096

// defaultCapabilities are a provider kind's capabilities when a model
// declares none.
func defaultCapabilities(provider string) []string {
	if provider == ProviderReplay {
		return []string{"tools"}
	}
	return []string{"tools", "streaming"}
}

// modelRef is a model an agent names by key, resolved once every model
// is known.
type modelRef struct {
	agent *Agent
	index int
	// summary, when set, is agent's context whose summary_model this is
	// (index is unused).
	summary *Context
	key     string
	pos     yamlpos.Pos
}

func (d *decoder) models(e yamlpos.Field, out map[string]*Model) {
	m, _ := d.mapping(e, "models")
	for _, me := range m.Fields() {
		where := fmt.Sprintf("model %q", me.Key)
		if !namePattern.MatchString(me.Key) {
			d.errorAt(me.KeyPos, "invalid model key %q: use 1 to 64 letters, digits, '_' or '-'", me.Key)
		}
		mm, st := d.mapping(me, where)
		if st == valNull {
			d.errorAt(me.KeyPos, "%s must be a mapping with at least a provider", where)
		}
		if st != valOK {
			continue
		}
		out[me.Key] = d.modelDef(me.Key, me.KeyPos, mm, where)
	}
}

// agentModels decodes an agent's model or models key into a.Models,
// recording references to declared models for resolveModels.
func (d *decoder) agentModels(f yamlpos.Field, a *Agent, where string) {
	v := f.Value()
	if v == nil {
		return
	}
	switch {
	case f.Key == "model" && v.Kind == yamlpos.Map:
		a.Models = []*Model{d.modelDef(InlineModel, f.KeyPos, v, "model of "+where)}
	case f.Key == "model" && v.Scalar() && v.Kind != yamlpos.Null:
		a.Models = []*Model{nil}
		d.modelRefs = append(d.modelRefs, modelRef{agent: a, key: v.Text, pos: v.Pos})
	case f.Key == "model":
		d.errorAt(v.Pos, "model in %s must be the key of a model under models, or a mapping, got %s", where, v.Describe())
	default: // models
		items, st := d.present(f, "models in "+where, "a list of model keys", is(yamlpos.Seq))
		if st != valOK {
			return
		}
		if len(items.Items()) == 0 {
			d.errorAt(items.Pos, "models in %s must not be empty", where)
		}
		var seen []string
		for _, item := range items.Items() {
			switch {
			case item == nil:
			case !item.Scalar() || item.Kind == yamlpos.Null:
				d.errorAt(item.Pos, "models in %s must list keys of models declared under models, got %s", where, item.Describe())
			case slices.Contains(seen, item.Text):
				d.errorAt(item.Pos, "model %q is listed twice in %s", item.Text, where)
			default:
				seen = append(seen, item.Text)
				d.modelRefs = append(d.modelRefs, modelRef{agent: a, index: len(a.Models), key: item.Text, pos: item.Pos})
				a.Models = append(a.Models, nil)
			}
		}
	}
}

// resolveModels fills in the models agents name by key.
func (d *decoder) resolveModels(f *File) {
	known := make([]string, 0, len(f.Models))
	for k := range f.Models {
		known = append(known, k)
	}
	slices.Sort(known)
	for _, r := range d.modelRefs {
		m, ok := f.Models[r.key]
		if !ok {
			hint := didYouMean(r.key, known)
			if len(known) == 0 {
				hint = "; declare it under models, or write the model inline as a mapping"
			}
			use := "model"
			if r.summary != nil {
				use = "summary_model"
			}
			d.errorAt(r.pos, "agent %q uses %s %q, which is not declared under models%s", r.agent.Name, use, r.key, hint)
			continue
		}
		if r.summary != nil {
			r.summary.SummaryModel = m
			continue
		}
		r.agent.Models[r.index] = m
	}
	for _, a := range f.Agents {
		a.Models = slices.DeleteFunc(a.Models, func(m *Model) bool { return m == nil })
	}
}

// modelDef decodes one model mapping v (declared at keyPos).
func (d *decoder) modelDef(key string, keyPos yamlpos.Pos, v *yamlpos.Value, where string) *Model {
	m := &Model{Key: key}
	var provider *yamlpos.Value
	set := map[string]yamlpos.Pos{}
	for _, f := range v.Fields() {
		label := f.Key + " in " + where
		if fv := f.Value(); fv != nil && fv.Kind != yamlpos.Null {
			set[f.Key] = f.KeyPos
		}
		switch f.Key {
		case "provider":
			if s, st := d.str(f, label); st == valOK {
				m.Provider, provider = s, f.Value()
			}
		case "model":
			if s, st := d.str(f, label); st == valOK {
				m.Name = s
			}
		case "script":
			m.Script, _ = d.path(f, "script", " in "+where, 0)
		case "base_url":
			if s, st := d.str(f, label); st == valOK {
				if u, err := url.Parse(s); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
					d.errorAt(f.Value().Pos, "%s must be an http or https URL such as http://localhost:11434/v1, got %q", label, s)
				} else {
					m.BaseURL = s
				}
			}
		case "api_key_env":
			if s, st := d.str(f, label); st == valOK {
				if !envNamePattern.MatchString(s) {
					d.errorAt(f.Value().Pos, "%s must be an environment variable name, got %q", label, s)
				} else {
					m.APIKeyEnv = s
				}
			}
		case "api_key":
			// The value is a secret: errors about it never quote it.
			if s, st := d.str(f, label); st == valOK {
				if strings.TrimSpace(s) == "" {
					d.errorAt(f.Value().Pos, "%s must not be empty", label)
				}
				m.APIKey = s
			}
		case "api_key_file":
			if p, st := d.path(f, "api_key_file", " in "+where, 0); st == valOK {
				m.APIKeyFile = p
				m.APIKey = d.keyFile(f.Value().Pos, p, label)
			}
		case "price":
			d.price(f, where, &m.Price)
		case "context_window":
			if n, st := d.count(f, label, 1, 1<<31-1); st == valOK {
				m.ContextWindow = int(n)
			}
		case "max_output_tokens":
			if n, st := d.count(f, label, 1, 1<<31-1); st == valOK {
				m.MaxOutputTokens = int(n)
			}
		case "capabilities":
			m.Capabilities = d.capabilityList(f, label)
			if m.Capabilities == nil {
				m.Capabilities = []string{}
			}
		case "typical_latency":
			m.TypicalLatency, _ = d.duration(f, label)
		case "timeout":
			m.Timeout, _ = d.duration(f, label)
		case "idle_timeout":
			m.IdleTimeout, _ = d.duration(f, label)
		case "temperature":
			if n, st := d.number(f, label); st == valOK {
				if n > 2 {
					d.errorAt(f.Value().Pos, "%s must be between 0 and 2, got %g", label, n)
				} else {
					m.Temperature = &n
				}
			}
		case "reasoning_effort":
			m.ReasoningEffort, _ = d.oneOf(f, label, efforts)
		case "reasoning_summary":
			m.ReasoningSummary, _ = d.oneOf(f, label, summaries)
		case "thinking_budget":
			if n, st := d.count(f, label, 1024, 1<<31-1); st == valOK {
				m.ThinkingBudget = int(n)
			}
		case "headers":
			m.Headers = d.headers(f, where)
		default:
			d.unknownKey(f, where, modelKeys)
		}
	}
	if provider == nil {
		if _, ok := set["provider"]; !ok {
			d.errorAt(keyPos, "provider is required in %s (one of %s)", where, strings.Join(Providers, ", "))
		}
		return m
	}
	if !slices.Contains(Providers, m.Provider) {
		hint := didYouMean(m.Provider, Providers)
		switch m.Provider {
		case "openai":
			hint = "; did you mean openai_chat or openai_responses?"
		case "anthropic":
			hint = "; did you mean anthropic_messages?"
		}
		if hint == "" {
			hint = " (one of " + strings.Join(Providers, ", ") + ")"
		}
		d.errorAt(provider.Pos, "unknown model provider %q in %s%s", m.Provider, where, hint)
		return m
	}
	for k, pos := range set {
		if kinds, ok := providerOnly[k]; ok && !slices.Contains(kinds, m.Provider) {
			d.errorAt(pos, "%s does not apply to provider %s in %s", k, m.Provider, where)
		}
	}
	_, hasScript := set["script"]
	_, hasName := set["model"]
	_, hasKey := set["api_key"]
	switch m.Provider {
	case ProviderReplay:
		if !hasScript {
			d.errorAt(keyPos, "script is required in %s for provider %s", where, ProviderReplay)
		}
	case ProviderOpenAICompatible:
		if m.BaseURL == "" && set["base_url"] == (yamlpos.Pos{}) {
			d.errorAt(keyPos, "base_url is required in %s for provider %s (for example http://localhost:11434/v1 for Ollama)", where, m.Provider)
		}
	}
	if m.Provider != ProviderReplay && !hasName {
		d.errorAt(keyPos, "model is required in %s for provider %s (the provider's model name)", where, m.Provider)
	}
	_, hasKeyEnv := set["api_key_env"]
	keyFilePos, hasKeyFile := set["api_key_file"]
	switch {
	case hasKeyEnv && hasKey:
		d.errorAt(set["api_key"], "api_key and api_key_env are exclusive in %s", where)
	case hasKeyFile && hasKey:
		d.errorAt(keyFilePos, "api_key_file and api_key are exclusive in %s", where)
	case hasKeyFile && hasKeyEnv:
		d.errorAt(keyFilePos, "api_key_file and api_key_env are exclusive in %s", where)
	}
	if m.ThinkingBudget > 0 && m.Provider == ProviderAnthropic {
		limit, what := m.MaxOutputTokens, "max_output_tokens"
		if limit == 0 {
			limit, what = anthropicDefaultOutput, "the default max_output_tokens"
		}
		if m.ThinkingBudget >= limit {
			d.errorAt(set["thinking_budget"], "thinking_budget in %s must be below %s (%d)", where, what, limit)
		}
		if m.Temperature != nil {
			d.errorAt(set["temperature"], "temperature in %s cannot be set with thinking_budget (the API requires the default)", where)
		}
	}
	if m.APIKeyEnv == "" && !hasKey && !hasKeyFile {
		m.APIKeyEnv = DefaultAPIKeyEnv(m.Provider)
	}
	if m.Capabilities == nil {
		m.Capabilities = defaultCapabilities(m.Provider)
	}
	return m
}

// maxKeyFile bounds an api_key_file: it holds one key.
const maxKeyFile = 64 << 10

// keyFile reads the API key in the file at path (api_key_file, at pos):
// its content without the trailing newline. The content is a secret:
// errors about it never quote it.
func (d *decoder) keyFile(pos yamlpos.Pos, path, label string) string {
	f, err := os.Open(path)
	if err != nil {
		d.errorAt(pos, "reading %s: %v", label, err)
		return ""
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxKeyFile+1))
	switch {
	case err != nil:
		d.errorAt(pos, "reading %s: %v", label, err)
		return ""
	case len(b) > maxKeyFile:
		d.errorAt(pos, "%s (%s) is larger than %d KiB; it must hold the API key only", label, path, maxKeyFile>>10)
		return ""
	}
	key := strings.TrimRight(string(b), "\r\n")
	switch {
	case strings.TrimSpace(key) == "":
		d.errorAt(pos, "%s (%s) is empty; it must hold the API key", label, path)
		return ""
	case strings.ContainsAny(key, "\r\n\x00"):
		d.errorAt(pos, "%s (%s) holds more than one line; it must hold the API key only", label, path)
		return ""
	}
	return key
}

func (d *decoder) price(e yamlpos.Field, where string, p *Price) {
	m, _ := d.mapping(e, "price in "+where)
	for _, f := range m.Fields() {
		label := "price." + f.Key + " in " + where
		var dst *float64
		switch f.Key {
		case "input":
			dst = &p.Input
		case "cached_input":
			dst = &p.CachedInput
		case "output":
			dst = &p.Output
		default:
			d.unknownKey(f, "price of "+where, priceKeys)
			continue
		}
		if n, st := d.number(f, label); st == valOK {
			*dst = n
		}
	}
}

func (d *decoder) capabilityList(f yamlpos.Field, label string) []string {
	v, st := d.present(f, label, "a list such as [tools, vision]", is(yamlpos.Seq))
	if st != valOK {
		return nil
	}
	var out []string
	for _, item := range v.Items() {
		switch {
		case item == nil:
		case !item.Scalar() || !slices.Contains(capabilityNames, item.Text):
			d.errorAt(item.Pos, "%s: unknown capability %s%s (known: %s)", label, item.Describe(),
				didYouMean(item.Text, capabilityNames), strings.Join(capabilityNames, ", "))
		case !slices.Contains(out, item.Text):
			out = append(out, item.Text)
		}
	}
	return out
}

func (d *decoder) headers(e yamlpos.Field, where string) map[string]string {
	m, st := d.mapping(e, "headers in "+where)
	if st != valOK {
		return nil
	}
	out := make(map[string]string)
	for _, f := range m.Fields() {
		switch v := f.Value(); {
		case v == nil:
		case !v.Scalar():
			d.errorAt(v.Pos, "header %s in %s must be a string, got %s", f.Key, where, v.Describe())
		default:
			out[f.Key] = v.Text
		}
	}
	return out
}

func (d *decoder) profile(e yamlpos.Field, where string, p *Profile) {
	m, _ := d.mapping(e, "profile in "+where)
	for _, f := range m.Fields() {
		label := "profile." + f.Key + " in " + where
		switch f.Key {
		case "kind":
			if s, st := d.str(f, label); st == valOK {
				p.Kind = s
			}
		case "requires":
			p.Requires = d.capabilityList(f, label)
		case "min_context_window":
			if n, st := d.count(f, label, 0, 1<<31-1); st == valOK {
				p.MinContextWindow = int(n)
			}
		case "prefer":
			if s, st := d.oneOf(f, label, preferences); st == valOK {
				p.Prefer = s
			}
		case "fallback":
			if b, st := d.boolean(f, label); st == valOK {
				p.Fallback = b
			}
		default:
			d.unknownKey(f, "profile of "+where, profileKeys)
		}
	}
}

func (d *decoder) budgets(e yamlpos.Field, b *Budgets) {
	m, _ := d.mapping(e, "budgets")
	for _, f := range m.Fields() {
		label := "budgets." + f.Key
		switch f.Key {
		case "session":
			d.budget(f, label, &b.Session, nil, budgetKeys)
		case "tenant":
			d.budget(f, label, &b.Tenant, &b.TenantWindow, tenantKeys)
		case "low_threshold":
			if n, st := d.number(f, label); st == valOK {
				if n <= 0 || n > 1 {
					d.errorAt(f.Value().Pos, "%s must be above 0 and at most 1 (a fraction of the budget), got %g", label, n)
				} else {
					b.LowThreshold = n
				}
			}
		case "on_exceeded":
			if s, st := d.oneOf(f, label, []string{OnExceededWait, OnExceededFail}); st == valOK {
				b.OnExceeded = s
			}
		default:
			d.unknownKey(f, "budgets", budgetsKeys)
		}
	}
}

func (d *decoder) budget(e yamlpos.Field, where string, b *Budget, window *string, keys []string) {
	m, _ := d.mapping(e, where)
	for _, f := range m.Fields() {
		label := where + "." + f.Key
		switch {
		case f.Key == "max_tokens":
			if n, st := d.count(f, label, 0, 1<<62); st == valOK {
				b.MaxTokens = n
			}
		case f.Key == "max_cost_usd":
			if n, st := d.number(f, label); st == valOK {
				b.MaxCostUSD = n
			}
		case f.Key == "window" && window != nil:
			if s, st := d.oneOf(f, label, []string{WindowTotal, WindowDay, WindowMonth}); st == valOK {
				*window = s
			}
		default:
			d.unknownKey(f, where, keys)
		}
	}
}
