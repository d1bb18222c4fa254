package store

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"

	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/runtype"
)

// Redactor replaces secrets in what a Writer writes; see event.Redactor.
type Redactor = event.Redactor

// Redact replaces the secrets in the text of everything b writes, as r
// finds them: the payloads of its events (event.Event.Redact) and the
// text fields of its records — inputs, results, messages, tool call
// arguments and previews, failure messages, prompts and answers of
// actions, jobs' instructions and items, schedules' inputs and
// parameters, fires' delivery errors, instances' state, and blobs. Ids, refs, hashes, names and statuses are left
// alone. The Writer calls it before anything is encoded.
//
// Records are changed in place, but nothing they share is: a slice,
// struct or pointer that holds a replaced string is copied first, so the
// caller's conversation, tool calls and failures keep their text. A blob
// whose data changes gets the ref of its new data, and the batch's
// references to it follow (tool calls' output refs, events' output refs
// and refs, and text that names it).
func (b *Batch) Redact(r Redactor) {
	refs := b.redactBlobs(r)
	for _, x := range b.Sessions {
		x.Title = r.Text(x.Title)
	}
	for _, x := range b.Turns {
		x.Input, x.Result = r.Text(x.Input), r.Text(x.Result)
		x.Failure = redactFailure(x.Failure, r)
		if o := x.Overrides; o != nil {
			if red := r.JSON(o.PreRunInput); red != o.PreRunInput {
				c := *o
				c.PreRunInput = red
				x.Overrides = &c
			}
		}
	}
	for _, x := range b.Tasks {
		x.Objective, x.Result = r.Text(x.Objective), r.Text(x.Result)
		x.Failure = redactFailure(x.Failure, r)
	}
	for _, x := range b.Runs {
		x.Failure = redactFailure(x.Failure, r)
		if x.Routing != nil {
			if red := r.Text(x.Routing.Reason); red != x.Routing.Reason {
				ro := *x.Routing
				ro.Reason = red
				x.Routing = &ro
			}
		}
	}
	for _, m := range b.Messages {
		redactMessage(m, r)
	}
	for _, tc := range b.ToolCalls {
		tc.Arguments, tc.ResultPreview = r.JSON(tc.Arguments), r.Text(tc.ResultPreview)
		tc.Failure = redactFailure(tc.Failure, r)
		if p := tc.Progress; p != nil {
			if red := r.Text(p.Message); red != p.Message {
				c := *p
				c.Message = red
				tc.Progress = &c
			}
		}
	}
	for _, a := range b.Actions {
		redactAction(a, r)
	}
	for _, a := range b.ResolvedActions {
		redactAction(a, r)
	}
	for _, t := range b.Tokens {
		t.Name = r.Text(t.Name)
	}
	for _, c := range b.CapabilitySessions {
		c.Error = r.Text(c.Error)
	}
	for _, j := range b.Jobs {
		j.Instruction = r.Text(j.Instruction)
	}
	for _, it := range b.JobItems {
		it.Input, it.Result = r.JSON(it.Input), r.Text(it.Result)
		it.LastError = redactFailure(it.LastError, r)
	}
	for _, s := range b.Schedules {
		s.Input, s.Params, s.InputSchema = r.Text(s.Input), r.JSON(s.Params), r.JSON(s.InputSchema)
		s.PreRunInput = r.JSON(s.PreRunInput)
	}
	for _, f := range b.Fires {
		f.DeliveryError = r.Text(f.DeliveryError)
		f.Failure = redactFailure(f.Failure, r)
	}
	for _, in := range b.Instances {
		in.State = r.JSON(in.State)
	}
	for _, e := range b.Events {
		e.Redact(r)
	}
	if refs != nil {
		b.replaceRefs(refs)
	}
}

func redactFailure(f *runtype.Failure, r Redactor) *runtype.Failure {
	if f == nil {
		return nil
	}
	red := r.Text(f.Message)
	if red == f.Message {
		return f
	}
	c := *f
	c.Message = red
	return &c
}

func redactMessage(m *runtype.Message, r Redactor) {
	m.Content = r.Text(m.Content)
	cloned := false
	for i, tc := range m.ToolCalls {
		if red := r.JSON(tc.Arguments); red != tc.Arguments {
			if !cloned {
				m.ToolCalls, cloned = slices.Clone(m.ToolCalls), true
			}
			m.ToolCalls[i].Arguments = red
		}
	}
	cloned = false
	for i, rs := range m.Reasoning {
		red := r.Text(rs.Text)
		if red == rs.Text {
			continue
		}
		if !cloned {
			m.Reasoning, cloned = slices.Clone(m.Reasoning), true
		}
		// A signature authenticates the text as the provider wrote it:
		// the redacted text has none (an adapter leaves unsigned thinking
		// out of its requests).
		m.Reasoning[i].Text, m.Reasoning[i].Signature = red, ""
	}
}

func redactAction(a *runtype.Action, r Redactor) {
	a.InputPreview, a.Prompt, a.Input = r.Text(a.InputPreview), r.Text(a.Prompt), r.JSON(a.Input)
	if len(a.RequestedSchema) > 0 {
		if red := r.JSON(string(a.RequestedSchema)); red != string(a.RequestedSchema) {
			a.RequestedSchema = []byte(red)
		}
	}
	res := a.Resolution
	if res == nil {
		return
	}
	msg, in := r.Text(res.Message), string(res.UpdatedInput)
	red := in
	if len(in) > 0 {
		red = r.JSON(in)
	}
	if msg != res.Message || red != in {
		c := *res
		c.Message = msg
		if red != in {
			c.UpdatedInput = []byte(red)
		}
		a.Resolution = &c
	}
}

// redactBlobs redacts the blobs' data (as JSON for JSON media types) and
// returns the new refs of those that changed, by old ref.
func (b *Batch) redactBlobs(r Redactor) map[string]string {
	var refs map[string]string
	for i, bl := range b.Blobs {
		data := string(bl.Data)
		var red string
		if strings.Contains(bl.MediaType, "json") {
			red = r.JSON(data)
		} else {
			red = r.Text(data)
		}
		if red == data {
			continue
		}
		sum := sha256.Sum256([]byte(red))
		c := *bl
		c.Data, c.Ref = []byte(red), "sha256:"+hex.EncodeToString(sum[:])
		b.Blobs[i] = &c
		if refs == nil {
			refs = make(map[string]string)
		}
		refs[bl.Ref] = c.Ref
	}
	return refs
}

// replaceRefs makes the batch's references to blobs whose refs changed
// name the new refs.
func (b *Batch) replaceRefs(refs map[string]string) {
	pairs := make([]string, 0, 2*len(refs))
	for old, ref := range refs {
		pairs = append(pairs, old, ref)
	}
	rep := strings.NewReplacer(pairs...)
	for _, tc := range b.ToolCalls {
		tc.OutputRef, tc.ResultPreview = rep.Replace(tc.OutputRef), rep.Replace(tc.ResultPreview)
	}
	for _, m := range b.Messages {
		m.Content = rep.Replace(m.Content)
	}
	for _, e := range b.Events {
		e.ReplaceRefs(rep)
	}
}
