package config

import (
	"slices"
	"time"

	"github.com/agentrt/agentrt/internal/yamlpos"
	"github.com/agentrt/agentrt/runtype"
)

// Durability is the durability section: the worker pool, leases, queue
// limits, the multitask policy, retries and timeouts. Zero fields mean
// the runtime's defaults.
type Durability struct {
	// Workers bounds the runs executing at once.
	Workers int
	// LeaseTTL is how long a worker's claim on a task lasts unrenewed;
	// PollInterval how often workers look for due work.
	LeaseTTL     time.Duration
	PollInterval time.Duration
	// MaxQueued and MaxQueuedPerTenant bound queued turns; above them a
	// submission is refused (HTTP 429 with Retry-After).
	MaxQueued          int
	MaxQueuedPerTenant int
	// Multitask is enqueue, reject, interrupt or rollback; empty means
	// enqueue.
	Multitask string
	// Retry is the retry policy of failed attempts.
	Retry Retry
	// TurnTimeout and InactivityTimeout end turns timed_out.
	TurnTimeout       time.Duration
	InactivityTimeout time.Duration
	// ShutdownGrace is how long a stopping daemon lets running steps
	// finish before it abandons them to the next start's recovery.
	ShutdownGrace time.Duration
	// IntegrityCheck bounds the check of the store's structure at start;
	// IntegrityCheckOff skips it.
	IntegrityCheck time.Duration
}

// IntegrityCheckOff is Durability.IntegrityCheck for "integrity_check:
// off".
const IntegrityCheckOff time.Duration = -1

// Retry is durability.retry.
type Retry struct {
	MaxAttempts int
	Backoff     time.Duration
	MaxBackoff  time.Duration
	// NonRetryable are failure kinds never retried.
	NonRetryable []string
}

// The durability section's keys and values.
var (
	durabilityKeys  = []string{"workers", "lease_ttl", "poll_interval", "max_queued", "max_queued_per_tenant", "multitask", "retry", "turn_timeout", "inactivity_timeout", "shutdown_grace", "integrity_check"}
	retryKeys       = []string{"max_attempts", "backoff", "max_backoff", "non_retryable"}
	multitaskValues = []string{"enqueue", "reject", "interrupt", "rollback"}
)

// Limits on the durability section's numbers.
const (
	maxWorkers     = 4096
	maxQueuedLimit = 10_000_000
	maxAttempts    = 100
)

// durability decodes the durability section. A null section leaves every
// default.
func (d *decoder) durability(e yamlpos.Field, x *Durability) {
	m, _ := d.mapping(e, "durability")
	for _, f := range m.Fields() {
		label := "durability." + f.Key
		switch f.Key {
		case "workers":
			if n, st := d.count(f, label, 1, maxWorkers); st == valOK {
				x.Workers = int(n)
			}
		case "max_queued":
			if n, st := d.count(f, label, 1, maxQueuedLimit); st == valOK {
				x.MaxQueued = int(n)
			}
		case "max_queued_per_tenant":
			if n, st := d.count(f, label, 1, maxQueuedLimit); st == valOK {
				x.MaxQueuedPerTenant = int(n)
			}
		case "multitask":
			if s, st := d.oneOf(f, label, multitaskValues); st == valOK {
				x.Multitask = s
			}
		case "lease_ttl", "poll_interval", "turn_timeout", "inactivity_timeout", "shutdown_grace":
			if v, st := d.duration(f, label); st == valOK {
				*map[string]*time.Duration{
					"lease_ttl": &x.LeaseTTL, "poll_interval": &x.PollInterval, "turn_timeout": &x.TurnTimeout,
					"inactivity_timeout": &x.InactivityTimeout, "shutdown_grace": &x.ShutdownGrace,
				}[f.Key] = v
			}
		case "integrity_check":
			if v, st := d.durationOr(f, label, "off", IntegrityCheckOff); st == valOK {
				x.IntegrityCheck = v
			}
		case "retry":
			d.retry(f, &x.Retry)
		default:
			d.unknownKey(f, "durability", durabilityKeys)
		}
	}
}

// retry decodes durability.retry.
func (d *decoder) retry(e yamlpos.Field, r *Retry) {
	m, _ := d.mapping(e, "durability.retry")
	for _, f := range m.Fields() {
		label := "durability.retry." + f.Key
		switch f.Key {
		case "max_attempts":
			if n, st := d.count(f, label, 1, maxAttempts); st == valOK {
				r.MaxAttempts = int(n)
			}
		case "backoff":
			if v, st := d.duration(f, label); st == valOK {
				r.Backoff = v
			}
		case "max_backoff":
			if v, st := d.duration(f, label); st == valOK {
				r.MaxBackoff = v
			}
		case "non_retryable":
			r.NonRetryable = []string{}
			d.scalarList(f, label, "failure kinds", func(item *yamlpos.Value) {
				if !slices.Contains(runtype.FailureKinds, runtype.FailureKind(item.Text)) {
					kinds := make([]string, len(runtype.FailureKinds))
					for i, k := range runtype.FailureKinds {
						kinds[i] = string(k)
					}
					d.errorAt(item.Pos, "unknown failure kind %q in %s%s", item.Text, label, didYouMean(item.Text, kinds))
					return
				}
				r.NonRetryable = append(r.NonRetryable, item.Text)
			})
		default:
			d.unknownKey(f, "durability.retry", retryKeys)
		}
	}
}
