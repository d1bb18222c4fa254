package model

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentrt/agentrt/runtype"
)

// Capability is something a model can do that a task may require.
type Capability string

// Capabilities a task profile may require.
const (
	CapTools      Capability = "tools"       // function / tool calling
	CapVision     Capability = "vision"      // image input
	CapJSONOutput Capability = "json_output" // structured (JSON) output
	CapReasoning  Capability = "reasoning"   // exposes reasoning
	CapStreaming  Capability = "streaming"   // streamed output
)

// Capabilities lists every Capability, for validation and docs.
var Capabilities = []Capability{CapTools, CapVision, CapJSONOutput, CapReasoning, CapStreaming}

// Price is what a model's tokens cost, in US dollars per million tokens.
type Price struct {
	InputPerMTok float64
	// CachedInputPerMTok prices input read from the provider's prompt
	// cache; zero means the input price applies.
	CachedInputPerMTok float64
	OutputPerMTok      float64
}

// Zero reports whether no price is declared.
func (p Price) Zero() bool { return p == Price{} }

// Cost returns what u costs at p, in US dollars.
func (p Price) Cost(u runtype.Usage) float64 {
	cached := p.CachedInputPerMTok
	if cached == 0 {
		cached = p.InputPerMTok
	}
	uncached := max(u.InputTokens-u.CachedInputTokens, 0)
	return (float64(uncached)*p.InputPerMTok + float64(u.CachedInputTokens)*cached + float64(u.OutputTokens)*p.OutputPerMTok) / 1e6
}

// blended is the price routing by cost compares: input plus output.
func (p Price) blended() float64 { return p.InputPerMTok + p.OutputPerMTok }

// Candidate is one model an agent may be routed to.
type Candidate struct {
	// Name identifies the candidate among the agent's candidates.
	Name     string
	Provider Provider
	Price    Price
	// ContextWindow is the model's context window in tokens; zero when
	// not declared (then a profile's minimum cannot be met).
	ContextWindow int
	// MaxOutputTokens caps each response; zero leaves the provider's
	// default. Cost estimates assume a response of this size.
	MaxOutputTokens int
	Capabilities    []Capability
	// TypicalLatency is the declared typical response latency, which
	// routing by latency compares; zero when not declared.
	TypicalLatency time.Duration
	// Unavailable says why the candidate cannot be used now (its API key
	// is not set, say); empty when it can.
	Unavailable string
}

// Has reports whether c declares capability k.
func (c *Candidate) Has(k Capability) bool { return slices.Contains(c.Capabilities, k) }

// Preference orders the candidates that meet a task profile.
type Preference string

// Preferences.
const (
	PreferOrder   Preference = "order"   // as declared
	PreferCost    Preference = "cost"    // cheapest first (input + output price)
	PreferLatency Preference = "latency" // lowest declared typical latency first
)

// Profile is what a task needs of a model and how to choose among the
// models that have it.
type Profile struct {
	// Kind names the kind of task (support, coding, …) for operators.
	Kind     string
	Requires []Capability
	// MinContextWindow is the smallest context window, in tokens, the task
	// accepts; zero for any.
	MinContextWindow int
	Prefer           Preference
	// NoFallback stops a run from moving to the next candidate when its
	// model fails with a retryable error.
	NoFallback bool
}

// Exclusion is a candidate routing set aside, and why.
type Exclusion struct {
	Candidate string `json:"candidate"`
	Reason    string `json:"reason"`
	// Gap names what the candidate lacks: a capability, "context_window"
	// or "credentials".
	Gap string `json:"gap"`
}

// Route is the outcome of routing a task profile over candidates.
type Route struct {
	// Eligible candidates in preference order: the first is selected, the
	// rest are the fallback chain. Empty when routing is not possible.
	Eligible []*Candidate
	Excluded []Exclusion
	// Reason explains the choice for people.
	Reason string
	// Gap names what no candidate has when Eligible is empty: the gaps the
	// candidates share, or all of them.
	Gap string
}

