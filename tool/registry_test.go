package tool_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/tool"
)

// staticTool is a hand-written fake: a Spec and a fixed result.
type staticTool struct {
	spec tool.Spec
}

func (t *staticTool) Spec() tool.Spec { return t.spec }

func (t *staticTool) Call(context.Context, *tool.Call) (*tool.Result, error) {
	return &tool.Result{Content: "ok"}, nil
}

func newStatic(name, schema string) *staticTool {
	return &staticTool{spec: tool.Spec{Name: name, InputSchema: json.RawMessage(schema), Source: "test"}}
}

const lookupOrderSchema = `{
	"type": "object",
	"properties": {
		"order_id": {"type": "string", "minLength": 1},
		"limit": {"type": "integer", "minimum": 1},
		"tags": {"type": "array", "items": {"type": "string"}}
	},
	"required": ["order_id"],
	"additionalProperties": false
}`

func TestRegistryRegister(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name    string
		tool    tool.Tool
		wantErr string // substring; "" means success
	}{
		{name: "valid", tool: newStatic("lookup_order", lookupOrderSchema)},
		{name: "minimal object schema", tool: newStatic("a-b_C9", `{"type":"object"}`)},
		{name: "explicit draft", tool: newStatic("draft7", `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object"}`)},
		{name: "nil tool", tool: nil, wantErr: "tool is nil"},
		{name: "empty name", tool: newStatic("", `{"type":"object"}`), wantErr: "invalid name"},
		{name: "name with space", tool: newStatic("lookup order", `{"type":"object"}`), wantErr: "invalid name"},
		{name: "name with dot", tool: newStatic("a.b", `{"type":"object"}`), wantErr: "invalid name"},
		{name: "name too long", tool: newStatic(strings.Repeat("a", 65), `{"type":"object"}`), wantErr: "invalid name"},
		{name: "name of 64", tool: newStatic(strings.Repeat("a", 64), `{"type":"object"}`)},
		{name: "empty schema", tool: newStatic("empty", ``), wantErr: "input schema is empty"},
		{name: "malformed schema", tool: newStatic("bad", `{"type":`), wantErr: "parsing input schema"},
		{name: "array schema", tool: newStatic("arr", `[]`), wantErr: "not a JSON object"},
		{name: "no type", tool: newStatic("notype", `{"properties":{}}`), wantErr: `top-level type (none), want "object"`},
		{name: "string type", tool: newStatic("str", `{"type":"string"}`), wantErr: `top-level type "string"`},
		{name: "type list", tool: newStatic("list", `{"type":["object","null"]}`), wantErr: "top-level type"},
		{name: "invalid keyword value", tool: newStatic("inv", `{"type":"object","properties":{"a":{"type":"strin"}}}`), wantErr: "compiling input schema"},
		{name: "negative minLength", tool: newStatic("neg", `{"type":"object","properties":{"a":{"minLength":-1}}}`), wantErr: "compiling input schema"},
		{name: "external ref", tool: newStatic("ext", `{"type":"object","properties":{"a":{"$ref":"file:///etc/passwd"}}}`), wantErr: "external schema references are not supported"},
		{name: "local ref", tool: newStatic("local", `{"type":"object","$defs":{"id":{"type":"string"}},"properties":{"a":{"$ref":"#/$defs/id"}}}`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := tool.NewRegistry()
			err := r.Register(tt.tool)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Register: %v", err)
				}
				name := tt.tool.Spec().Name
				if _, ok := r.Lookup(name); !ok {
					t.Errorf("Lookup(%q) after Register: not found", name)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Register error = %v, want one containing %q", err, tt.wantErr)
			}
			if diff := cmp.Diff([]string{}, r.Names()); diff != "" {
				t.Errorf("Names after rejected Register (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRegistryRegisterDuplicate(t *testing.T) {
	t.Parallel()
	r := tool.NewRegistry()
	first := newStatic("lookup_order", lookupOrderSchema)
	if err := r.Register(first); err != nil {
		t.Fatalf("Register: %v", err)
	}
	err := r.Register(newStatic("lookup_order", `{"type":"object"}`))
	if err == nil || !strings.Contains(err.Error(), "already registered") {
		t.Fatalf("second Register error = %v, want already registered", err)
	}
	got, ok := r.Lookup("lookup_order")
	if !ok || got != tool.Tool(first) {
		t.Errorf("Lookup returned %v, %v; want the first tool", got, ok)
	}
}

func TestRegistryNamesLookupInventory(t *testing.T) {
	t.Parallel()
	r := tool.NewRegistry()
	for _, name := range []string{"write_file", "complete_task", "read_file"} {
		if err := r.Register(newStatic(name, `{"type":"object"}`)); err != nil {
			t.Fatalf("Register(%s): %v", name, err)
		}
	}

	if diff := cmp.Diff([]string{"complete_task", "read_file", "write_file"}, r.Names()); diff != "" {
		t.Errorf("Names (-want +got):\n%s", diff)
	}
	if _, ok := r.Lookup("nope"); ok {
		t.Error("Lookup(nope) found a tool")
	}

	t.Run("known", func(t *testing.T) {
		t.Parallel()
		inv, err := r.Inventory([]string{"write_file", "read_file", "write_file"})
		if err != nil {
			t.Fatalf("Inventory: %v", err)
		}
		var names []string
		for _, tl := range inv {
			names = append(names, tl.Spec().Name)
		}
		if diff := cmp.Diff([]string{"write_file", "read_file"}, names); diff != "" {
			t.Errorf("inventory names (-want +got):\n%s", diff)
		}
	})

	t.Run("empty", func(t *testing.T) {
		t.Parallel()
		inv, err := r.Inventory(nil)
		if err != nil || len(inv) != 0 {
			t.Fatalf("Inventory(nil) = %v, %v; want empty, nil", inv, err)
		}
	})

	t.Run("unknown", func(t *testing.T) {
		t.Parallel()
		_, err := r.Inventory([]string{"read_file", "shell", "browse"})
		var invErr *tool.InventoryError
		if !errors.As(err, &invErr) {
			t.Fatalf("Inventory error = %v (%T), want *InventoryError", err, err)
		}
		if diff := cmp.Diff([]string{"shell", "browse"}, invErr.Unknown); diff != "" {
			t.Errorf("Unknown (-want +got):\n%s", diff)
		}
		if got, want := err.Error(), `unknown tools "shell", "browse"`; got != want {
			t.Errorf("Error() = %q, want %q", got, want)
		}
		var unk *tool.UnknownToolError
		if !errors.As(err, &unk) || unk.Name != "shell" {
			t.Errorf("errors.As UnknownToolError = %v", unk)
		}
	})
}

func TestRegistryValidate(t *testing.T) {
	t.Parallel()
	r := tool.NewRegistry()
	if err := r.Register(newStatic("lookup_order", lookupOrderSchema)); err != nil {
		t.Fatalf("Register: %v", err)
	}

	tests := []struct {
		name   string
		input  string
		reason string // "" means valid
	}{
		{name: "valid", input: `{"order_id":"A-1"}`},
		{name: "valid with whitespace", input: " \n{\"order_id\": \"A-1\", \"limit\": 3, \"tags\": [\"x\"]}\n "},
		{name: "big integer", input: `{"order_id":"A-1","limit":123456789012345678901234567890}`},
		{name: "missing property", input: `{}`, reason: "missing property 'order_id'"},
		{name: "wrong type", input: `{"order_id":7}`, reason: "at '/order_id': got number, want string"},
		{name: "not integer", input: `{"order_id":"a","limit":1.5}`, reason: "at '/limit': got number, want integer"},
		{name: "nested", input: `{"order_id":"a","tags":["x",2]}`, reason: "at '/tags/1': got number, want string"},
		{name: "additional property", input: `{"order_id":"a","color":"red"}`, reason: "additional properties 'color' not allowed"},
		{name: "several", input: `{"limit":0,"color":"red"}`, reason: "additional properties 'color' not allowed; missing property 'order_id'; at '/limit': minimum: got 0, want 1"},
		{name: "empty", input: ``, reason: "arguments are not valid JSON: unexpected end of JSON input"},
		{name: "truncated", input: `{"order_id":`, reason: "arguments are not valid JSON: unexpected end of JSON input"},
		{name: "garbage", input: `order_id=1`, reason: "arguments are not valid JSON: invalid character 'o' looking for beginning of value"},
		{name: "trailing data", input: `{"order_id":"a"} {}`, reason: "arguments are not valid JSON: invalid character '{' after top-level value"},
		{name: "array", input: `[{"order_id":"a"}]`, reason: "arguments must be a JSON object, got array"},
		{name: "null", input: `null`, reason: "arguments must be a JSON object, got null"},
		{name: "string", input: `"order_id"`, reason: "arguments must be a JSON object, got string"},
		{name: "number", input: `42`, reason: "arguments must be a JSON object, got number"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := r.Validate("lookup_order", json.RawMessage(tt.input))
			if tt.reason == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			var inErr *tool.InputError
			if !errors.As(err, &inErr) {
				t.Fatalf("Validate error = %v (%T), want *InputError", err, err)
			}
			want := &tool.InputError{Tool: "lookup_order", Reason: tt.reason}
			if diff := cmp.Diff(want, inErr); diff != "" {
				t.Errorf("InputError (-want +got):\n%s", diff)
			}
			if got, want := err.Error(), "invalid input for lookup_order: "+tt.reason; got != want {
				t.Errorf("Error() = %q, want %q", got, want)
			}
		})
	}

	t.Run("unknown tool", func(t *testing.T) {
		t.Parallel()
		err := r.Validate("refund_order", json.RawMessage(`{}`))
		var unk *tool.UnknownToolError
		if !errors.As(err, &unk) {
			t.Fatalf("Validate error = %v (%T), want *UnknownToolError", err, err)
		}
		if diff := cmp.Diff(&tool.UnknownToolError{Name: "refund_order"}, unk); diff != "" {
			t.Errorf("UnknownToolError (-want +got):\n%s", diff)
		}
	})

	t.Run("many violations are bounded", func(t *testing.T) {
		t.Parallel()
		r := tool.NewRegistry()
		props := make([]string, 0, 8)
		req := make([]string, 0, 8)
		for i := range 8 {
			props = append(props, fmt.Sprintf(`"p%d":{"type":"string"}`, i))
			req = append(req, fmt.Sprintf(`"p%d"`, i))
		}
		schema := `{"type":"object","properties":{` + strings.Join(props, ",") + `},"required":[` + strings.Join(req, ",") + `]}`
		if err := r.Register(newStatic("many", schema)); err != nil {
			t.Fatalf("Register: %v", err)
		}
		in := `{"p0":0,"p1":1,"p2":2,"p3":3,"p4":4,"p5":5,"p6":6,"p7":7}`
		var inErr *tool.InputError
		if err := r.Validate("many", json.RawMessage(in)); !errors.As(err, &inErr) {
			t.Fatalf("Validate error = %v, want *InputError", err)
		}
		if !strings.HasSuffix(inErr.Reason, "; and 3 more") || strings.Count(inErr.Reason, ";") != 5 {
			t.Errorf("Reason = %q, want 5 violations and 'and 3 more'", inErr.Reason)
		}
	})
}

func TestRegistryConcurrentUse(t *testing.T) {
	t.Parallel()
	r := tool.NewRegistry()
	if err := r.Register(newStatic("lookup_order", lookupOrderSchema)); err != nil {
		t.Fatalf("Register: %v", err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 8 {
		wg.Go(func() {
			if err := r.Register(newStatic(fmt.Sprintf("tool_%d", i), `{"type":"object"}`)); err != nil {
				errs <- err
			}
		})
		wg.Go(func() {
			if err := r.Validate("lookup_order", json.RawMessage(`{"order_id":"x","limit":2}`)); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got := len(r.Names()); got != 9 {
		t.Errorf("len(Names()) = %d, want 9", got)
	}
}

func BenchmarkRegistryValidate(b *testing.B) {
	r := tool.NewRegistry()
	if err := r.Register(newStatic("lookup_order", lookupOrderSchema)); err != nil {
		b.Fatalf("Register: %v", err)
	}
	in := json.RawMessage(`{"order_id":"ORD-2291","limit":5,"tags":["priority","eu"]}`)
	b.ReportAllocs()
	for b.Loop() {
		if err := r.Validate("lookup_order", in); err != nil {
			b.Fatal(err)
		}
	}
}

func TestRegistryCheckHashesCanonicalInput(t *testing.T) {
	t.Parallel()
	r := tool.NewRegistry()
	if err := r.Register(&staticTool{spec: tool.Spec{Name: "t", InputSchema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"number"}}}`)}}); err != nil {
		t.Fatal(err)
	}
	got, err := r.Check("t", json.RawMessage(`{ "b": "x",  "a": 1.50 }`))
	if err != nil {
		t.Fatal(err)
	}
	if want := tool.ArgumentsSHA256(json.RawMessage(`{"a":1.50,"b":"x"}`)); got != want {
		t.Errorf("Check hash = %s, want the canonical form's %s", got, want)
	}
	if _, err := r.Check("t", json.RawMessage(`{"a":"one"}`)); err == nil {
		t.Error("Check accepted input that violates the schema")
	}
	var unknown *tool.UnknownToolError
	if _, err := r.Check("nope", json.RawMessage(`{}`)); !errors.As(err, &unknown) {
		t.Errorf("Check(unknown tool) = %v, want *UnknownToolError", err)
	}
}
