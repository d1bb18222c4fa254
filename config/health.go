package config

import (
	"time"

	"github.com/agentrt/agentrt/internal/yamlpos"
)

// Health is the health section: when the runtime's health projection
// (GET /v1/health, agentrt health) warns or fails. Zero fields mean the
// runtime's defaults.
type Health struct {
	// StuckAfter is how long a task in flight may go without recording
	// progress before it counts as stuck (a failing check).
	StuckAfter time.Duration
	// QueueAgeWarn is how long a task may wait for a worker before the
	// queue check warns.
	QueueAgeWarn time.Duration
	// ApprovalAgeWarn is how long an approval may wait for a person
	// before the approvals check warns.
	ApprovalAgeWarn time.Duration
}

// healthKeys are the health section's keys.
var healthKeys = []string{"stuck_after", "queue_age_warn", "approval_age_warn"}

// health decodes the health section. A null section leaves every
// default.
func (d *decoder) health(e yamlpos.Field, x *Health) {
	m, _ := d.mapping(e, "health")
	for _, f := range m.Fields() {
		label := "health." + f.Key
		var dst *time.Duration
		switch f.Key {
		case "stuck_after":
			dst = &x.StuckAfter
		case "queue_age_warn":
			dst = &x.QueueAgeWarn
		case "approval_age_warn":
			dst = &x.ApprovalAgeWarn
		default:
			d.unknownKey(f, "health", healthKeys)
			continue
		}
		if v, st := d.duration(f, label); st == valOK {
			*dst = v
		}
	}
}
