package httpapi_test

import (
	"bytes"
	"encoding"
	"encoding/json"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/jsonschema-go/jsonschema"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/httpapi"
)

// This file generates the bodies' schemas of the OpenAPI document from
// the Go types the handlers encode (go generate ./httpapi rewrites
// openapi.json), and fails when the committed document is not what the
// types produce. Everything else in the document (paths, parameters,
// statuses, descriptions, roles) is written by hand in openapi.json; the
// generator keeps it, and keeps the descriptions written for the schemas
// and their properties.

var update = flag.Bool("update", false, "rewrite openapi.json from the Go types")

// bodies are the JSON bodies of a route, as Go types.
type bodies struct {
	// request is the body the route decodes; nil: none.
	request reflect.Type
	// response is the body of its 2xx answers, and of the statuses in
	// also; nil: they are not JSON, or not of a Go type (the document
	// describes them by hand).
	response reflect.Type
	also     []int
}

func typeOf[T any]() reflect.Type { return reflect.TypeFor[T]() }

// routeBodies maps each route of the table to its bodies; every answer
// with a status of 400 or more that also does not name is a Problem.
var routeBodies = map[string]bodies{
	"GET /healthz":          {response: typeOf[apitype.ProbeStatus]()},
	"GET /readyz":           {response: typeOf[apitype.ProbeStatus](), also: []int{http.StatusServiceUnavailable}},
	"GET /metrics":          {}, // Prometheus text
	"GET /v1/health":        {response: typeOf[apitype.Health](), also: []int{http.StatusServiceUnavailable}},
	"GET /v1/openapi.json":  {}, // this document
	"GET /v1/outputs/{ref}": {}, // stored content, byte for byte

	"POST /v1/turns":                    {request: typeOf[apitype.SubmitTurnRequest](), response: typeOf[apitype.SubmitTurnResult]()},
	"POST /v1/turns/{turnId}/interrupt": {response: typeOf[apitype.InterruptResult]()},
	"POST /v1/turns/{turnId}/promote":   {response: typeOf[apitype.PromoteResult]()},
	"DELETE /v1/turns/{turnId}/queue":   {response: typeOf[apitype.RemoveResult]()},

	"GET /v1/tasks":                  {response: typeOf[apitype.TaskPage]()},
	"GET /v1/tasks/{taskId}":         {response: typeOf[apitype.TaskRead]()},
	"POST /v1/tasks/{taskId}/cancel": {response: typeOf[apitype.TaskControlResult]()},
	"POST /v1/tasks/{taskId}/pause":  {response: typeOf[apitype.TaskControlResult]()},
	"POST /v1/tasks/{taskId}/resume": {response: typeOf[apitype.TaskControlResult]()},
	"POST /v1/tasks/{taskId}/retry":  {response: typeOf[apitype.TaskControlResult]()},

	"GET /v1/requests":                  {response: typeOf[apitype.RequestPage]()},
	"GET /v1/requests/{turnId}":         {response: typeOf[apitype.RequestSummary]()},
	"GET /v1/requests/{turnId}/context": {response: typeOf[apitype.ContextView]()},

	"GET /v1/sessions":                                              {response: typeOf[apitype.SessionPage]()},
	"GET /v1/sessions/{sessionId}":                                  {response: typeOf[apitype.Snapshot]()},
	"GET /v1/sessions/{sessionId}/threads/{threadId}":               {response: typeOf[apitype.Snapshot]()},
	"GET /v1/sessions/{sessionId}/threads/{threadId}/queue":         {response: typeOf[apitype.QueueResult]()},
	"GET /v1/sessions/{sessionId}/threads/{threadId}/history":       {response: typeOf[apitype.HistoryPage]()},
	"POST /v1/sessions/{sessionId}/threads/{threadId}/rollback":     {request: typeOf[apitype.RollbackThreadRequest](), response: typeOf[apitype.RollbackThreadResult]()},
	"POST /v1/sessions/{sessionId}/threads/{threadId}/fork":         {request: typeOf[apitype.ForkThreadRequest](), response: typeOf[apitype.ForkThreadResult]()},
	"POST /v1/sessions/{sessionId}/threads/{threadId}/compact":      {request: typeOf[apitype.CompactThreadRequest](), response: typeOf[apitype.SubmitTurnResult]()},
	"POST /v1/sessions/{sessionId}/threads/{threadId}/reset":        {request: typeOf[apitype.CompactThreadRequest](), response: typeOf[apitype.SubmitTurnResult]()},
	"PUT /v1/sessions/{sessionId}/policy":                           {request: typeOf[apitype.SetPolicyModeRequest](), response: typeOf[apitype.PolicyModeResult]()},
	"GET /v1/sessions/{sessionId}/receipts/verify":                  {response: typeOf[apitype.VerifyResult]()},
	"POST /v1/sessions/{sessionId}/requests/{turnId}/export":        {request: typeOf[apitype.ExportEvidenceRequest]()}, // a gzip bundle
	"GET /v1/sessions/{sessionId}/processes":                        {response: typeOf[apitype.ProcessList]()},
	"POST /v1/sessions/{sessionId}/processes/{processId}/stdin":     {request: typeOf[apitype.ProcessStdinRequest](), response: typeOf[apitype.ProcessStdinResult]()},
	"POST /v1/sessions/{sessionId}/processes/{processId}/terminate": {response: typeOf[apitype.ProcessTerminateResult]()},

	"GET /v1/tools":  {response: typeOf[apitype.ToolInventory]()},
	"GET /v1/events": {},                                        // Server-Sent Events
	"POST /v1/agui":  {request: typeOf[apitype.AGUIRunInput]()}, // an AG-UI event stream
	"PUT /v1/limits": {request: typeOf[apitype.SetLimitRequest](), response: typeOf[apitype.SetLimitResult]()},

	"GET /v1/actions":             {response: typeOf[apitype.ActionPage]()},
	"GET /v1/actions/{actionId}":  {response: typeOf[apitype.ActionRead]()},
	"POST /v1/actions/{actionId}": {request: typeOf[apitype.RespondActionRequest](), response: typeOf[apitype.RespondActionResult]()},

	"POST /v1/sessions/{sessionId}/subagents": {request: typeOf[apitype.SpawnSubagentRequest](), response: typeOf[apitype.SubagentRead]()},
	"GET /v1/sessions/{sessionId}/subagents":  {response: typeOf[apitype.SubagentList]()},
	"POST /v1/subagents/wait":                 {request: typeOf[apitype.WaitSubagentsRequest](), response: typeOf[apitype.WaitSubagentsResult]()},
	"GET /v1/subagents/{subagentId}":          {response: typeOf[apitype.SubagentRead]()},
	"POST /v1/subagents/{subagentId}/input":   {request: typeOf[apitype.SendSubagentInputRequest](), response: typeOf[apitype.SubagentRead]()},
	"POST /v1/subagents/{subagentId}/close":   {response: typeOf[apitype.SubagentRead]()},
	"GET /v1/tasks/{taskId}/tree":             {response: typeOf[apitype.DelegationNode]()},
	"POST /v1/sessions/{sessionId}/jobs":      {request: typeOf[apitype.CreateJobRequest](), response: typeOf[apitype.JobRead]()},
	"GET /v1/jobs/{jobId}":                    {response: typeOf[apitype.JobRead]()},
	"GET /v1/jobs/{jobId}/items":              {response: typeOf[apitype.JobItemsPage]()},
	"POST /v1/jobs/{jobId}/retry":             {request: typeOf[apitype.RetryJobItemsRequest](), response: typeOf[apitype.RetryJobItemsResult]()},
	"POST /v1/jobs/{jobId}/cancel":            {response: typeOf[apitype.JobRead]()},

	"POST /v1/schedules":                      {request: typeOf[apitype.CreateScheduleRequest](), response: typeOf[apitype.ScheduleRead]()},
	"GET /v1/schedules":                       {response: typeOf[apitype.SchedulePage]()},
	"GET /v1/schedules/overview":              {response: typeOf[apitype.ScheduleOverview]()},
	"GET /v1/schedules/{scheduleId}":          {response: typeOf[apitype.ScheduleRead]()},
	"PUT /v1/schedules/{scheduleId}":          {request: typeOf[apitype.ScheduleSpec](), response: typeOf[apitype.ScheduleRead]()},
	"DELETE /v1/schedules/{scheduleId}":       {response: typeOf[apitype.ScheduleRead]()},
	"POST /v1/schedules/{scheduleId}/pause":   {request: typeOf[apitype.PauseScheduleRequest](), response: typeOf[apitype.ScheduleRead]()},
	"POST /v1/schedules/{scheduleId}/resume":  {request: typeOf[apitype.PauseScheduleRequest](), response: typeOf[apitype.ScheduleRead]()},
	"POST /v1/schedules/{scheduleId}/trigger": {request: typeOf[apitype.TriggerScheduleRequest](), response: typeOf[apitype.FireRead]()},
	"GET /v1/schedules/{scheduleId}/fires":    {response: typeOf[apitype.FirePage]()},
	"POST /v1/fires/{fireId}/retry-delivery":  {response: typeOf[apitype.FireRead]()},

	"GET /v1/instances":                 {response: typeOf[apitype.InstanceList]()},
	"GET /v1/instances/{name}":          {response: typeOf[apitype.InstanceRead]()},
	"GET /v1/instances/{name}/state":    {response: typeOf[apitype.InstanceState]()},
	"PUT /v1/instances/{name}/state":    {request: typeOf[apitype.SetInstanceStateRequest](), response: typeOf[apitype.InstanceState]()},
	"POST /v1/instances/{name}/events":  {request: typeOf[apitype.SendInstanceEventRequest](), response: typeOf[apitype.SendInstanceEventResult]()},
	"POST /v1/workflows":                {request: typeOf[apitype.StartWorkflowRequest](), response: typeOf[apitype.WorkflowRead]()},
	"GET /v1/workflows":                 {response: typeOf[apitype.WorkflowsPage]()},
	"GET /v1/workflows/{runId}":         {response: typeOf[apitype.WorkflowRead]()},
	"POST /v1/workflows/{runId}/cancel": {response: typeOf[apitype.WorkflowRead]()},
	"POST /v1/workflows/{runId}/resume": {response: typeOf[apitype.WorkflowRead]()},

	"POST /v1/stream-tickets":          {response: typeOf[apitype.StreamTicket]()},
	"GET /v1/tokens":                   {response: typeOf[apitype.TokenList]()},
	"POST /v1/tokens":                  {request: typeOf[apitype.CreateTokenRequest](), response: typeOf[apitype.NewToken]()},
	"POST /v1/tokens/{tokenId}/rotate": {response: typeOf[apitype.NewToken]()},
	"POST /v1/tokens/{tokenId}/revoke": {response: typeOf[apitype.TokenRead]()},
}

