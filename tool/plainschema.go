package tool

import "encoding/json"

// plainSchema is an input schema written only with type (one name),
// properties, required and additionalProperties (true or false), plus
// annotations (title, description, default, examples, $comment),
// nested the same way: what most tools declare. Checking an input
// against it directly is much cheaper than the JSON Schema validator,
// which tracks evaluated properties for every object. It only confirms
// valid input: the validator still judges (and words) what it does not
// confirm.
type plainSchema struct {
	typ        string // "" for any type
	props      map[string]*plainSchema
	required   []string
	additional bool // additionalProperties; true unless it is false
}

// plainOf returns doc as a plainSchema, or nil when it uses anything
// else. doc is a schema decoded by jsonschema.UnmarshalJSON.
func plainOf(doc any) *plainSchema {
	obj, ok := doc.(map[string]any)
	if !ok {
		return nil // a boolean schema, say
	}
	s := &plainSchema{additional: true}
	for k, v := range obj {
		switch k {
		case "title", "description", "default", "examples", "$comment":
		case "type":
			t, ok := v.(string)
			if !ok {
				return nil
			}
			switch t {
			case "object", "string", "boolean", "number", "null", "array":
				s.typ = t
			default: // integer: leave what counts as one to the validator
				return nil
			}
		case "properties":
			props, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			s.props = make(map[string]*plainSchema, len(props))
			for name, p := range props {
				if s.props[name] = plainOf(p); s.props[name] == nil {
					return nil
				}
			}
		case "required":
			names, ok := v.([]any)
			if !ok {
				return nil
			}
			for _, n := range names {
				name, ok := n.(string)
				if !ok {
					return nil
				}
				s.required = append(s.required, name)
			}
		case "additionalProperties":
			b, ok := v.(bool)
			if !ok {
				return nil
			}
			s.additional = b
		default:
			return nil
		}
	}
	return s
}

// valid reports whether v, decoded with numbers as json.Number, certainly
// matches the schema.
func (s *plainSchema) valid(v any) bool {
	switch s.typ {
	case "object":
		if _, ok := v.(map[string]any); !ok {
			return false
		}
	case "string":
		if _, ok := v.(string); !ok {
			return false
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			return false
		}
	case "number":
		if _, ok := v.(json.Number); !ok {
			return false
		}
	case "null":
		if v != nil {
			return false
		}
	case "array":
		if _, ok := v.([]any); !ok {
			return false
		}
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return true // properties and required constrain objects only
	}
	for _, name := range s.required {
		if _, ok := obj[name]; !ok {
			return false
		}
	}
	for name, val := range obj {
		p, ok := s.props[name]
		switch {
		case ok && !p.valid(val):
			return false
		case !ok && !s.additional:
			return false
		}
	}
	return true
}
