package config

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
	"unicode"

	"github.com/agentrt/agentrt/internal/yamlpos"
)

// The keys of the execution section's mappings, of an agent's sandbox
// and of a tool's output limits.
var (
	executionKeys    = []string{"max_parallel", "output", "redact", "process", "sandbox"}
	outputLimitKeys  = []string{"inline_bytes", "max_bytes"}
	redactKeys       = []string{"secret_env", "patterns", "token_shapes"}
	processKeys      = []string{"env_allow"}
	sandboxUserKeys  = []string{"uid", "gid"}
	sandboxKeys      = []string{"mode", "network", "read_roots", "write_roots", "limits", "tmp_size", "max_write_bytes"}
	sandboxLimitKeys = []string{"processes", "memory_bytes", "file_bytes", "cpu_seconds"}
)

// Limits on the execution section's numbers.
const (
	maxParallelLimit = 256
	minInlineBytes   = 256
	maxInlineBytes   = 16 << 20
	maxOutputBytes   = 1 << 62
	// maxSandboxID is the largest user or group id (2^32-2; -1 is
	// "no id" to the kernel).
	maxSandboxID = 1<<32 - 2
)

// execution decodes the execution section. A null section leaves every
// default.
func (d *decoder) execution(e yamlpos.Field, x *Execution) {
	m, _ := d.mapping(e, "execution")
	for _, f := range m.Fields() {
		label := "execution." + f.Key
		switch f.Key {
		case "max_parallel":
			if n, st := d.count(f, label, 1, maxParallelLimit); st == valOK {
				x.MaxParallel = int(n)
			}
		case "output":
			x.Output = d.outputLimits(f, "execution.output", func(k string) string { return "execution.output." + k })
		case "redact":
			d.redact(f, x)
		case "process":
			pm, _ := d.mapping(f, label)
			for _, pf := range pm.Fields() {
				switch pf.Key {
				case "env_allow":
					x.EnvAllow = d.envNameList(pf, "execution.process.env_allow")
				default:
					d.unknownKey(pf, label, processKeys)
				}
			}
		case "sandbox":
			sm, _ := d.mapping(f, label)
			for _, sf := range sm.Fields() {
				if !slices.Contains(sandboxUserKeys, sf.Key) {
					d.unknownKey(sf, label, sandboxUserKeys)
					continue
				}
				// Not 0: root is what the sandbox user replaces.
				id, st := d.count(sf, label+"."+sf.Key, 1, maxSandboxID)
				if st != valOK {
					continue
				}
				if sf.Key == "uid" {
					x.SandboxUID = int(id)
				} else {
					x.SandboxGID = int(id)
				}
			}
		default:
			d.unknownKey(f, "execution", executionKeys)
		}
	}
}

// redact decodes execution.redact.
func (d *decoder) redact(e yamlpos.Field, x *Execution) {
	m, _ := d.mapping(e, "execution.redact")
	for _, f := range m.Fields() {
		label := "execution.redact." + f.Key
		switch f.Key {
		case "secret_env":
			x.SecretEnv = d.envNameList(f, label)
		case "patterns":
			x.RedactPatterns = d.patterns(f, label)
		case "token_shapes":
			if b, st := d.boolean(f, label); st == valOK {
				x.NoTokenShapes = !b
			}
		default:
			d.unknownKey(f, "execution.redact", redactKeys)
		}
	}
}

// patterns decodes a list of regular expressions (RE2 syntax), reporting
// each that does not compile at its own position.
func (d *decoder) patterns(f yamlpos.Field, label string) []string {
	var out []string
	d.scalarList(f, label, "regular expressions", func(item *yamlpos.Value) {
		switch {
		case item.Text == "":
			d.errorAt(item.Pos, "%s must not list an empty pattern (it would match everywhere)", label)
		default:
			if _, err := regexp.Compile(item.Text); err != nil {
				d.errorAt(item.Pos, "pattern %q in %s is not a valid regular expression: %s", item.Text, label, regexpProblem(err))
				return
			}
			if !slices.Contains(out, item.Text) {
				out = append(out, item.Text)
			}
		}
	})
	return out
}

// regexpProblem words a regexp compile error without its "error parsing
// regexp: " prefix.
func regexpProblem(err error) string {
	if se, ok := err.(*syntax.Error); ok {
		return fmt.Sprintf("%s: `%s`", se.Code, se.Expr)
	}
	return err.Error()
}

// envNameList decodes a list of environment variable names.
func (d *decoder) envNameList(f yamlpos.Field, label string) []string {
	var out []string
	d.scalarList(f, label, "environment variable names", func(item *yamlpos.Value) {
		switch {
		case !envNamePattern.MatchString(item.Text):
			d.errorAt(item.Pos, "invalid variable name %q in %s: use letters, digits and '_', not starting with a digit", item.Text, label)
		case slices.Contains(out, item.Text):
			d.errorAt(item.Pos, "variable %q is listed twice in %s", item.Text, label)
		default:
			out = append(out, item.Text)
		}
	})
	return out
}