// componentNames names the components of types whose Go name another
// type of the document has.
var componentNames = map[reflect.Type]string{
	typeOf[event.QueuedTurn](): "QueueEntry", // apitype.QueuedTurn is the snapshot's
}

// sharedResponses are the error answers many operations give alike; an
// operation's answer with the same status and description refers to
// the shared one.
var sharedResponses = []struct {
	name, status, description string
}{
	{"Unauthorized", "401", "Missing, wrong or revoked bearer token."},
	{"Forbidden", "403", "The token's role may not call this route (see x-agentrt-roles)."},
	{"Internal", "500", "Internal error."},
	{"Unavailable", "503", "The runtime is stopping, or its store did not answer so the token could not be checked."},
}

// TestOpenAPIDocumentIsGenerated: the committed openapi.json is what the
// Go types produce. A field added to a type and not to the document, or
// a route without its bodies in routeBodies, fails here; go generate
// ./httpapi (this test with -update) rewrites the document.
func TestOpenAPIDocumentIsGenerated(t *testing.T) {
	t.Parallel()
	committed, err := os.ReadFile("openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	routes := map[string]bool{}
	for _, r := range httpapi.RouteTable() {
		routes[r.Method+" "+r.Path] = true
	}
	for pattern := range routeBodies {
		if !routes[pattern] {
			t.Errorf("routeBodies names %s, which the route table lacks", pattern)
		}
	}
	for pattern := range routes {
		if _, ok := routeBodies[pattern]; !ok {
			t.Errorf("route %s has no entry in routeBodies", pattern)
		}
	}
	got, err := generateOpenAPI(committed)
	if err != nil {
		t.Fatalf("generating the document: %v", err)
	}
	if bytes.Equal(got, committed) {
		return
	}
	if *update {
		if err := os.WriteFile("openapi.json", got, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Log("rewrote openapi.json")
		return
	}
	t.Errorf("openapi.json is not what the Go types produce; run go generate ./httpapi (-committed +generated):\n%s",
		cmp.Diff(strings.Split(string(committed), "\n"), strings.Split(string(got), "\n")))
}

// generateOpenAPI returns doc with its bodies' schemas generated from
// the Go types of routeBodies.
func generateOpenAPI(doc []byte) ([]byte, error) {
	var d map[string]any
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	if err := dec.Decode(&d); err != nil {
		return nil, fmt.Errorf("decoding openapi.json: %w", err)
	}
	components := object(d, "components")
	g := &schemaGen{components: map[string]*jsonschema.Schema{}, names: map[string]reflect.Type{}}
	problem, err := g.schema(typeOf[apitype.Problem]())
	if err != nil {
		return nil, err
	}
	g.problemEnums()

	responses := map[string]any{}
	for _, sr := range sharedResponses {
		responses[sr.name] = map[string]any{
			"description": sr.description,
			"content":     map[string]any{apitype.ProblemContentType: map[string]any{"schema": problem}},
		}
	}
	components["responses"] = responses

	paths := object(d, "paths")
	for pattern, b := range routeBodies {
		method, path, _ := strings.Cut(pattern, " ")
		ops, _ := paths[path].(map[string]any)
		op, _ := ops[strings.ToLower(method)].(map[string]any)
		responses, ok := op["responses"].(map[string]any)
		if !ok {
			return nil, fmt.Errorf("the document has no responses for %s", pattern)
		}
		if err := g.operation(op, responses, b, problem); err != nil {
			return nil, fmt.Errorf("%s: %w", pattern, err)
		}
	}

	old, _ := components["schemas"].(map[string]any)
	for name, s := range g.components {
		keepDescriptions(s, old[name])
	}
	components["schemas"] = g.components

	return encodeDocument(d)
}

// topKeys are the document's top-level keys, in the order it keeps them.
var topKeys = []string{"openapi", "info", "security", "paths", "components"}

// encodeDocument writes d indented, its top-level keys in topKeys' order
// and every other object's sorted.
func encodeDocument(d map[string]any) ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteString("{")
	for i, k := range topKeys {
		v, ok := d[k]
		if !ok {
			return nil, fmt.Errorf("the document has no %s", k)
		}
		b, err := marshalIndented(v)
		if err != nil {
			return nil, err
		}
		if i > 0 {
			buf.WriteString(",")
		}
		fmt.Fprintf(&buf, "\n  %q: %s", k, bytes.TrimSuffix(b, []byte("\n")))
	}
	if len(d) != len(topKeys) {
		return nil, fmt.Errorf("the document has top-level keys other than %v", topKeys)
	}
	buf.WriteString("\n}\n")
	return buf.Bytes(), nil
}

// marshalIndented is v's JSON, nested one level into the document.
func marshalIndented(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("  ", "  ")
	err := enc.Encode(v)
	return buf.Bytes(), err
}

// operation sets the schemas of op's bodies: b's types, and Problem for
// its errors.
func (g *schemaGen) operation(op, responses map[string]any, b bodies, problem *jsonschema.Schema) error {
	if b.request != nil {
		ref, err := g.schema(b.request)
		if err != nil {
			return err
		}
		rb, ok := op["requestBody"].(map[string]any)
		if !ok {
			return fmt.Errorf("the document describes no request body, the route takes %s", b.request)
		}
		rb["content"] = map[string]any{"application/json": map[string]any{"schema": ref}}
	} else if op["requestBody"] != nil {
		return fmt.Errorf("the document describes a request body routeBodies does not name")
	}
	var resp *jsonschema.Schema
	if b.response != nil {
		var err error
		if resp, err = g.schema(b.response); err != nil {
			return err
		}
	}
	for status, v := range responses {
		r, _ := v.(map[string]any)
		code, err := strconv.Atoi(status)
		if err != nil {
			return fmt.Errorf("response %q: want a status code", status)
		}
		switch {
		case code >= 400 && !slices.Contains(b.also, code):
			for _, sr := range sharedResponses {
				if sr.status == status && (r["description"] == sr.description || r["$ref"] == "#/components/responses/"+sr.name) {
					r = map[string]any{"$ref": "#/components/responses/" + sr.name}
				}
			}
			if r["$ref"] == nil {
				r["content"] = map[string]any{apitype.ProblemContentType: map[string]any{"schema": problem}}
			}
			responses[status] = r
		case resp != nil && code >= 400:
			// The route's own body, or a problem the route shares with
			// every other (its token, the runtime stopping).
			r["content"] = map[string]any{
				"application/json":         map[string]any{"schema": resp},
				apitype.ProblemContentType: map[string]any{"schema": problem},
			}
		case resp != nil:
			r["content"] = map[string]any{"application/json": map[string]any{"schema": resp}}
		}
	}
	return nil
}

// object returns m[key] as an object, making it when missing.
func object(m map[string]any, key string) map[string]any {
	o, ok := m[key].(map[string]any)
	if !ok {
		o = map[string]any{}
		m[key] = o
	}
	return o
}

// keepDescriptions copies into s the descriptions the committed document
// has for the schema and its properties: they are written by hand.
func keepDescriptions(s *jsonschema.Schema, old any) {
	o, _ := old.(map[string]any)
	if d, ok := o["description"].(string); ok && s.Description == "" {
		s.Description = d
	}
	props, _ := o["properties"].(map[string]any)
	for name, p := range s.Properties {
		op, _ := props[name].(map[string]any)
		if d, ok := op["description"].(string); ok && p.Description == "" {
			p.Description = d
		}
	}
}

// schemaGen builds JSON Schemas of Go types as encoding/json encodes
// them: each named struct type, and each named string type with
// constants, is a component the schemas refer to.
type schemaGen struct {
	components map[string]*jsonschema.Schema
	names      map[string]reflect.Type // component name → its type
}

// componentRef is the $ref of component name.
func componentRef(name string) string { return "#/components/schemas/" + name }

var (
	timeType      = typeOf[time.Time]()
	rawType       = typeOf[json.RawMessage]()
	marshalerType = typeOf[json.Marshaler]()
	textType      = typeOf[encoding.TextMarshaler]()
)

// schema is the schema of a value of type t; a named struct's refers
// to its component, made when the type is first met.
func (g *schemaGen) schema(t reflect.Type) (*jsonschema.Schema, error) {
	switch {
	case t == timeType:
		return &jsonschema.Schema{Type: "string", Format: "date-time"}, nil
	case t == rawType:
		return &jsonschema.Schema{Description: "Any JSON value."}, nil
	case t.Kind() == reflect.Pointer:
		s, err := g.schema(t.Elem())
		if err != nil {
			return nil, err
		}
		return nullable(s), nil
	case t.Implements(marshalerType) || reflect.PointerTo(t).Implements(marshalerType):
		return nil, fmt.Errorf("%s encodes itself (MarshalJSON): describe it in schemaGen.schema", t)
	case t.Implements(textType) || reflect.PointerTo(t).Implements(textType):
		return &jsonschema.Schema{Type: "string"}, nil
	}
	switch t.Kind() {
	case reflect.Bool:
		return &jsonschema.Schema{Type: "boolean"}, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return &jsonschema.Schema{Type: "integer"}, nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return &jsonschema.Schema{Type: "integer", Minimum: jsonschema.Ptr(0.0)}, nil
	case reflect.Float32, reflect.Float64:
		return &jsonschema.Schema{Type: "number"}, nil
	case reflect.String:
		return g.stringSchema(t)
	case reflect.Interface:
		return &jsonschema.Schema{Description: "Any JSON value."}, nil
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			s := &jsonschema.Schema{Type: "string", ContentEncoding: "base64"}
			if t.Kind() == reflect.Slice {
				s = nullable(s)
			}
			return s, nil
		}
		items, err := g.schema(t.Elem())
		if err != nil {
			return nil, err
		}
		s := &jsonschema.Schema{Type: "array", Items: items}
		if t.Kind() == reflect.Slice {
			s = nullable(s)
		}
		return s, nil
	case reflect.Map:
		switch k := t.Key(); {
		case k.Kind() == reflect.String, k.Implements(textType), k.Kind() >= reflect.Int && k.Kind() <= reflect.Uint64:
		default:
			return nil, fmt.Errorf("map key %s has no JSON form", k)
		}
		v, err := g.schema(t.Elem())
		if err != nil {
			return nil, err
		}
		return nullable(&jsonschema.Schema{Type: "object", AdditionalProperties: v}), nil
	case reflect.Struct:
		if t.Name() == "" {
			return g.object(t)
		}
		if err := g.component(t, g.object); err != nil {
			return nil, err
		}
		return &jsonschema.Schema{Ref: componentRef(componentName(t))}, nil
	}
	return nil, fmt.Errorf("%s has no JSON form", t)
}

