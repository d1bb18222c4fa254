package event

import (
	"encoding/json"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
)

// Redactor replaces secrets in text. Text takes any text; JSON takes JSON
// text and returns valid JSON for valid JSON. Both return their argument
// itself when there is nothing to replace. A Redactor is safe for
// concurrent use.
type Redactor interface {
	Text(s string) string
	JSON(s string) string
}

// Redact replaces the text e carries with what r makes of it: every
// string of its payload and of its permission decision, at any depth,
// except the ones that name or identify something rather than say
// something (see Identity), and a RawPayload as JSON text. The envelope's
// ids are left alone.
//
// Redact never modifies what e shares with others: a payload, slice, map
// or pointer that holds a replaced string is copied and e is given the
// copy. It must be called before e is first encoded (see JSON); an event
// that was encoded already is encoded again on demand.
func (e *Event) Redact(r Redactor) {
	changed := false
	if e.Payload != nil {
		if raw, ok := e.Payload.(RawPayload); ok {
			if red := r.JSON(string(raw)); red != string(raw) {
				e.Payload, changed = RawPayload(red), true
			}
		} else if v, ok := redactValue(reflect.ValueOf(e.Payload), r); ok {
			e.Payload, changed = v.Interface().(Payload), true
		}
	}
	if e.PermissionDecision != nil {
		if v, ok := redactValue(reflect.ValueOf(e.PermissionDecision), r); ok {
			e.PermissionDecision, changed = v.Interface().(*PermissionDecision), true
		}
	}
	if changed {
		e.raw.Store(nil)
	}
}

// ReplaceRefs rewrites the refs e names through rep: its output ref, its
// refs and those in its payload. A Writer uses it when redaction changed
// a blob, and so its ref, after the events naming it were made.
func (e *Event) ReplaceRefs(rep *strings.Replacer) {
	e.OutputRef = rep.Replace(e.OutputRef)
	if len(e.Refs) > 0 {
		refs := make(map[string]string, len(e.Refs))
		for k, v := range e.Refs {
			refs[k] = rep.Replace(v)
		}
		e.Refs = refs
	}
	if e.Payload != nil {
		if b, err := json.Marshal(e.Payload); err == nil {
			if s := rep.Replace(string(b)); s != string(b) {
				if p, err := decodePayload(e.Type, json.RawMessage(s)); err == nil {
					e.Payload = p
				}
			}
		}
	}
	e.raw.Store(nil)
}

// Identity reports whether a string field of that name names or identifies
// something rather than carrying text: ids, hashes, refs and keys. The
// redaction of records and events leaves such fields alone, so that a
// secret value that happens to occur in one cannot break a reference.
func Identity(field string) bool {
	return field == "ID" || field == "IdempotencyKey" ||
		strings.HasSuffix(field, "ID") || strings.HasSuffix(field, "IDs") || strings.HasSuffix(field, "Ref") ||
		strings.HasSuffix(field, "SHA256") || strings.HasSuffix(field, "Hash")
}

// A plan lists the fields of a struct type that can hold text, so that
// walking a value visits nothing else: its plain strings, and the fields
// that hold text deeper down.
type plan struct {
	strs []int
	deep []int
}

var (
	plansMu    sync.Mutex                                  // serializes adding plans
	plans      atomic.Pointer[map[reflect.Type]*planEntry] // read without a lock; replaced whole
	stringType = reflect.TypeFor[string]()
	rawType    = reflect.TypeFor[json.RawMessage]()
)

// planCache is a direct-mapped cache in front of plans: looking a
// reflect.Type up in a map hashes it, which costs more than walking a
// small payload.
var planCache [1 << planCacheBits]atomic.Pointer[planEntry]

const planCacheBits = 6

type planEntry struct {
	t reflect.Type
	p *plan
}

// planSlot is t's slot in planCache, by a hash of the address of t's
// type descriptor, which is unique to t (types that share a slot take
// turns in it).
func planSlot(t reflect.Type) *atomic.Pointer[planEntry] {
	addr := uint64(uintptr(reflect.ValueOf(t).UnsafePointer()))
	return &planCache[(addr*0x9E3779B97F4A7C15)>>(64-planCacheBits)]
}

// planOf returns the plan of struct type t.
func planOf(t reflect.Type) *plan {
	slot := planSlot(t)
	if e := slot.Load(); e != nil && e.t == t {
		return e.p
	}
	e := lookupPlan(t)
	slot.Store(e) // an entry made once per type: taking turns allocates nothing
	return e.p
}