// outputLimits decodes an output mapping (execution.output or a tool's
// output); where names it for unknown keys, label one of its keys.
func (d *decoder) outputLimits(e yamlpos.Field, where string, label func(string) string) OutputLimits {
	var o OutputLimits
	m, _ := d.mapping(e, where)
	var maxVal *yamlpos.Value
	for _, f := range m.Fields() {
		switch f.Key {
		case "inline_bytes":
			if n, st := d.count(f, label(f.Key), minInlineBytes, maxInlineBytes); st == valOK {
				o.InlineBytes = int(n)
			}
		case "max_bytes":
			if n, st := d.count(f, label(f.Key), minInlineBytes, maxOutputBytes); st == valOK {
				o.MaxBytes, maxVal = n, f.Value()
			}
		default:
			d.unknownKey(f, where, outputLimitKeys)
		}
	}
	if maxVal != nil && o.InlineBytes > 0 && o.MaxBytes < int64(o.InlineBytes) {
		d.errorAt(maxVal.Pos, "%s must be at least inline_bytes (%d), got %d", label("max_bytes"), o.InlineBytes, o.MaxBytes)
		o.MaxBytes = 0
	}
	return o
}

// defaultSandbox is an agent's sandbox when the file sets none.
func defaultSandbox() Sandbox {
	return Sandbox{Mode: SandboxWorkspaceWrite, Network: SandboxNetworkNone}
}

// sandboxNetwork is a mode's network when the file sets none.
func sandboxNetwork(mode string) string {
	if mode == SandboxFullAccess {
		return SandboxNetworkFull
	}
	return SandboxNetworkNone
}

// sandbox decodes an agent's sandbox key: a mode name, or a mapping.
func (d *decoder) sandbox(e yamlpos.Field, where string) Sandbox {
	s := defaultSandbox()
	v := e.Value()
	switch {
	case v == nil || v.Kind == yamlpos.Null:
		return s
	case v.Scalar():
		if mode, st := d.sandboxMode(e, "sandbox in "+where); st == valOK {
			s.Mode, s.Network = mode, sandboxNetwork(mode)
		}
		return s
	case v.Kind != yamlpos.Map:
		d.errorAt(v.Pos, "sandbox in %s must be a mode (%s) or a mapping, got %s", where, strings.Join(SandboxModes, ", "), v.Describe())
		return s
	}
	in := "sandbox of " + where
	modeSt := valNull
	var network string
	var writeRoots *yamlpos.Field
	for _, f := range v.Fields() {
		label := "sandbox." + f.Key + " in " + where
		switch f.Key {
		case "mode":
			var mode string
			if mode, modeSt = d.sandboxMode(f, label); modeSt == valOK {
				s.Mode = mode
			}
		case "network":
			network, _ = d.oneOf(f, label, SandboxNetworks)
		case "read_roots":
			s.ReadRoots = d.roots(f, label)
		case "write_roots":
			s.WriteRoots = d.roots(f, label)
			if fv := f.Value(); fv != nil && fv.Kind != yamlpos.Null {
				writeRoots = &f
			}
		case "limits":
			d.sandboxLimits(f, where, &s)
		case "tmp_size":
			if n, ok := d.limit(f, label, 1<<62); ok {
				s.TmpBytes = n
			}
		case "max_write_bytes":
			if n, ok := d.limit(f, label, 1<<62); ok {
				s.WriteBytes = n
			}
		default:
			d.unknownKey(f, in, sandboxKeys)
		}
	}
	if modeSt == valNull {
		d.errorAt(e.KeyPos, "mode is required in %s (one of %s)", in, strings.Join(SandboxModes, ", "))
	}
	s.Network = network
	if network == "" {
		s.Network = sandboxNetwork(s.Mode)
	}
	if modeSt == valOK && writeRoots != nil && s.Mode == SandboxReadOnly {
		d.errorAt(writeRoots.KeyPos, "write_roots in %s need mode %s or %s, not %s", in, SandboxWorkspaceWrite, SandboxFullAccess, s.Mode)
	}
	return s
}

// sandboxMode decodes f's value as one of SandboxModes.
func (d *decoder) sandboxMode(f yamlpos.Field, label string) (string, status) {
	return d.oneOf(f, label, SandboxModes)
}

