package replay

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentrt/agentrt/internal/yamlpos"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/runtype"
)

// Script is a parsed and validated replay script: the responses a Provider
// plays, in order. A Script is immutable; any number of Providers and
// goroutines may share one.
type Script struct {
	name      string
	model     string
	responses []response
}

// response is one prepared entry of a script. Everything Generate returns
// is computed here, at parse time, so that Generate only copies.
type response struct {
	text      string
	toolCalls []runtype.MessageToolCall
	finish    model.FinishReason
	usage     runtype.Usage
	raw       []byte
	err       *model.Error // set for an error entry; copied on each use
	delay     time.Duration
}

// Name returns the name the script was parsed under: a file path for
// Load.
func (s *Script) Name() string { return s.name }

// Model returns the model name the script reports: its model key, or else
// the base name of its file.
func (s *Script) Model() string { return s.model }

// Len returns the number of responses in the script.
func (s *Script) Len() int { return len(s.responses) }

// Load reads and parses the replay script at path. Problems in the script
// are reported as a *ScriptError whose positions name path.
func Load(path string) (*Script, error) {
	data, err := yamlpos.ReadFile(path)
	if le := (*yamlpos.LimitError)(nil); errors.As(err, &le) {
		return nil, &ScriptError{Problems: []Problem{{File: path, Message: le.Message}}}
	}
	if err != nil {
		return nil, fmt.Errorf("reading replay script: %w", err)
	}
	return Parse(path, data)
}

// Parse parses and validates a replay script. Name is the script's file
// name: it prefixes problem positions and, without a model key, its base
// name is the model name. Every problem found is reported, in one
// *ScriptError, except that a YAML syntax error stops parsing at once.
func Parse(name string, data []byte) (*Script, error) {
	probs := &problems{file: name}
	opts := yamlpos.Options{CoreTags: true, EntryPositions: true, Report: probs.yamlProblem}
	doc, next, err := yamlpos.Parse(data, opts)
	var se *yamlpos.SyntaxError
	var le *yamlpos.LimitError
	switch {
	case errors.As(err, &le):
		probs.list = append(probs.list, Problem{File: name, Line: le.Pos.Line, Column: le.Pos.Column, Message: le.Message})
		return nil, probs.err()
	case errors.As(err, &se):
		probs.add(se.Pos, "syntax error: "+se.Message)
		return nil, probs.err()
	case doc == nil:
		probs.add(yamlpos.Pos{Line: 1, Column: 1}, "the script is empty; it needs a responses list")
		return nil, probs.err()
	}
	root := doc.Root()
	if root == nil {
		return nil, probs.err()
	}
	if next != (yamlpos.Pos{}) {
		probs.add(next, "a replay script is one YAML document, but another starts here")
	}

	s := &Script{name: name, model: defaultModel(name)}
	b := &builder{probs: probs}
	b.script(s, root)
	if err := probs.err(); err != nil {
		return nil, err
	}
	return s, nil
}

func defaultModel(name string) string {
	if name == "" {
		return "replay"
	}
	return filepath.Base(name)
}

// Keys each mapping of a script may hold, in the order messages list them.
var (
	scriptKeys    = []string{"model", "responses"}
	responseKeys  = []string{"text", "tool_calls", "usage", "finish_reason", "error", "delay_ms"}
	toolCallKeys  = []string{"name", "input", "raw_input", "id"}
	usageKeys     = []string{"input_tokens", "output_tokens", "cached_input_tokens"}
	errorKeys     = []string{"kind", "message", "retry_after_ms"}
	finishReasons = []string{
		string(model.FinishStop), string(model.FinishToolCalls),
		string(model.FinishLength), string(model.FinishContentFilter),
	}
	errorKinds = []string{
		string(model.ErrRateLimit), string(model.ErrOverloaded), string(model.ErrServer),
		string(model.ErrTimeout), string(model.ErrNetwork), string(model.ErrAuth),
		string(model.ErrInvalidRequest), string(model.ErrContextLength),
		string(model.ErrContentFilter), string(model.ErrScriptExhausted),
	}
)

// maxMillis is the largest millisecond count a time.Duration holds.
const maxMillis = math.MaxInt64 / int64(time.Millisecond)

// builder validates values and builds a Script, reporting every problem.
type builder struct {
	probs *problems
}

