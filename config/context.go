package config

import (
	"slices"

	"github.com/agentrt/agentrt/internal/yamlpos"
)

// Context is how an agent's thread keeps within its model's context
// window: when the context it sends passes CompactAt of WindowTokens, the
// run compacts it before the next model call (or, with strategy reset,
// hands the thread over to a fresh one when the turn ends).
type Context struct {
	// WindowTokens is the context window compaction keeps within; 0
	// means the routed candidate's context_window.
	WindowTokens int64
	// CompactAt is the fraction of WindowTokens at which the run
	// compacts; default 0.8.
	CompactAt float64
	// KeepRecentTurns is how many of the latest turns (the running one
	// included) a compaction leaves whole; default 2.
	KeepRecentTurns int
	// Strategy is summarize (default), drop_tool_outputs,
	// summarize_then_drop or reset.
	Strategy string
	// SummaryModel writes summaries and handoffs; nil means the model the
	// turn was routed to.
	SummaryModel *Model
}

// Context defaults.
const (
	DefaultCompactAt       = 0.8
	DefaultKeepRecentTurns = 2
	maxKeepRecentTurns     = 100
	minWindowTokens        = 256
)

var (
	contextKeys       = []string{"window_tokens", "compact_at", "keep_recent_turns", "strategy", "summary_model"}
	contextStrategies = []string{"summarize", "drop_tool_outputs", "summarize_then_drop", "reset"}
)

// agentContext decodes an agent's context key.
func (d *decoder) agentContext(f yamlpos.Field, a *Agent, where string) *Context {
	c := &Context{CompactAt: DefaultCompactAt, KeepRecentTurns: DefaultKeepRecentTurns, Strategy: "summarize"}
	where = "context in " + where
	m, st := d.mapping(f, where)
	if st != valOK {
		return c
	}
	for _, e := range m.Fields() {
		label := e.Key + " in " + where
		switch e.Key {
		case "window_tokens":
			n, st := d.integer(e, label)
			if st == valOK && n < minWindowTokens {
				d.errorAt(e.Value().Pos, "%s must be at least %d, got %d", label, minWindowTokens, n)
			} else if st == valOK {
				c.WindowTokens = n
			}
		case "compact_at":
			n, st := d.number(e, label)
			if st == valOK && (n <= 0 || n > 1) {
				d.errorAt(e.Value().Pos, "%s must be a fraction above 0 and at most 1, got %s", label, e.Value().Text)
			} else if st == valOK {
				c.CompactAt = n
			}
		case "keep_recent_turns":
			n, st := d.integer(e, label)
			if st == valOK && (n < 1 || n > maxKeepRecentTurns) {
				d.errorAt(e.Value().Pos, "%s must be between 1 and %d, got %d", label, maxKeepRecentTurns, n)
			} else if st == valOK {
				c.KeepRecentTurns = int(n)
			}
		case "strategy":
			s, st := d.str(e, label)
			if st == valOK && !slices.Contains(contextStrategies, s) {
				d.errorAt(e.Value().Pos, "unknown strategy %q in %s: use summarize, drop_tool_outputs, summarize_then_drop or reset", s, where)
			} else if st == valOK {
				c.Strategy = s
			}
		case "summary_model":
			v := e.Value()
			switch {
			case v == nil:
			case !v.Scalar() || v.Kind == yamlpos.Null:
				d.errorAt(v.Pos, "%s must be the key of a model under models, got %s", label, v.Describe())
			default:
				d.modelRefs = append(d.modelRefs, modelRef{agent: a, summary: c, key: v.Text, pos: v.Pos})
			}
		default:
			d.unknownKey(e, where, contextKeys)
		}
	}
	return c
}