// roots decodes a sandbox's read_roots or write_roots: paths, resolved
// against the config file's folder, that need not exist when the file is
// loaded.
func (d *decoder) roots(f yamlpos.Field, label string) []string {
	var out []string
	d.scalarList(f, label, "paths", func(item *yamlpos.Value) {
		switch {
		case item.Text == "":
			d.errorAt(item.Pos, "%s must not list an empty path", label)
		case strings.HasPrefix(item.Text, "~"):
			d.errorAt(item.Pos, "path %q in %s starts with ~, which is not expanded; write an absolute path", item.Text, label)
		default:
			if p := d.abs(item.Text); !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
	})
	return out
}

// sandboxLimits decodes a sandbox's limits: zero means the default, -1
// unlimited.
func (d *decoder) sandboxLimits(e yamlpos.Field, where string, s *Sandbox) {
	m, _ := d.mapping(e, "sandbox.limits in "+where)
	for _, f := range m.Fields() {
		label := "sandbox.limits." + f.Key + " in " + where
		var hi int64 = 1 << 62
		switch f.Key {
		case "processes":
			hi = 1<<31 - 1
		case "memory_bytes", "file_bytes", "cpu_seconds":
		default:
			d.unknownKey(f, "sandbox.limits of "+where, sandboxLimitKeys)
			continue
		}
		n, ok := d.limit(f, label, hi)
		if !ok {
			continue
		}
		switch f.Key {
		case "processes":
			s.Processes = int(n)
		case "memory_bytes":
			s.MemoryBytes = n
		case "file_bytes":
			s.FileBytes = n
		case "cpu_seconds":
			s.CPUSeconds = n
		}
	}
}

// limit decodes a sandbox limit: an integer between 0 (the default) and
// hi, or -1 for no limit.
func (d *decoder) limit(f yamlpos.Field, label string, hi int64) (int64, bool) {
	n, st := d.integer(f, label)
	switch {
	case st != valOK:
		return 0, false
	case n < -1 || n > hi:
		d.errorAt(f.Value().Pos, "%s must be between 0 and %d, or -1 for no limit, got %d", label, hi, n)
		return 0, false
	}
	return n, true
}

// concurrency decodes a tool's concurrency: parallel, exclusive, or a
// resource key template whose {names} checkConcurrency checks against the
// input schema.
func (d *decoder) concurrency(f yamlpos.Field, label string) (string, status) {
	s, st := d.str(f, label)
	if st != valOK {
		return "", st
	}
	pos := f.Value().Pos
	switch {
	case s == "":
		d.errorAt(pos, "%s must not be empty: use parallel, exclusive or a resource key such as file:{path}", label)
		return "", valBad
	case strings.IndexFunc(s, func(r rune) bool { return unicode.IsSpace(r) || !unicode.IsPrint(r) }) >= 0:
		d.errorAt(pos, "%s must be parallel, exclusive or a resource key without spaces or control characters, got %q", label, s)
		return "", valBad
	}
	if _, err := templateNames(s); err != "" {
		d.errorAt(pos, "%s: resource key %q %s", label, s, err)
		return "", valBad
	}
	return s, valOK
}

// templateNames returns the names a resource key template puts in braces,
// or what is wrong with its braces.
func templateNames(s string) ([]string, string) {
	var names []string
	open := -1
	for i, r := range s {
		switch {
		case r == '{' && open >= 0:
			return nil, fmt.Sprintf("nests braces at offset %d", i)
		case r == '{':
			open = i
		case r == '}' && open < 0:
			return nil, fmt.Sprintf("has a '}' without a '{' at offset %d", i)
		case r == '}':
			if i == open+1 {
				return nil, "has empty braces {}; name an input property, as in file:{path}"
			}
			names = append(names, s[open+1:i])
			open = -1
		}
	}
	if open >= 0 {
		return nil, fmt.Sprintf("has a '{' without a '}' at offset %d", open)
	}
	return names, ""
}

// checkConcurrency reports names in a tool's resource key template that
// are not properties of its input schema, when the schema declares
// properties.
func (d *decoder) checkConcurrency(t *Tool, pos yamlpos.Pos, where string) {
	props, declared := schemaProperties(t.InputSchema)
	if !declared {
		return
	}
	names, _ := templateNames(t.Concurrency)
	known := slices.Sorted(maps.Keys(props))
	for _, name := range names {
		if _, ok := props[name]; !ok {
			d.errorAt(pos, "concurrency in %s names {%s}, which is not a property of its input_schema%s", where, name, didYouMean(name, known))
		}
	}
}

// schemaProperties returns the properties of an input schema, already
// valid JSON, and whether it has a properties key.
func schemaProperties(raw json.RawMessage) (map[string]json.RawMessage, bool) {
	var schema, props map[string]json.RawMessage
	if json.Unmarshal(raw, &schema) != nil {
		return nil, false
	}
	p, ok := schema["properties"]
	if !ok || json.Unmarshal(p, &props) != nil {
		return nil, ok
	}
	return props, true
}