// rawResponse is a response entry as Response.Raw encodes it: the keys the
// script set, with input as JSON. It is itself a valid response entry.
type rawResponse struct {
	Text         string        `json:"text,omitempty"`
	ToolCalls    []rawToolCall `json:"tool_calls,omitempty"`
	Usage        *rawUsage     `json:"usage,omitempty"`
	FinishReason string        `json:"finish_reason,omitempty"`
	DelayMS      int64         `json:"delay_ms,omitempty"`
}

type rawToolCall struct {
	Name     string          `json:"name"`
	ID       string          `json:"id,omitempty"`
	Input    json.RawMessage `json:"input,omitempty"`
	RawInput *string         `json:"raw_input,omitempty"`
}

type rawUsage struct {
	InputTokens       int64 `json:"input_tokens,omitempty"`
	OutputTokens      int64 `json:"output_tokens,omitempty"`
	CachedInputTokens int64 `json:"cached_input_tokens,omitempty"`
}

func (b *builder) add(p yamlpos.Pos, ctx, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if ctx != "" {
		msg = ctx + ": " + msg
	}
	b.probs.add(p, msg)
}

func (b *builder) script(s *Script, root *yamlpos.Value) {
	if root.Kind != yamlpos.Map {
		b.add(root.Pos, "", "a replay script must be a mapping with a responses key, not %s", root.Kind)
		return
	}
	var responses *yamlpos.Value
	for _, f := range root.Fields() {
		switch f.Key {
		case "model":
			if m, ok := b.str("", f); ok {
				if m == "" {
					b.add(f.Value().Pos, "", "model must not be empty; leave it out to use the file name")
				}
				s.model = m
			}
		case "responses":
			responses = f.Value()
		default:
			b.unknownKey("", f, scriptKeys)
		}
	}
	switch {
	case responses == nil:
		b.add(root.Pos, "", "responses is missing; a script needs at least one response")
		return
	case responses.Kind != yamlpos.Seq:
		b.add(responses.Pos, "", "responses must be a sequence, not %s", responses.Kind)
		return
	}
	items := responses.Items()
	if len(items) == 0 {
		b.add(responses.Pos, "", "responses is empty; a script needs at least one response")
		return
	}
	s.responses = make([]response, len(items))
	for i, item := range items {
		s.responses[i] = b.response(i+1, item)
	}
}

func (b *builder) response(n int, v *yamlpos.Value) response {
	var r response
	ctx := fmt.Sprintf("response %d", n)
	if !b.is(v, yamlpos.Map, "", ctx) {
		return r
	}
	fields := v.Fields()
	hasError := slices.ContainsFunc(fields, func(f yamlpos.Field) bool { return f.Key == "error" })
	var raw rawResponse
	for _, f := range fields {
		switch f.Key {
		case "text", "tool_calls", "usage", "finish_reason":
			if hasError {
				b.add(f.KeyPos, ctx, "%s cannot go with error (only delay_ms can)", f.Key)
				continue
			}
		}
		switch f.Key {
		case "text":
			r.text, _ = b.str(ctx, f)
			raw.Text = r.text
		case "tool_calls":
			r.toolCalls, raw.ToolCalls = b.toolCalls(ctx, f)
		case "usage":
			r.usage = b.usage(ctx, f)
			raw.Usage = &rawUsage{
				InputTokens:       r.usage.InputTokens,
				OutputTokens:      r.usage.OutputTokens,
				CachedInputTokens: r.usage.CachedInputTokens,
			}
		case "finish_reason":
			s, ok := b.str(ctx, f)
			if !ok {
				continue
			}
			if !slices.Contains(finishReasons, s) {
				b.add(f.Value().Pos, ctx, "unknown finish_reason %q%s", s, suggest(s, finishReasons, "valid finish reasons"))
				continue
			}
			r.finish = model.FinishReason(s)
			raw.FinishReason = s
		case "error":
			r.err = b.errorEntry(ctx, f, n)
		case "delay_ms":
			ms, _ := b.millis(ctx, f)
			r.delay = time.Duration(ms) * time.Millisecond
			raw.DelayMS = ms
		default:
			b.unknownKey(ctx, f, responseKeys)
		}
	}
	if r.finish == "" {
		r.finish = model.FinishStop
		if len(r.toolCalls) > 0 {
			r.finish = model.FinishToolCalls
		}
	}
	if r.err == nil {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(raw); err != nil {
			b.add(v.Pos, ctx, "encoding the response as JSON: %v", err)
		}
		r.raw = bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	}
	return r
}

