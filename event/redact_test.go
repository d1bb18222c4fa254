package event

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// secret is what fill writes and marker what replaceSecret makes of it.
const (
	secret = "SeCrEt"
	marker = "[REDACTED:test]"
)

// replaceSecret is a Redactor that replaces secret.
type replaceSecret struct{}

func (replaceSecret) Text(s string) string { return strings.ReplaceAll(s, secret, marker) }
func (replaceSecret) JSON(s string) string { return strings.ReplaceAll(s, secret, marker) }

// fill sets every exported string of v, at any depth, to a text holding
// secret, and gives every pointer, slice and map one element.
func fill(v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		v.SetString("a " + secret + " b")
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		fill(v.Elem())
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i))
			}
		}
	case reflect.Slice:
		if v.Type() == rawType {
			v.SetBytes([]byte(`{"k":"` + secret + `"}`))
			return
		}
		s := reflect.MakeSlice(v.Type(), 1, 1)
		fill(s.Index(0))
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k := reflect.New(v.Type().Key()).Elem()
		fill(k)
		e := reflect.New(v.Type().Elem()).Elem()
		fill(e)
		m.SetMapIndex(k, e)
		v.Set(m)
	}
}

// leftovers returns the paths of strings in v that still hold secret.
func leftovers(v reflect.Value, path string, out *[]string) {
	switch v.Kind() {
	case reflect.String:
		if v.Type() == stringType && strings.Contains(v.String(), secret) { // named string types are enums
			*out = append(*out, path)
		}
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			leftovers(v.Elem(), path, out)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if f := v.Type().Field(i); f.IsExported() {
				leftovers(v.Field(i), path+"."+f.Name, out)
			}
		}
	case reflect.Slice:
		if v.Type() == rawType {
			if strings.Contains(string(v.Bytes()), secret) {
				*out = append(*out, path)
			}
			return
		}
		for i := range v.Len() {
			leftovers(v.Index(i), path+"[]", out)
		}
	case reflect.Map:
		it := v.MapRange()
		for it.Next() {
			leftovers(it.Value(), path+"[k]", out)
		}
	}
}

// TestRedactEveryPayload: Redact replaces the text of every payload type,
// and of the permission decision, except in the fields that identify
// something (ids, hashes, refs) and in enum-typed fields; it leaves the
// event's original payload as it was, and the event encodes its new text.
func TestRedactEveryPayload(t *testing.T) {
	t.Parallel()
	for typ := range known {
		p := payloadFor(typ)
		if p == nil {
			continue
		}
		t.Run(string(typ), func(t *testing.T) {
			t.Parallel()
			p := payloadFor(typ)
			fill(reflect.ValueOf(p))
			before, _ := json.Marshal(p)
			pd := &PermissionDecision{}
			fill(reflect.ValueOf(pd))
			e := &Event{Type: typ, SessionID: "s-" + secret, Payload: p, PermissionDecision: pd}
			if _, err := e.JSON(); err != nil { // cached: Redact must drop it
				t.Fatal(err)
			}
			e.Redact(replaceSecret{})

			var left []string
			leftovers(reflect.ValueOf(e.Payload), "payload", &left)
			leftovers(reflect.ValueOf(e.PermissionDecision), "permissionDecision", &left)
			for _, path := range left {
				field := path[strings.LastIndex(path, ".")+1:]
				if !Identity(strings.TrimSuffix(field, "[]")) {
					t.Errorf("%s still holds the secret", path)
				}
			}
			if after, _ := json.Marshal(p); string(after) != string(before) {
				t.Errorf("Redact changed the payload it was given:\n%s\n%s", before, after)
			}
			raw, err := e.JSON()
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(raw), marker) && len(left) == 0 && string(before) != "{}" {
				t.Errorf("the encoding lacks the redaction: %s", raw)
			}
			if e.SessionID != "s-"+secret {
				t.Errorf("Redact changed the envelope's session id to %q", e.SessionID)
			}
		})
	}
}

// TestRedactRawPayload: a payload agentrt does not decode is redacted as
// JSON.
func TestRedactRawPayload(t *testing.T) {
	t.Parallel()
	e := &Event{Type: "custom.thing", Payload: RawPayload(`{"note":"` + secret + `"}`)}
	e.Redact(replaceSecret{})
	if diff := cmp.Diff(RawPayload(`{"note":"`+marker+`"}`), e.Payload); diff != "" {
		t.Errorf("payload (-want +got):\n%s", diff)
	}
}

// TestRedactNothingKeepsTheEvent: an event without secrets keeps its
// payload and its encoding.
func TestRedactNothingKeepsTheEvent(t *testing.T) {
	t.Parallel()
	p := &ToolStartedPayload{Name: "echo", ArgumentsPreview: `{"text":"hi"}`}
	e := &Event{Type: ToolStarted, Payload: p}
	raw, _ := e.JSON()
	e.Redact(replaceSecret{})
	again, _ := e.JSON()
	if e.Payload != Payload(p) || &raw[0] != &again[0] {
		t.Error("Redact replaced a payload it had nothing to redact in")
	}
}

// TestRedactCleanAllocatesNothing: redacting events that hold no secret
// allocates nothing, also when their payload types alternate (each
// type's plan is found without allocating).
func TestRedactCleanAllocatesNothing(t *testing.T) {
	events := []*Event{
		{Type: ToolStarted, Payload: &ToolStartedPayload{Name: "echo", ArgumentsPreview: "text"}},
		{Type: PermissionEvaluated, Payload: &PermissionPayload{ToolName: "echo"},
			PermissionDecision: &PermissionDecision{Decision: "allow", Message: "allowed"}},
		{Type: ModelCompleted, Payload: &ModelCompletedPayload{FinishReason: "stop"}},
	}
	for _, e := range events {
		e.Redact(replaceSecret{}) // make the plans
	}
	if n := testing.AllocsPerRun(100, func() {
		for _, e := range events {
			e.Redact(replaceSecret{})
		}
	}); n != 0 {
		t.Errorf("redacting clean events allocates %.1f times, want 0", n)
	}
}

// TestPlanOfSlotTurnsAllocateNothing: a type finding its slot taken by
// another finds its plan again without allocating.
func TestPlanOfSlotTurnsAllocateNothing(t *testing.T) {
	a, b := reflect.TypeFor[ToolStartedPayload](), reflect.TypeFor[PermissionPayload]()
	pa, pb := planOf(a), planOf(b)
	if n := testing.AllocsPerRun(100, func() {
		planSlot(a).Store(&planEntry{t: b, p: pb}) // b took a's slot
		if planOf(a) != pa {
			t.Fatal("planOf returned another plan")
		}
	}); n > 1 { // the Store above
		t.Errorf("planOf after a turn allocates %.1f times, want none", n-1)
	}
}