// componentName is the name of t's component.
func componentName(t reflect.Type) string {
	if name, ok := componentNames[t]; ok {
		return name
	}
	return t.Name()
}

// component records t's schema under its name, made by build once.
func (g *schemaGen) component(t reflect.Type, build func(reflect.Type) (*jsonschema.Schema, error)) error {
	name := componentName(t)
	if strings.ContainsAny(name, "[]") {
		return fmt.Errorf("%s is generic: give the body a type of its own", t)
	}
	if prev, ok := g.names[name]; ok {
		if prev != t {
			return fmt.Errorf("two types are named %s: %s and %s; name one in componentNames", name, prev, t)
		}
		return nil
	}
	g.names[name] = t
	s, err := build(t)
	if err != nil {
		return err
	}
	g.components[name] = s
	return nil
}

// stringSchema is the schema of a string type: a component with its
// values when its package declares constants of it.
func (g *schemaGen) stringSchema(t reflect.Type) (*jsonschema.Schema, error) {
	values := constants(t)
	if len(values) == 0 {
		return &jsonschema.Schema{Type: "string"}, nil
	}
	err := g.component(t, func(reflect.Type) (*jsonschema.Schema, error) {
		s := &jsonschema.Schema{Type: "string"}
		for _, v := range values {
			s.Enum = append(s.Enum, v)
		}
		return s, nil
	})
	if err != nil {
		return nil, err
	}
	return &jsonschema.Schema{Ref: componentRef(componentName(t))}, nil
}