func (b *builder) toolCalls(ctx string, f yamlpos.Field) ([]runtype.MessageToolCall, []rawToolCall) {
	v := f.Value()
	if !b.is(v, yamlpos.Seq, ctx, "tool_calls") {
		return nil, nil
	}
	items := v.Items()
	calls := make([]runtype.MessageToolCall, 0, len(items))
	raws := make([]rawToolCall, 0, len(items))
	for i, item := range items {
		tctx := fmt.Sprintf("%s, tool call %d", ctx, i+1)
		if !b.is(item, yamlpos.Map, "", tctx) {
			continue
		}
		call := runtype.MessageToolCall{Arguments: "{}"}
		var raw rawToolCall
		hasName, hasInput := false, false
		for _, tf := range item.Fields() {
			switch tf.Key {
			case "name":
				hasName = true
				call.Name, _ = b.str(tctx, tf)
				if tv := tf.Value(); call.Name == "" && tv != nil && tv.Kind == yamlpos.String {
					b.add(tv.Pos, tctx, "name must not be empty")
				}
			case "id":
				call.ID, _ = b.str(tctx, tf)
			case "input", "raw_input":
				if hasInput {
					b.add(tf.KeyPos, tctx, "input and raw_input are both set; keep one")
					continue
				}
				hasInput = true
				if tf.Key == "raw_input" {
					s, ok := b.str(tctx, tf)
					if ok {
						call.Arguments = s
						raw.RawInput = &s
					}
					continue
				}
				tv := tf.Value()
				if tv == nil {
					continue
				}
				if tv.Kind != yamlpos.Map {
					b.add(tv.Pos, tctx, "input must be a mapping (a JSON object), not %s; use raw_input for other text", tv.Kind)
					continue
				}
				args, ok := b.input(tctx, tv)
				if !ok {
					continue
				}
				call.Arguments = string(args)
				raw.Input = args
			default:
				b.unknownKey(tctx, tf, toolCallKeys)
			}
		}
		if !hasName {
			b.add(item.Pos, tctx, "name is missing")
		}
		raw.Name, raw.ID = call.Name, call.ID
		calls = append(calls, call)
		raws = append(raws, raw)
	}
	if len(calls) == 0 {
		return nil, nil
	}
	return calls, raws
}

func (b *builder) usage(ctx string, f yamlpos.Field) runtype.Usage {
	v := f.Value()
	var u runtype.Usage
	if !b.is(v, yamlpos.Map, ctx, "usage") {
		return u
	}
	uctx := ctx + ", usage"
	for _, uf := range v.Fields() {
		switch uf.Key {
		case "input_tokens":
			u.InputTokens, _ = b.count(uctx, uf, math.MaxInt64)
		case "output_tokens":
			u.OutputTokens, _ = b.count(uctx, uf, math.MaxInt64)
		case "cached_input_tokens":
			u.CachedInputTokens, _ = b.count(uctx, uf, math.MaxInt64)
		default:
			b.unknownKey(uctx, uf, usageKeys)
		}
	}
	return u
}

func (b *builder) errorEntry(ctx string, f yamlpos.Field, n int) *model.Error {
	v := f.Value()
	if !b.is(v, yamlpos.Map, ctx, "error") {
		return nil
	}
	ectx := ctx + ", error"
	e := &model.Error{}
	fields := v.Fields()
	for _, ef := range fields {
		switch ef.Key {
		case "kind":
			s, ok := b.str(ectx, ef)
			if !ok {
				continue
			}
			if !slices.Contains(errorKinds, s) {
				b.add(ef.Value().Pos, ectx, "unknown kind %q%s", s, suggest(s, errorKinds, "valid kinds"))
				continue
			}
			e.Kind = model.ErrorKind(s)
		case "message":
			e.Message, _ = b.str(ectx, ef)
		case "retry_after_ms":
			ms, _ := b.millis(ectx, ef)
			e.RetryAfter = time.Duration(ms) * time.Millisecond
		default:
			b.unknownKey(ectx, ef, errorKeys)
		}
	}
	if !slices.ContainsFunc(fields, func(ef yamlpos.Field) bool { return ef.Key == "kind" }) {
		b.add(v.Pos, ectx, "kind is missing")
	}
	if e.Message == "" {
		e.Message = fmt.Sprintf("scripted error (replay response %d)", n)
	}
	return e
}