// lookupPlan returns the plan of struct type t, making it the first time.
func lookupPlan(t reflect.Type) *planEntry {
	if m := plans.Load(); m != nil {
		if e, ok := (*m)[t]; ok {
			return e
		}
	}
	p := &plan{}
	for i := range t.NumField() {
		f := t.Field(i)
		names := f.Type == stringType || f.Type.Kind() == reflect.Slice && f.Type.Elem() == stringType
		switch {
		case !f.IsExported() || (names && Identity(f.Name)) || !holdsText(f.Type, nil):
		case f.Type == stringType:
			p.strs = append(p.strs, i)
		default:
			p.deep = append(p.deep, i)
		}
	}
	plansMu.Lock()
	defer plansMu.Unlock()
	e := &planEntry{t: t, p: p}
	next := map[reflect.Type]*planEntry{t: e}
	if m := plans.Load(); m != nil {
		for k, v := range *m {
			next[k] = v
		}
	}
	plans.Store(&next)
	return e
}

// holdsText reports whether a value of type t can hold a string to
// redact: a plain string (named string types are enums), JSON text, or a
// container of them. seen breaks cycles.
func holdsText(t reflect.Type, seen map[reflect.Type]bool) bool {
	switch t.Kind() {
	case reflect.String:
		return t == stringType
	case reflect.Interface:
		return true
	case reflect.Pointer, reflect.Slice, reflect.Array:
		if t == rawType {
			return true
		}
		return holdsText(t.Elem(), seen)
	case reflect.Map:
		return holdsText(t.Elem(), seen)
	case reflect.Struct:
		if seen[t] {
			return false
		}
		if seen == nil {
			seen = make(map[reflect.Type]bool)
		}
		seen[t] = true
		for i := range t.NumField() {
			f := t.Field(i)
			if f.IsExported() && holdsText(f.Type, seen) {
				return true
			}
		}
	}
	return false
}

// redactValue returns v with its text redacted, and whether anything
// changed; when something did, the value returned is a copy and v is
// untouched.
func redactValue(v reflect.Value, r Redactor) (reflect.Value, bool) {
	switch v.Kind() {
	case reflect.String:
		if v.Type() != stringType {
			return v, false
		}
		s := v.String()
		if red := r.Text(s); red != s {
			return reflect.ValueOf(red), true
		}
	case reflect.Pointer:
		if v.IsNil() {
			return v, false
		}
		if e, ok := redactValue(v.Elem(), r); ok {
			p := reflect.New(v.Type().Elem())
			p.Elem().Set(e)
			return p, true
		}
	case reflect.Interface:
		if v.IsNil() {
			return v, false
		}
		if e, ok := redactValue(v.Elem(), r); ok {
			out := reflect.New(v.Type()).Elem()
			out.Set(e)
			return out, true
		}
	case reflect.Slice:
		if v.Type() == rawType {
			s := string(v.Bytes())
			if red := r.JSON(s); red != s {
				return reflect.ValueOf(json.RawMessage(red)), true
			}
			return v, false
		}
		return redactElems(v, r)
	case reflect.Map:
		return redactMap(v, r)
	case reflect.Struct:
		return redactStruct(v, r)
	}
	return v, false
}

// redactElems redacts the elements of slice v, copying it on the first
// change.
func redactElems(v reflect.Value, r Redactor) (reflect.Value, bool) {
	var out reflect.Value
	for i := range v.Len() {
		e, ok := redactValue(v.Index(i), r)
		if !ok {
			continue
		}
		if !out.IsValid() {
			out = reflect.MakeSlice(v.Type(), v.Len(), v.Len())
			reflect.Copy(out, v)
		}
		out.Index(i).Set(e)
	}
	return out, out.IsValid()
}

// redactMap redacts the values of map v, copying it on the first change.
func redactMap(v reflect.Value, r Redactor) (reflect.Value, bool) {
	if v.IsNil() {
		return v, false
	}
	var out reflect.Value
	it := v.MapRange()
	for it.Next() {
		e, ok := redactValue(it.Value(), r)
		if !ok {
			continue
		}
		if !out.IsValid() {
			out = reflect.MakeMapWithSize(v.Type(), v.Len())
			for _, k := range v.MapKeys() {
				out.SetMapIndex(k, v.MapIndex(k))
			}
		}
		out.SetMapIndex(it.Key(), e)
	}
	return out, out.IsValid()
}

// redactStruct redacts the fields of struct v its plan lists, copying it
// on the first change.
func redactStruct(v reflect.Value, r Redactor) (reflect.Value, bool) {
	var out reflect.Value
	p := planOf(v.Type())
	for _, i := range p.strs {
		s := v.Field(i).String()
		red := r.Text(s)
		if red == s {
			continue
		}
		if !out.IsValid() {
			out = reflect.New(v.Type()).Elem()
			out.Set(v)
		}
		out.Field(i).SetString(red)
	}
	for _, i := range p.deep {
		e, ok := redactValue(v.Field(i), r)
		if !ok {
			continue
		}
		if !out.IsValid() {
			out = reflect.New(v.Type()).Elem()
			out.Set(v)
		}
		out.Field(i).Set(e)
	}
	return out, out.IsValid()
}
