package tool

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// namePattern is what model providers accept as a function name.
var namePattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// ValidName reports whether name may be used as a tool name: 1 to 64
// letters, digits, '_' or '-'.
func ValidName(name string) bool { return namePattern.MatchString(name) }

// Registry holds the tools a runtime knows, keyed by name, each with its
// compiled input schema. Agents receive a subset of it as their inventory.
// A Registry is safe for concurrent use; tools are usually registered at
// start-up and looked up on every call.
type Registry struct {
	mu    sync.RWMutex
	tools map[string]*entry // guarded by mu
}

// entry is a registered tool with what Register derived from it once.
type entry struct {
	tool   Tool
	spec   Spec
	schema *jsonschema.Schema
	// plain is the schema when it is a plainSchema, checked first; nil
	// otherwise.
	plain *plainSchema
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{tools: make(map[string]*entry)}
}

// initErrer is implemented by tools whose construction can fail without
// returning an error, such as Func when the input schema cannot be
// inferred; Register reports the failure.
type initErrer interface {
	initErr() error
}

// Register adds t. It rejects an invalid or duplicate name and an input
// schema that is not a valid JSON Schema (draft 2020-12 unless the schema
// says otherwise) or does not describe an object. The schema is compiled
// once, here.
func (r *Registry) Register(t Tool) error {
	if t == nil {
		return errors.New("registering tool: tool is nil")
	}
	spec := t.Spec()
	if !ValidName(spec.Name) {
		return fmt.Errorf("registering tool %q: invalid name: want 1-64 characters of A-Z a-z 0-9 _ -", spec.Name)
	}
	if ie, ok := t.(initErrer); ok {
		if err := ie.initErr(); err != nil {
			return fmt.Errorf("registering tool %s: %w", spec.Name, err)
		}
	}
	schema, plain, err := compileInputSchema(spec.Name, spec.InputSchema)
	if err != nil {
		return fmt.Errorf("registering tool %s: %w", spec.Name, err)
	}

	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.tools[spec.Name]; dup {
		return fmt.Errorf("registering tool %s: a tool with this name is already registered", spec.Name)
	}
	r.tools[spec.Name] = &entry{tool: t, spec: spec, schema: schema, plain: plain}
	return nil
}

// CheckInputSchema reports whether raw is an input schema Register would
// accept: a valid JSON Schema (draft 2020-12, no external references)
// whose top-level type is "object".
func CheckInputSchema(raw json.RawMessage) error {
	_, _, err := compileInputSchema("check", raw)
	return err
}

// compileInputSchema checks that raw is a JSON Schema for an object and
// compiles it, and returns it as a plainSchema too when it is one.
// References to other documents are refused: a tool's schema must be
// self-contained.
func compileInputSchema(name string, raw json.RawMessage) (*jsonschema.Schema, *plainSchema, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, nil, errors.New("input schema is empty")
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, nil, fmt.Errorf("parsing input schema: %w", err)
	}
	obj, ok := doc.(map[string]any)
	if !ok {
		return nil, nil, errors.New("input schema is not a JSON object")
	}
	if typ, _ := obj["type"].(string); typ != "object" {
		return nil, nil, fmt.Errorf(`input schema has top-level type %s, want "object"`, describeType(obj["type"]))
	}
	schema, err := compileDoc("agentrt:///tool/"+name+"/input.schema.json", doc)
	if err != nil {
		return nil, nil, fmt.Errorf("compiling input schema: %w", err)
	}
	return schema, plainOf(doc), nil
}

// compileDoc compiles a decoded JSON Schema (draft 2020-12 unless it
// says otherwise) known as loc, refusing references to other documents.
func compileDoc(loc string, doc any) (*jsonschema.Schema, error) {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(refusingLoader{})
	if err := c.AddResource(loc, doc); err != nil {
		return nil, err
	}
	schema, err := c.Compile(loc)
	if err != nil {
		return nil, errors.New(schemaProblem(err))
	}
	return schema, nil
}

// A Schema is a compiled JSON Schema that checks documents (answers,
// inputs) against it.
type Schema struct{ s *jsonschema.Schema }

