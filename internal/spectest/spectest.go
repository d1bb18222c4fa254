// Package spectest validates agentrt's output against the Agent Runtime
// standard's JSON Schemas (copied unmodified into schemas/): every event
// against agentruntime-event.schema.json, every snapshot and thread read
// model against agentruntime-snapshot.schema.json. Tests across the module
// call it on everything they produce.
package spectest

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

//go:embed schemas/*.json
var schemaFS embed.FS

// Schema file names.
const (
	EventSchema    = "agentruntime-event.schema.json"
	SnapshotSchema = "agentruntime-snapshot.schema.json"
)

var (
	compileOnce sync.Once
	compiled    map[string]*jsonschema.Schema
	compileErr  error
)

func schemas() (map[string]*jsonschema.Schema, error) {
	compileOnce.Do(func() {
		c := jsonschema.NewCompiler()
		c.AssertFormat()
		compiled = make(map[string]*jsonschema.Schema)
		for _, name := range []string{EventSchema, SnapshotSchema} {
			b, err := schemaFS.ReadFile("schemas/" + name)
			if err != nil {
				compileErr = err
				return
			}
			doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
			if err != nil {
				compileErr = fmt.Errorf("parsing %s: %w", name, err)
				return
			}
			if err := c.AddResource(name, doc); err != nil {
				compileErr = fmt.Errorf("adding %s: %w", name, err)
				return
			}
		}
		for _, name := range []string{EventSchema, SnapshotSchema} {
			s, err := c.Compile(name)
			if err != nil {
				compileErr = fmt.Errorf("compiling %s: %w", name, err)
				return
			}
			compiled[name] = s
		}
	})
	return compiled, compileErr
}

// Check validates one JSON document against the named schema.
func Check(schema string, doc []byte) error {
	s, err := schemas()
	if err != nil {
		return err
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return fmt.Errorf("parsing document: %w", err)
	}
	if err := s[schema].Validate(v); err != nil {
		return fmt.Errorf("%s: %w", schema, err)
	}
	return nil
}

// Event fails t unless doc is a valid Agent Runtime event.
//
// It also holds agentrt's own rule for permission decisions: every
// permission.* event carries a decision with a reason code and a source,
// so that each decision in the suite says why it was made.
func Event(t testing.TB, doc []byte) {
	t.Helper()
	if err := Check(EventSchema, doc); err != nil {
		t.Errorf("event does not validate: %v\n%s", err, doc)
	}
	if err := checkDecision(doc); err != nil {
		t.Errorf("%v\n%s", err, doc)
	}
}

// checkDecision reports a permission.* event whose decision lacks a
// reason code or source.
func checkDecision(doc []byte) error {
	var e struct {
		Type     string `json:"type"`
		Decision *struct {
			Decision   string `json:"decision"`
			Source     string `json:"source"`
			ReasonCode string `json:"reasonCode"`
		} `json:"permissionDecision"`
	}
	if err := json.Unmarshal(doc, &e); err != nil || !strings.HasPrefix(e.Type, "permission.") {
		return nil
	}
	switch {
	case e.Decision == nil:
		return fmt.Errorf("%s event has no permissionDecision", e.Type)
	case e.Decision.ReasonCode == "" || e.Decision.Source == "" || e.Decision.Decision == "":
		return fmt.Errorf("%s event's decision lacks a decision, source or reason code", e.Type)
	}
	return nil
}

// Snapshot fails t unless v (a Go value or JSON bytes) encodes to a valid
// Agent Runtime snapshot.
func Snapshot(t testing.TB, v any) {
	t.Helper()
	doc, ok := v.([]byte)
	if !ok {
		var err error
		if doc, err = json.Marshal(v); err != nil {
			t.Fatalf("encoding snapshot: %v", err)
		}
	}
	if err := Check(SnapshotSchema, doc); err != nil {
		t.Errorf("snapshot does not validate: %v\n%s", err, doc)
	}
}

// TypeEnum returns the event types the standard's event schema allows.
func TypeEnum() ([]string, error) {
	b, err := schemaFS.ReadFile("schemas/" + EventSchema)
	if err != nil {
		return nil, err
	}
	var s struct {
		Properties struct {
			Type struct {
				Enum []string `json:"enum"`
			} `json:"type"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, err
	}
	return s.Properties.Type.Enum, nil
}
