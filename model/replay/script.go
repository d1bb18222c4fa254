package replay

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/parser"

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
	data, err := os.ReadFile(path)
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
	f, err := parser.ParseBytes(data, 0)
	if err != nil {
		var ye yaml.Error
		if errors.As(err, &ye) {
			probs.add(tokenPos(ye.GetToken()), "syntax error: "+ye.GetMessage())
		} else {
			probs.add(pos{1, 1}, "syntax error: "+err.Error())
		}
		return nil, probs.err()
	}

	conv := newConverter(probs)
	var root *value
	for _, doc := range f.Docs {
		if doc.Body == nil {
			continue
		}
		if root != nil {
			p := tokenPos(doc.Body.GetToken())
			if doc.Start != nil {
				p = tokenPos(doc.Start)
			}
			probs.add(p, "a replay script is one YAML document, but another starts here")
			break
		}
		root = conv.convert(doc.Body, 0)
		if root == nil {
			return nil, probs.err()
		}
	}
	if root == nil {
		probs.add(pos{1, 1}, "the script is empty; it needs a responses list")
		return nil, probs.err()
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
	enc   jsonEncoder
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

func (b *builder) add(p pos, ctx, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if ctx != "" {
		msg = ctx + ": " + msg
	}
	b.probs.add(p, msg)
}

func (b *builder) script(s *Script, root *value) {
	if root.kind != kindMap {
		b.add(root.pos, "", "a replay script must be a mapping with a responses key, not %s", root.kind)
		return
	}
	var responses *value
	for _, f := range root.fields {
		switch f.key {
		case "model":
			if m, ok := b.str("", f); ok {
				if m == "" {
					b.add(f.val.pos, "", "model must not be empty; leave it out to use the file name")
				}
				s.model = m
			}
		case "responses":
			responses = f.val
		default:
			b.unknownKey("", f, scriptKeys)
		}
	}
	switch {
	case responses == nil:
		b.add(root.pos, "", "responses is missing; a script needs at least one response")
		return
	case responses.kind != kindSeq:
		b.add(responses.pos, "", "responses must be a sequence, not %s", responses.kind)
		return
	case len(responses.items) == 0:
		b.add(responses.pos, "", "responses is empty; a script needs at least one response")
		return
	}
	s.responses = make([]response, len(responses.items))
	for i, item := range responses.items {
		s.responses[i] = b.response(i+1, item)
	}
}

func (b *builder) response(n int, v *value) response {
	var r response
	if v == nil {
		return r
	}
	ctx := fmt.Sprintf("response %d", n)
	if v.kind != kindMap {
		b.add(v.pos, "", "%s must be a mapping, not %s", ctx, v.kind)
		return r
	}
	hasError := slices.ContainsFunc(v.fields, func(f field) bool { return f.key == "error" })
	var raw rawResponse
	for _, f := range v.fields {
		switch f.key {
		case "text", "tool_calls", "usage", "finish_reason":
			if hasError {
				b.add(f.pos, ctx, "%s cannot go with error (only delay_ms can)", f.key)
				continue
			}
		}
		switch f.key {
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
				b.add(f.val.pos, ctx, "unknown finish_reason %q%s", s, suggest(s, finishReasons, "valid finish reasons"))
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
			b.add(v.pos, ctx, "encoding the response as JSON: %v", err)
		}
		r.raw = bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	}
	return r
}

func (b *builder) toolCalls(ctx string, f field) ([]runtype.MessageToolCall, []rawToolCall) {
	if f.val == nil {
		return nil, nil
	}
	if f.val.kind != kindSeq {
		b.add(f.val.pos, ctx, "tool_calls must be a sequence, not %s", f.val.kind)
		return nil, nil
	}
	calls := make([]runtype.MessageToolCall, 0, len(f.val.items))
	raws := make([]rawToolCall, 0, len(f.val.items))
	for i, item := range f.val.items {
		if item == nil {
			continue
		}
		tctx := fmt.Sprintf("%s, tool call %d", ctx, i+1)
		if item.kind != kindMap {
			b.add(item.pos, "", "%s must be a mapping, not %s", tctx, item.kind)
			continue
		}
		call := runtype.MessageToolCall{Arguments: "{}"}
		var raw rawToolCall
		hasName, hasInput := false, false
		for _, tf := range item.fields {
			switch tf.key {
			case "name":
				hasName = true
				call.Name, _ = b.str(tctx, tf)
				if call.Name == "" && tf.val != nil && tf.val.kind == kindString {
					b.add(tf.val.pos, tctx, "name must not be empty")
				}
			case "id":
				call.ID, _ = b.str(tctx, tf)
			case "input", "raw_input":
				if hasInput {
					b.add(tf.pos, tctx, "input and raw_input are both set; keep one")
					continue
				}
				hasInput = true
				if tf.key == "raw_input" {
					s, ok := b.str(tctx, tf)
					if ok {
						call.Arguments = s
						raw.RawInput = &s
					}
					continue
				}
				if tf.val == nil {
					continue
				}
				if tf.val.kind != kindMap {
					b.add(tf.val.pos, tctx, "input must be a mapping (a JSON object), not %s; use raw_input for other text", tf.val.kind)
					continue
				}
				args, err := b.enc.encode(tf.val)
				if err != nil {
					b.add(tf.val.pos, tctx, "%v", err)
					continue
				}
				call.Arguments = string(args)
				raw.Input = args
			default:
				b.unknownKey(tctx, tf, toolCallKeys)
			}
		}
		if !hasName {
			b.add(item.pos, tctx, "name is missing")
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

func (b *builder) usage(ctx string, f field) runtype.Usage {
	var u runtype.Usage
	if f.val == nil {
		return u
	}
	if f.val.kind != kindMap {
		b.add(f.val.pos, ctx, "usage must be a mapping, not %s", f.val.kind)
		return u
	}
	uctx := ctx + ", usage"
	for _, uf := range f.val.fields {
		switch uf.key {
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

func (b *builder) errorEntry(ctx string, f field, n int) *model.Error {
	if f.val == nil {
		return nil
	}
	if f.val.kind != kindMap {
		b.add(f.val.pos, ctx, "error must be a mapping, not %s", f.val.kind)
		return nil
	}
	ectx := ctx + ", error"
	e := &model.Error{}
	for _, ef := range f.val.fields {
		switch ef.key {
		case "kind":
			s, ok := b.str(ectx, ef)
			if !ok {
				continue
			}
			if !slices.Contains(errorKinds, s) {
				b.add(ef.val.pos, ectx, "unknown kind %q%s", s, suggest(s, errorKinds, "valid kinds"))
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
	if !slices.ContainsFunc(f.val.fields, func(ef field) bool { return ef.key == "kind" }) {
		b.add(f.val.pos, ectx, "kind is missing")
	}
	if e.Message == "" {
		e.Message = fmt.Sprintf("scripted error (replay response %d)", n)
	}
	return e
}

// str returns a string field's value.
func (b *builder) str(ctx string, f field) (string, bool) {
	if f.val == nil {
		return "", false
	}
	if f.val.kind != kindString {
		hint := ""
		if f.val.kind != kindMap && f.val.kind != kindSeq && f.val.kind != kindNull {
			hint = fmt.Sprintf(" (quote it: %q)", f.val.text)
		}
		b.add(f.val.pos, ctx, "%s must be a string, not %s%s", f.key, f.val.kind, hint)
		return "", false
	}
	return f.val.text, true
}

// count returns a non-negative integer field's value, at most limit.
func (b *builder) count(ctx string, f field, limit int64) (int64, bool) {
	if f.val == nil {
		return 0, false
	}
	switch {
	case f.val.kind == kindString && outOfRange(f.val.text):
		// The YAML parser reads integers beyond 64 bits as strings.
		b.add(f.val.pos, ctx, "%s is too large: %s (at most %d)", f.key, f.val.text, limit)
	case f.val.kind != kindInt:
		b.add(f.val.pos, ctx, "%s must be an integer, not %s", f.key, f.val.kind)
	case f.val.i < 0:
		b.add(f.val.pos, ctx, "%s must not be negative, got %d", f.key, f.val.i)
	case !f.val.fits || f.val.i > limit:
		b.add(f.val.pos, ctx, "%s is too large: %s (at most %d)", f.key, f.val.num, limit)
	default:
		return f.val.i, true
	}
	return 0, false
}

// outOfRange reports whether s is a decimal integer beyond 64 bits.
func outOfRange(s string) bool {
	_, err := strconv.ParseInt(s, 10, 64)
	return errors.Is(err, strconv.ErrRange)
}

// millis returns a field holding milliseconds that fit a time.Duration.
func (b *builder) millis(ctx string, f field) (int64, bool) {
	return b.count(ctx, f, maxMillis)
}

func (b *builder) unknownKey(ctx string, f field, known []string) {
	b.add(f.pos, ctx, "unknown key %q%s", f.key, suggest(f.key, known, "valid keys"))
}

// suggest returns " (did you mean "x"?)" for the closest of valid within
// two edits of s, or else " (<what>: a, b, c)".
func suggest(s string, valid []string, what string) string {
	best, bestDist := "", 3
	for _, v := range valid {
		if d := editDistance(strings.ToLower(s), v); d < bestDist {
			best, bestDist = v, d
		}
	}
	if best != "" {
		return fmt.Sprintf(" (did you mean %q?)", best)
	}
	return fmt.Sprintf(" (%s: %s)", what, strings.Join(valid, ", "))
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
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

// Problem is one problem in a replay script, at a 1-based line and column.
type Problem struct {
	File    string
	Line    int
	Column  int
	Message string
}

// String formats the problem as "file:line:col: message", the form editors
// and terminals link to the spot.
func (p Problem) String() string {
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

func (ps *problems) add(p pos, msg string) {
	ps.list = append(ps.list, Problem{File: ps.file, Line: p.line, Column: p.col, Message: msg})
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