// CompileSchema compiles raw, a self-contained JSON Schema named loc in
// messages: references to other documents are refused, so nothing is
// read from files or the network.
func CompileSchema(loc string, raw json.RawMessage) (*Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("parsing: %w", err)
	}
	s, err := compileDoc(loc, doc)
	if err != nil {
		return nil, err
	}
	return &Schema{s}, nil
}

// Check validates doc, a JSON document, against the schema. The error
// lists the violations, each with where it is ("missing property
// 'name'; at '/age': got string, want integer").
func (s *Schema) Check(doc []byte) error {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return fmt.Errorf("not valid JSON: %w", err)
	}
	if err := s.s.Validate(v); err != nil {
		return errors.New(validationReason(err))
	}
	return nil
}

// schemaProblem shortens the validator's multi-line report on an invalid
// schema to its leaf findings ("at '/minimum': got string, want number").
func schemaProblem(err error) string {
	var leaves []string
	for _, l := range strings.Split(err.Error(), "\n") {
		l = strings.TrimPrefix(strings.TrimSpace(l), "- ")
		if l == "" || strings.HasSuffix(l, "failed") || strings.Contains(l, "is not valid against metaschema") {
			continue
		}
		leaves = append(leaves, l)
	}
	if len(leaves) == 0 {
		return strings.Join(strings.Fields(err.Error()), " ")
	}
	return strings.Join(leaves, "; ")
}