// nullable lets s be null too.
func nullable(s *jsonschema.Schema) *jsonschema.Schema {
	switch {
	case s.Ref != "":
		return &jsonschema.Schema{AnyOf: []*jsonschema.Schema{s, {Type: "null"}}}
	case s.Type != "":
		s.Types, s.Type = []string{s.Type, "null"}, ""
	}
	return s // any value: null already
}

// notNull undoes nullable: for a field whose null is never sent.
func notNull(s *jsonschema.Schema) *jsonschema.Schema {
	switch {
	case len(s.AnyOf) == 2 && s.AnyOf[1].Type == "null":
		return s.AnyOf[0]
	case len(s.Types) == 2 && s.Types[1] == "null":
		s.Type, s.Types = s.Types[0], nil
	}
	return s
}

// field is a struct field as encoding/json sees it.
type field struct {
	name      string
	index     []int
	typ       reflect.Type
	tagged    bool
	omitEmpty bool
	omitZero  bool
	quoted    bool // ,string
}

// object is the schema of struct t: its fields as encoding/json encodes
// them, required unless omitempty or omitzero can leave them out.
func (g *schemaGen) object(t reflect.Type) (*jsonschema.Schema, error) {
	fields, err := jsonFields(t)
	if err != nil {
		return nil, err
	}
	s := &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{}, AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}}}
	for _, f := range fields {
		fs, err := g.schema(f.typ)
		if err != nil {
			return nil, fmt.Errorf("%s.%s: %w", t.Name(), f.name, err)
		}
		if f.quoted {
			fs = &jsonschema.Schema{Type: "string", Description: "A " + fs.Type + " in a string."}
		}
		omittable := f.omitZero || f.omitEmpty && emptiable(f.typ)
		if f.omitEmpty && (f.typ.Kind() == reflect.Pointer || f.typ.Kind() == reflect.Slice || f.typ.Kind() == reflect.Map) {
			fs = notNull(fs) // nil is left out, not null
		}
		s.Properties[f.name] = fs
		s.PropertyOrder = append(s.PropertyOrder, f.name)
		if !omittable {
			s.Required = append(s.Required, f.name)
		}
	}
	return s, nil
}

