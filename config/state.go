package config

import (
	"encoding/json"
	"slices"

	"github.com/agentrt/agentrt/internal/yamlpos"
	"github.com/agentrt/agentrt/tool"
)

// State is an agent's state section: the schema of the durable state its
// named instances hold (docs/instances.md).
type State struct {
	// Version is the schema's version, 1 or more (1 when not written);
	// raising it migrates each instance's state once, with Migrate.
	Version int
	// Schema is the JSON Schema the state, a JSON object, must match,
	// converted from YAML with the key order kept.
	Schema json.RawMessage
	// Initial is a new instance's state, a JSON object the schema
	// accepts; nil when not written (the runtime starts at {}).
	Initial json.RawMessage
	// Migrate names the command tool, one of the agent's tools, that
	// migrates a state to Version; empty when none. Required when
	// Version is above 1.
	Migrate string
}

// InstanceStateTool is the built-in tool the runtime gives an agent with
// a state section (listing it in the agent's tools is allowed, and
// changes nothing).
const InstanceStateTool = "instance_state"

// MaxStateVersion bounds state.version.
const MaxStateVersion = 1_000_000

var stateKeys = []string{"version", "schema", "initial", "migrate"}

// stateRef is an agent's migrate tool, checked once every tool is known.
type stateRef struct {
	agent string
	where string
	pos   yamlpos.Pos // the value of migrate
}

// agentState decodes an agent's state section.
func (d *decoder) agentState(e yamlpos.Field, agent, where string) *State {
	where = "state in " + where
	m, st := d.mapping(e, where)
	switch st {
	case valBad:
		return nil
	case valNull:
		d.errorAt(e.KeyPos, "%s is empty: it needs a schema", where)
		return nil
	}
	s := &State{Version: 1}
	var schema *tool.Schema
	var initial *yamlpos.Value
	var migrate *yamlpos.Value
	versionPos := e.KeyPos
	schemaSt := valNull
	for _, f := range m.Fields() {
		label := f.Key + " in " + where
		switch f.Key {
		case "version":
			if n, st := d.count(f, label, 1, MaxStateVersion); st == valOK {
				s.Version, versionPos = int(n), f.Value().Pos
			}
		case "schema":
			var v *yamlpos.Value
			if v, schemaSt = d.present(f, label, "a mapping holding a JSON Schema", is(yamlpos.Map)); schemaSt != valOK {
				continue
			}
			raw, ok := d.toJSON(v, label)
			if !ok {
				schemaSt = valBad
				continue
			}
			c, err := tool.CompileSchema("state schema", raw)
			if err != nil {
				d.errorAt(v.Pos, "%s is not a valid JSON Schema: %v", label, err)
				schemaSt = valBad
				continue
			}
			s.Schema, schema = raw, c
		case "initial":
			if s.Initial = d.jsonObject(f, label); s.Initial != nil {
				initial = f.Value()
			}
		case "migrate":
			if name, st := d.str(f, label); st == valOK {
				s.Migrate, migrate = name, f.Value()
			}
		default:
			d.unknownKey(f, where, stateKeys)
		}
	}
	if schemaSt == valNull {
		d.errorAt(e.KeyPos, "schema is required in %s: the JSON Schema of the instances' state", where)
	}
	if schema != nil {
		doc, pos := s.Initial, e.KeyPos
		if initial != nil {
			pos = initial.Pos
		} else {
			doc = json.RawMessage(`{}`)
		}
		if err := schema.Check(doc); err != nil {
			what := "initial in " + where
			if initial == nil {
				what = "the initial state {} (initial is not written) of " + where
			}
			d.errorAt(pos, "%s does not match its schema: %v", what, err)
		}
	}
	switch {
	case migrate != nil:
		d.stateRefs = append(d.stateRefs, stateRef{agent: agent, where: where, pos: migrate.Pos})
	case s.Version > 1:
		d.errorAt(versionPos, "version %d in %s needs migrate: the command tool that migrates an instance's state from an older version", s.Version, where)
	}
	return s
}

// checkStates reports migrate tools that are not command tools of their
// agent.
func (d *decoder) checkStates(f *File) {
	for _, r := range d.stateRefs {
		a := f.Agents[r.agent]
		if a == nil || a.State == nil {
			continue
		}
		name := a.State.Migrate
		switch {
		case f.Tools[name] == nil:
			d.errorAt(r.pos, "migrate %q in %s is not a tool declared under tools: a migration is a command tool%s", name, r.where, didYouMean(name, sortedNames(f.Tools)))
		case !slices.Contains(a.Tools, name):
			d.errorAt(r.pos, "migrate %q in %s is not in the tools of agent %q; add it there", name, r.where, r.agent)
		}
	}
}