func describeType(v any) string {
	if v == nil {
		return "(none)"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// refusingLoader keeps schema compilation from reading files or the
// network when a schema refers to another document.
type refusingLoader struct{}

func (refusingLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("loading %s: external schema references are not supported", url)
}

// Lookup returns the tool registered under name.
func (r *Registry) Lookup(name string) (Tool, bool) {
	e := r.entry(name)
	if e == nil {
		return nil, false
	}
	return e.tool, true
}

func (r *Registry) entry(name string) *entry {
	r.mu.RLock()
	e := r.tools[name]
	r.mu.RUnlock()
	return e
}

// Names returns the names of all registered tools, sorted.
func (r *Registry) Names() []string {
	r.mu.RLock()
	names := make([]string, 0, len(r.tools))
	for name := range r.tools {
		names = append(names, name)
	}
	r.mu.RUnlock()
	sort.Strings(names)
	return names
}

// Inventory returns the tools with the given names, in that order, with
// repeated names listed once. If any name is not registered it returns an
// *InventoryError naming every unknown one.
func (r *Registry) Inventory(names []string) ([]Tool, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	tools := make([]Tool, 0, len(names))
	seen := make(map[string]bool, len(names))
	var unknown []string
	for _, name := range names {
		if seen[name] {
			continue
		}
		seen[name] = true
		e, ok := r.tools[name]
		if !ok {
			unknown = append(unknown, name)
			continue
		}
		tools = append(tools, e.tool)
	}
	if len(unknown) > 0 {
		return nil, &InventoryError{Unknown: unknown}
	}
	return tools, nil
}

// Validate checks input against the input schema of the tool called name.
// It returns *UnknownToolError when no such tool is registered and
// *InputError when input is not a JSON object or does not match the
// schema. Input is decoded once and validated with the schema compiled at
// registration.
func (r *Registry) Validate(name string, input json.RawMessage) error {
	_, err := r.validate(name, input)
	return err
}

// Check is Validate that also returns the lowercase hex SHA-256 of the
// input's canonical JSON (see CanonicalJSON), decoding the input once.
// Both are needed for every tool call: the hash goes into the audit facts.
func (r *Registry) Check(name string, input json.RawMessage) (string, error) {
	v, err := r.validate(name, input)
	if err != nil {
		return "", err
	}
	var buf [1024]byte
	b, ok := appendCanonical(buf[:0], v)
	if !ok {
		if b, err = canonical(v, len(input)); err != nil {
			return "", &InputError{Tool: name, Reason: err.Error()}
		}
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

func (r *Registry) validate(name string, input json.RawMessage) (any, error) {
	e := r.entry(name)
	if e == nil {
		return nil, &UnknownToolError{Name: name}
	}
	v, reason := decodeObject(input)
	if reason != "" {
		return nil, &InputError{Tool: name, Reason: reason}
	}
	if e.plain != nil && e.plain.valid(v) {
		return v, nil
	}
	if err := e.schema.Validate(v); err != nil {
		return nil, &InputError{Tool: name, Reason: validationReason(err)}
	}
	return v, nil
}

// decodeObject decodes input, keeping numbers as written. It returns a
// model-readable reason when input is not exactly one JSON object.
func decodeObject(input json.RawMessage) (any, string) {
	if m, ok := fastObject(input); ok {
		return m, ""
	}
	dec := json.NewDecoder(bytes.NewReader(input))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, "arguments are not valid JSON: " + syntaxReason(input, err)
	}
	if rest := input[dec.InputOffset():]; len(bytes.TrimLeft(rest, " \t\r\n")) > 0 {
		return nil, "arguments are not valid JSON: " + syntaxReason(input, errors.New("unexpected data after the top-level value"))
	}
	if _, ok := v.(map[string]any); !ok {
		return nil, "arguments must be a JSON object, got " + jsonKind(v)
	}
	return v, ""
}

// syntaxReason returns the error encoding/json.Unmarshal reports for
// input, which reads better than the streaming decoder's ("unexpected end
// of JSON input" rather than "EOF"). It runs only on the error path.
func syntaxReason(input []byte, fallback error) string {
	var v any
	if err := json.Unmarshal(input, &v); err != nil {
		return err.Error()
	}
	return fallback.Error()
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case json.Number:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

// maxReasons bounds how many schema violations an InputError lists.
const maxReasons = 5

// validationReason flattens a validation error into the leaf violations,
// each prefixed with where in the input it is, e.g. "missing property
// 'order_id'; at '/limit': got string, want integer".
func validationReason(err error) string {
	var verr *jsonschema.ValidationError
	if !errors.As(err, &verr) {
		return err.Error()
	}
	var leaves []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			// A leaf's Error is "at '<json pointer>': <violation>"; at the
			// top level the location says nothing.
			msg, _ := strings.CutPrefix(e.Error(), "at '': ")
			leaves = append(leaves, msg)
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(verr)
	// The validator visits properties in map order; sort for stable text,
	// violations of the whole object (missing properties) first.
	slices.SortFunc(leaves, func(a, b string) int {
		aAt, bAt := strings.HasPrefix(a, "at '"), strings.HasPrefix(b, "at '")
		if aAt != bAt {
			if aAt {
				return 1
			}
			return -1
		}
		return strings.Compare(a, b)
	})
	leaves = slices.Compact(leaves)
	if n := len(leaves); n > maxReasons {
		leaves = append(leaves[:maxReasons], fmt.Sprintf("and %d more", n-maxReasons))
	}
	return strings.Join(leaves, "; ")
}

// UnknownToolError reports a call to a tool that is not registered (or not
// in the agent's inventory).
type UnknownToolError struct {
	Name string
}

func (e *UnknownToolError) Error() string { return fmt.Sprintf("unknown tool %q", e.Name) }

// InventoryError reports the names of an inventory that are not
// registered. It unwraps to one *UnknownToolError per name.
type InventoryError struct {
	Unknown []string
}

func (e *InventoryError) Error() string {
	quoted := make([]string, len(e.Unknown))
	for i, n := range e.Unknown {
		quoted[i] = fmt.Sprintf("%q", n)
	}
	if len(quoted) == 1 {
		return "unknown tool " + quoted[0]
	}
	return "unknown tools " + strings.Join(quoted, ", ")
}

// Unwrap returns one *UnknownToolError per unknown name.
func (e *InventoryError) Unwrap() []error {
	errs := make([]error, len(e.Unknown))
	for i, n := range e.Unknown {
		errs[i] = &UnknownToolError{Name: n}
	}
	return errs
}

// InputError reports tool input that is not a JSON object or does not
// match the tool's input schema. Reason is short and written for the
// model, which sees it as the call's error result and may correct itself.
type InputError struct {
	Tool   string
	Reason string
}

func (e *InputError) Error() string {
	return "invalid input for " + e.Tool + ": " + e.Reason
}