// emptiable reports whether omitempty can leave out a value of t.
func emptiable(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Struct:
		return false
	case reflect.Array:
		return t.Len() == 0
	}
	return true
}

// jsonFields lists the fields encoding/json encodes of struct t, in its
// order, with its rules for embedded structs: an untagged embedded
// struct's fields are promoted; of fields with one name the shallowest
// wins, a tagged one among equals, and several equals drop the name.
func jsonFields(t reflect.Type) ([]field, error) {
	var all []field
	var walk func(t reflect.Type, index []int) error
	walk = func(t reflect.Type, index []int) error {
		for i := range t.NumField() {
			sf := t.Field(i)
			tag := sf.Tag.Get("json")
			if tag == "-" {
				continue
			}
			name, opts, _ := strings.Cut(tag, ",")
			ft := sf.Type
			idx := append(slices.Clone(index), i)
			if sf.Anonymous {
				et := ft
				if et.Kind() == reflect.Pointer {
					et = et.Elem()
				}
				if name == "" && et.Kind() == reflect.Struct {
					if err := walk(et, idx); err != nil {
						return err
					}
					continue
				}
				if !sf.IsExported() && et.Kind() != reflect.Struct {
					continue
				}
			} else if !sf.IsExported() {
				continue
			}
			f := field{name: name, index: idx, typ: ft, tagged: name != ""}
			if name == "" {
				f.name = sf.Name
			}
			for o := range strings.SplitSeq(opts, ",") {
				switch o {
				case "omitempty":
					f.omitEmpty = true
				case "omitzero":
					f.omitZero = true
				case "string":
					switch ft.Kind() {
					case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
						reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
						f.quoted = true
					}
				}
			}
			all = append(all, f)
		}
		return nil
	}
	if err := walk(t, nil); err != nil {
		return nil, err
	}
	// Of the fields of one name: the shallowest, tagged first, alone.
	var out []field
	for _, f := range all {
		dominant, ambiguous := f, false
		for _, o := range all {
			if o.name != f.name || slices.Equal(o.index, f.index) {
				continue
			}
			switch {
			case len(o.index) < len(dominant.index), len(o.index) == len(dominant.index) && o.tagged && !dominant.tagged:
				dominant, ambiguous = o, false
			case len(o.index) == len(dominant.index) && o.tagged == dominant.tagged:
				ambiguous = true
			}
		}
		if !ambiguous && slices.Equal(dominant.index, f.index) {
			out = append(out, f)
		}
	}
	return out, nil
}