// is reports whether v, named what in messages, is of kind k, and reports
// it when it is not; nil, already reported, is not.
func (b *builder) is(v *yamlpos.Value, k yamlpos.Kind, ctx, what string) bool {
	if v != nil && v.Kind != k {
		b.add(v.Pos, ctx, "%s must be %s, not %s", what, k, v.Kind)
	}
	return v != nil && v.Kind == k
}

// str returns a string field's value.
func (b *builder) str(ctx string, f yamlpos.Field) (string, bool) {
	v := f.Value()
	if v == nil {
		return "", false
	}
	if v.Kind != yamlpos.String {
		hint := ""
		if v.Scalar() {
			hint = fmt.Sprintf(" (quote it: %q)", v.Text)
		}
		b.add(v.Pos, ctx, "%s must be a string, not %s%s", f.Key, v.Kind, hint)
		return "", false
	}
	return v.Text, true
}

// count returns a non-negative integer field's value, at most limit.
func (b *builder) count(ctx string, f yamlpos.Field, limit int64) (int64, bool) {
	v := f.Value()
	if v == nil {
		return 0, false
	}
	switch {
	case v.Kind == yamlpos.String && outOfRange(v.Text):
		// The YAML parser reads integers beyond 64 bits as strings.
		b.add(v.Pos, ctx, "%s is too large: %s (at most %d)", f.Key, v.Text, limit)
	case v.Kind != yamlpos.Int:
		b.add(v.Pos, ctx, "%s must be an integer, not %s", f.Key, v.Kind)
	case v.Int < 0:
		b.add(v.Pos, ctx, "%s must not be negative, got %d", f.Key, v.Int)
	case !v.IntOK || v.Int > limit:
		b.add(v.Pos, ctx, "%s is too large: %s (at most %d)", f.Key, v.Num, limit)
	default:
		return v.Int, true
	}
	return 0, false
}

// outOfRange reports whether s is a decimal integer beyond 64 bits.
func outOfRange(s string) bool {
	_, err := strconv.ParseInt(s, 10, 64)
	return errors.Is(err, strconv.ErrRange)
}

// millis returns a field holding milliseconds that fit a time.Duration.
func (b *builder) millis(ctx string, f yamlpos.Field) (int64, bool) {
	return b.count(ctx, f, maxMillis)
}

func (b *builder) unknownKey(ctx string, f yamlpos.Field, known []string) {
	b.add(f.KeyPos, ctx, "unknown key %q%s", f.Key, suggest(f.Key, known, "valid keys"))
	f.Value() // reports YAML problems in the value too, as for a known key
}

// suggest returns " (did you mean "x"?)" for the closest of valid within
// two edits of s, or else " (<what>: a, b, c)".
func suggest(s string, valid []string, what string) string {
	if best, d := yamlpos.Nearest(s, valid); best != "" && d < 3 {
		return fmt.Sprintf(" (did you mean %q?)", best)
	}
	return fmt.Sprintf(" (%s: %s)", what, strings.Join(valid, ", "))
}

// ScriptError reports every problem found in a replay script, in file
// order.
type ScriptError struct {
	Problems []Problem
}

// Error returns one "file:line:col: message" line per problem.
func (e *ScriptError) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

// Problem is one problem in a replay script, at a 1-based line and column;
// Line is zero for a problem with the file as a whole (it is too large).
type Problem struct {
	File    string
	Line    int
	Column  int
	Message string
}

// String formats the problem as "file:line:col: message", the form editors
// and terminals link to the spot.
func (p Problem) String() string {
	if p.Line == 0 {
		return strings.TrimPrefix(p.File+": "+p.Message, ": ")
	}
	if p.File == "" {
		return fmt.Sprintf("%d:%d: %s", p.Line, p.Column, p.Message)
	}
	return fmt.Sprintf("%s:%d:%d: %s", p.File, p.Line, p.Column, p.Message)
}

// problems collects the problems of one script.
type problems struct {
	file string
	list []Problem
}

func (ps *problems) add(p yamlpos.Pos, msg string) {
	ps.list = append(ps.list, Problem{File: ps.file, Line: p.Line, Column: p.Column, Message: msg})
}

// err returns the problems sorted by position, without duplicates (an
// aliased value is checked once per use), or nil when there are none.
func (ps *problems) err() error {
	if len(ps.list) == 0 {
		return nil
	}
	list := slices.Clone(ps.list)
	slices.SortStableFunc(list, func(a, b Problem) int {
		return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.Column, b.Column))
	})
	list = slices.Compact(list)
	return &ScriptError{Problems: list}
}