// Decide routes p over candidates. It never fails: a Route with no
// eligible candidate says why in Excluded and Gap.
func Decide(p *Profile, candidates []*Candidate) *Route {
	r := &Route{}
	for _, c := range candidates {
		if ex, ok := exclude(p, c); ok {
			r.Excluded = append(r.Excluded, ex)
			continue
		}
		r.Eligible = append(r.Eligible, c)
	}
	if len(r.Eligible) == 0 {
		r.Gap = gap(r.Excluded)
		r.Reason = fmt.Sprintf("no candidate meets the task profile: %s", r.Gap)
		if len(candidates) == 0 {
			r.Gap, r.Reason = "candidates", "the agent declares no candidate models"
		}
		return r
	}
	switch p.Prefer {
	case PreferCost:
		slices.SortStableFunc(r.Eligible, func(a, b *Candidate) int { return cmp.Compare(a.Price.blended(), b.Price.blended()) })
		r.Reason = fmt.Sprintf("cheapest of %d eligible candidates (%s: $%g/M input, $%g/M output)",
			len(r.Eligible), r.Eligible[0].Name, r.Eligible[0].Price.InputPerMTok, r.Eligible[0].Price.OutputPerMTok)
	case PreferLatency:
		slices.SortStableFunc(r.Eligible, func(a, b *Candidate) int { return cmp.Compare(latencyKey(a), latencyKey(b)) })
		r.Reason = fmt.Sprintf("fastest of %d eligible candidates (%s: typical %s)", len(r.Eligible), r.Eligible[0].Name, r.Eligible[0].TypicalLatency)
	default:
		r.Reason = fmt.Sprintf("first eligible of %d candidates in declared order", len(candidates))
	}
	if len(candidates) == 1 {
		r.Reason = "the agent declares a single candidate"
	}
	if len(r.Excluded) > 0 {
		names := make([]string, len(r.Excluded))
		for i, e := range r.Excluded {
			names[i] = e.Candidate
		}
		r.Reason += fmt.Sprintf("; excluded: %s", strings.Join(names, ", "))
	}
	return r
}

func latencyKey(c *Candidate) time.Duration {
	if c.TypicalLatency <= 0 {
		return time.Duration(1<<63 - 1) // undeclared: last
	}
	return c.TypicalLatency
}

func exclude(p *Profile, c *Candidate) (Exclusion, bool) {
	if c.Unavailable != "" {
		return Exclusion{Candidate: c.Name, Reason: c.Unavailable, Gap: "credentials"}, true
	}
	for _, k := range p.Requires {
		if !c.Has(k) {
			return Exclusion{Candidate: c.Name, Reason: fmt.Sprintf("lacks the %s capability", k), Gap: string(k)}, true
		}
	}
	if p.MinContextWindow > 0 && c.ContextWindow < p.MinContextWindow {
		reason := fmt.Sprintf("context window %d is below the required %d", c.ContextWindow, p.MinContextWindow)
		if c.ContextWindow == 0 {
			reason = fmt.Sprintf("declares no context window; %d is required", p.MinContextWindow)
		}
		return Exclusion{Candidate: c.Name, Reason: reason, Gap: "context_window"}, true
	}
	return Exclusion{}, false
}

// gap names the gaps of excluded candidates, most common first.
func gap(ex []Exclusion) string {
	count := make(map[string]int)
	var order []string
	for _, e := range ex {
		if count[e.Gap] == 0 {
			order = append(order, e.Gap)
		}
		count[e.Gap]++
	}
	slices.SortStableFunc(order, func(a, b string) int { return cmp.Compare(count[b], count[a]) })
	return strings.Join(order, ", ")
}

// EstimateInputTokens estimates the input tokens of req: about four bytes
// of text a token, plus a few tokens of framing a message. It is what
// cost estimates and budget checks use before a call; the provider's
// usage report is what is recorded after.
func EstimateInputTokens(req *Request) int64 {
	n := len(req.Instructions)
	for i := range req.Messages {
		n += messageChars(&req.Messages[i])
	}
	for _, t := range req.Tools {
		n += len(t.Name) + len(t.Description) + len(t.InputSchema)
	}
	return int64(n+3) / 4
}

// EstimateMessageTokens estimates the input tokens m adds to a request,
// as EstimateInputTokens counts them.
func EstimateMessageTokens(m *runtype.Message) int64 {
	return int64(messageChars(m)+3) / 4
}

func messageChars(m *runtype.Message) int {
	n := len(m.Content) + 16
	for _, c := range m.ToolCalls {
		n += len(c.Name) + len(c.Arguments) + 16
	}
	return n
}