// problemEnums lists the problem kinds in the Problem schema.
func (g *schemaGen) problemEnums() {
	s := g.components["Problem"]
	var types, codes []any
	for _, k := range apitype.ProblemKinds {
		types = append(types, k.Type())
		codes = append(codes, k.Code)
	}
	s.Properties["type"].Enum = types
	s.Properties["code"].Enum = codes
}

// moduleDir is the module's root, from the httpapi directory.
const moduleDir = ".."

// modulePath is the module's import path.
const modulePath = "github.com/agentrt/agentrt"

var (
	pkgConstsMu sync.Mutex
	pkgConsts   = map[string]map[string][]string{} // package path → type name → values
)

// constants returns the values of the string constants t's package
// declares of type t, in their order.
func constants(t reflect.Type) []string {
	if t.Name() == "" || !strings.HasPrefix(t.PkgPath(), modulePath) {
		return nil
	}
	pkgConstsMu.Lock()
	defer pkgConstsMu.Unlock()
	byType, ok := pkgConsts[t.PkgPath()]
	if !ok {
		byType = parseConstants(filepath.Join(moduleDir, strings.TrimPrefix(t.PkgPath(), modulePath)))
		pkgConsts[t.PkgPath()] = byType
	}
	return byType[t.Name()]
}

// parseConstants reads the typed string constants of the package in dir
// (not its tests): those declared with the type (X T = "x") and those
// converted to it (X = T("x"), X = T(OtherConstant)).
func parseConstants(dir string) map[string][]string {
	type constant struct {
		typ   string   // the type's name; "" when untyped
		value ast.Expr // its value, before conversion to typ
	}
	var order []string
	consts := map[string]constant{}
	fset := token.NewFileSet()
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, parser.SkipObjectResolution)
		if err != nil {
			continue
		}
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				if len(vs.Values) != len(vs.Names) {
					continue // iota and implicit repetition: not string constants
				}
				for i, name := range vs.Names {
					c := constant{value: vs.Values[i]}
					if id, ok := vs.Type.(*ast.Ident); ok {
						c.typ = id.Name
					} else if call, ok := c.value.(*ast.CallExpr); ok && len(call.Args) == 1 {
						if id, ok := call.Fun.(*ast.Ident); ok {
							c.typ, c.value = id.Name, call.Args[0]
						}
					}
					consts[name.Name] = c
					order = append(order, name.Name)
				}
			}
		}
	}
	// value resolves a constant's string value through the constants it
	// names or converts.
	var value func(e ast.Expr, depth int) (string, bool)
	value = func(e ast.Expr, depth int) (string, bool) {
		switch e := e.(type) {
		case *ast.BasicLit:
			if e.Kind != token.STRING {
				return "", false
			}
			s, err := strconv.Unquote(e.Value)
			return s, err == nil
		case *ast.Ident:
			if c, ok := consts[e.Name]; ok && depth < 10 {
				return value(c.value, depth+1)
			}
		case *ast.CallExpr:
			if len(e.Args) == 1 && depth < 10 {
				return value(e.Args[0], depth+1)
			}
		}
		return "", false
	}
	out := map[string][]string{}
	for _, name := range order {
		c := consts[name]
		if c.typ == "" {
			continue
		}
		if s, ok := value(c.value, 0); ok && !slices.Contains(out[c.typ], s) {
			out[c.typ] = append(out[c.typ], s)
		}
	}
	return out
}
