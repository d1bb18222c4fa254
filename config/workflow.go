package config

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"time"

	"github.com/agentrt/agentrt/internal/yamlpos"
)

// Workflow is one entry of the workflows section: a graph of steps that
// start_workflow runs (see agentrt.Workflow and docs/workflows.md).
type Workflow struct {
	// InputSchema is the JSON Schema a run's input must match (optional).
	InputSchema json.RawMessage
	Steps       []*WorkflowStep
}

// WorkflowStep is one item of a workflow's steps: exactly one of an agent
// step (agent, input), a timer (wait or until) or a human step (human).
type WorkflowStep struct {
	ID    string
	Agent string
	Input string
	Needs []string
	// Join is all (the default), any or n_of (with N).
	Join  string
	N     int
	When  string
	Wait  time.Duration
	Until time.Time
	Human string
}

// WorkflowJoins lists the values of a step's join.
var WorkflowJoins = []string{"all", "any", "n_of"}

var (
	workflowKeys     = []string{"input_schema", "steps"}
	workflowStepKeys = []string{"agent", "human", "id", "input", "join", "n", "needs", "until", "wait", "when"}
	stepIDPattern    = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]{0,63}$`)
)

// stepAgentRef is an agent step's agent, checked once every agent is
// known.
type stepAgentRef struct {
	agent, where string
	pos          yamlpos.Pos
}

// workflows decodes the workflows section. Conditions, templates and
// cycles are checked when the runtime is made (agentrt.New names the
// workflow and the step).
func (d *decoder) workflows(e yamlpos.Field) map[string]*Workflow {
	m, st := d.mapping(e, "workflows")
	if st != valOK {
		return nil
	}
	out := make(map[string]*Workflow)
	for _, we := range m.Fields() {
		where := fmt.Sprintf("workflow %q", we.Key)
		if !namePattern.MatchString(we.Key) {
			d.errorAt(we.KeyPos, "invalid workflow name %q: use 1 to 64 letters, digits, '_' or '-'", we.Key)
			continue
		}
		v, st := d.mapping(we, where)
		if st != valOK {
			continue
		}
		w := &Workflow{}
		var stepsPos *yamlpos.Pos
		for _, f := range v.Fields() {
			switch f.Key {
			case "input_schema":
				w.InputSchema, _ = d.inputSchema(f, where, false)
			case "steps":
				p := f.KeyPos
				stepsPos = &p
				w.Steps = d.workflowSteps(f, where)
			default:
				d.unknownKey(f, where, workflowKeys)
			}
		}
		if stepsPos == nil {
			d.errorAt(we.KeyPos, "%s has no steps: add a steps list", where)
		}
		out[we.Key] = w
	}
	return out
}

// workflowSteps decodes a workflow's steps list.
func (d *decoder) workflowSteps(f yamlpos.Field, where string) []*WorkflowStep {
	v, st := d.present(f, "steps in "+where, "a list of mappings such as {id: NAME, agent: AGENT}", is(yamlpos.Seq))
	if st != valOK {
		return nil
	}
	var out []*WorkflowStep
	ids := map[string]bool{}
	type needRef struct {
		step, need string
		pos        yamlpos.Pos
	}
	var needs []needRef
	for i, item := range v.Items() {
		in := fmt.Sprintf("steps[%d] of %s", i, where)
		switch {
		case item == nil:
			continue
		case item.Kind != yamlpos.Map:
			d.errorAt(item.Pos, "%s must be a mapping such as {id: NAME, agent: AGENT}, got %s", in, item.Describe())
			continue
		}
		s := &WorkflowStep{}
		kinds := 0
		var kindPos yamlpos.Pos
		for _, sf := range item.Fields() {
			label := sf.Key + " in " + in
			switch sf.Key {
			case "id":
				if x, st := d.str(sf, label); st == valOK {
					switch {
					case !stepIDPattern.MatchString(x):
						d.errorAt(sf.Value().Pos, "invalid id %q in %s: start with a letter, then letters, digits or '_' (at most 64)", x, in)
					case ids[x]:
						d.errorAt(sf.Value().Pos, "id %q in %s is already the id of another step", x, in)
					default:
						s.ID, ids[x] = x, true
					}
				}
			case "agent":
				if x, st := d.str(sf, label); st == valOK {
					s.Agent, kindPos = x, sf.KeyPos
					kinds++
					d.stepAgents = append(d.stepAgents, stepAgentRef{agent: x, where: in, pos: sf.Value().Pos})
				}
			case "input":
				s.Input, _ = d.str(sf, label)
			case "human":
				if x, st := d.str(sf, label); st == valOK {
					s.Human, kindPos = x, sf.KeyPos
					kinds++
				}
			case "wait":
				if x, st := d.duration(sf, label); st == valOK {
					s.Wait, kindPos = x, sf.KeyPos
					kinds++
				}
			case "until":
				if x, st := d.str(sf, label); st == valOK {
					t, err := time.Parse(time.RFC3339, x)
					if err != nil {
						d.errorAt(sf.Value().Pos, "%s must be an RFC 3339 time such as 2026-07-01T09:00:00Z, got %q", label, x)
						continue
					}
					s.Until, kindPos = t, sf.KeyPos
					kinds++
				}
			case "needs":
				d.scalarList(sf, label, "step ids", func(n *yamlpos.Value) {
					if slices.Contains(s.Needs, n.Text) {
						d.errorAt(n.Pos, "%s lists %q twice", label, n.Text)
						return
					}
					s.Needs = append(s.Needs, n.Text)
					needs = append(needs, needRef{step: in, need: n.Text, pos: n.Pos})
				})
			case "join":
				s.Join, _ = d.oneOf(sf, label, WorkflowJoins)
			case "n":
				if x, st := d.count(sf, label, 1, 1000); st == valOK {
					s.N = int(x)
				}
			case "when":
				s.When, _ = d.str(sf, label)
			default:
				d.unknownKey(sf, in, workflowStepKeys)
			}
		}
		switch {
		case s.ID == "" && !slices.ContainsFunc(item.Fields(), func(f yamlpos.Field) bool { return f.Key == "id" }):
			d.errorAt(item.Pos, "id is required in %s: a name the other steps' needs and conditions use", in)
		case kinds == 0:
			d.errorAt(item.Pos, "%s needs one of agent, wait, until or human", in)
		case kinds > 1:
			d.errorAt(kindPos, "%s has more than one of agent, wait, until and human: a step is one thing", in)
		case s.Join == "n_of" && (s.N < 1 || s.N > len(s.Needs)):
			d.errorAt(item.Pos, "join n_of in %s needs n between 1 and the number of its needs (%d)", in, len(s.Needs))
		}
		out = append(out, s)
	}
	for _, n := range needs {
		if !ids[n.need] {
			d.errorAt(n.pos, "need %q in %s is not the id of a step of %s", n.need, n.step, where)
		}
	}
	return out
}

// checkWorkflowAgents reports agent steps naming agents that do not exist.
func (d *decoder) checkWorkflowAgents(f *File) {
	agents := f.AgentNames()
	for _, r := range d.stepAgents {
		if f.Agents[r.agent] == nil {
			d.errorAt(r.pos, "agent %q in %s is not an agent under agents%s", r.agent, r.where, didYouMean(r.agent, agents))
		}
	}
}
