package store_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/memstore"
)

const (
	secret = "SeCrEt"
	marker = "[REDACTED:test]"
)

// replaceSecret is a Redactor that replaces secret.
type replaceSecret struct{}

func (replaceSecret) Text(s string) string { return strings.ReplaceAll(s, secret, marker) }
func (replaceSecret) JSON(s string) string { return strings.ReplaceAll(s, secret, marker) }

var stringType = reflect.TypeFor[string]()

// fillText sets every exported plain string of v, at any depth, to a text
// holding secret, every []byte to JSON holding it, and gives every
// pointer and slice one element.
func fillText(v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		if v.Type() == stringType {
			v.SetString("a " + secret + " b")
		}
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		fillText(v.Elem())
	case reflect.Struct:
		if v.Type().PkgPath() == "time" {
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fillText(v.Field(i))
			}
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			v.SetBytes([]byte(`{"k":"` + secret + `"}`))
			return
		}
		s := reflect.MakeSlice(v.Type(), 1, 1)
		fillText(s.Index(0))
		v.Set(s)
	}
}

// textLeft returns the fields of v (named Type.Field) whose text still
// holds secret.
func textLeft(v reflect.Value, name string, out map[string]bool) {
	switch v.Kind() {
	case reflect.String:
		if v.Type() == stringType && strings.Contains(v.String(), secret) {
			out[name] = true
		}
	case reflect.Pointer:
		if !v.IsNil() {
			textLeft(v.Elem(), name, out)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if f := v.Type().Field(i); f.IsExported() && !f.Anonymous {
				textLeft(v.Field(i), v.Type().Name()+"."+f.Name, out)
			} else if f.Anonymous {
				textLeft(v.Field(i), name, out)
			}
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			if strings.Contains(string(v.Bytes()), secret) {
				out[name] = true
			}
			return
		}
		for i := range v.Len() {
			textLeft(v.Index(i), name, out)
		}
	}
}

// notText are the record fields that name or identify something rather
// than carry text: Batch.Redact leaves them alone. Fields of the Identity
// rule (ids, refs, hashes) are left too.
var notText = []string{
	"Owner.TenantID", "Owner.PrincipalID", "Session.Agent", "Session.PolicyMode", "Turn.Agent",
	"Task.LeaseOwner", "Run.Worker", "Routing.Mode", "Routing.Candidate", "Routing.Provider",
	"Routing.Model", "MessageToolCall.Name", "Reasoning.Provider", "Reasoning.Signature", "Reasoning.Redacted",
	"Reasoning.Encrypted", "ToolCall.Name", "ToolCall.Decision", "Blob.MediaType", "Action.Type", "Action.ToolName",
	"Action.Decisions", "Action.ReasonCode", "Action.Escalation", "ActionResolution.Decision", "ActionResolution.By",
	"PolicyGrant.Agent", "PolicyGrant.ToolName", "SessionMode.Mode", "LeaseChange.Owner", "APIToken.Prefix",
	"CapabilitySession.Server", "CapabilitySession.Transport", "CapabilitySession.ProtocolVersion",
	"CapabilitySession.ResumeCursor", "Boundary.Kind", "Boundary.Strategy", "Boundary.Trigger", "Lineage.Kind",
	"Subagent.Agent", "Subagent.Name", "Subagent.Workspace", "Job.Agent",
	"TurnOverrides.Model", "TurnOverrides.Tools", "TurnOverrides.PreRunTool",
	"Schedule.Name", "Schedule.Agent", "Schedule.Instance", "Schedule.Kind", "Schedule.Cron", "Schedule.TimeZone",
	"Schedule.Model", "Schedule.Tools", "Schedule.Overlap", "Schedule.PreRunTool", "Schedule.Webhook",
	"Schedule.PausedReason", "Fire.Reason",
	"Instance.Name", "Instance.Agent",
}

// TestBatchRedactCoversEveryTextField: Batch.Redact replaces the secrets
// in every text field of every record a batch writes. A field added to a
// record must be redacted, or listed in notText.
func TestBatchRedactCoversEveryTextField(t *testing.T) {
	t.Parallel()
	b := fillBatch(t)
	fillText(reflect.ValueOf(b).Elem())
	b.Events = nil // their payloads: event.TestRedactEveryPayload
	b.Redact(replaceSecret{})
	left := map[string]bool{}
	textLeft(reflect.ValueOf(b).Elem(), "Batch", left)
	for name := range left {
		field := name[strings.LastIndex(name, ".")+1:]
		if !event.Identity(field) && !slices.Contains(notText, name) {
			t.Errorf("%s still holds the secret after Redact", name)
		}
	}
	for _, name := range notText {
		// A lease's owner is not text, but fillBatch makes no lease; a
		// signature is dropped with the text it signed.
		if !left[name] && name != "LeaseChange.Owner" && name != "Reasoning.Signature" {
			t.Errorf("%s is listed as not text, but Redact changed it (or it is gone)", name)
		}
	}
}

// TestBatchRedactSharesNothing: Redact gives records it changes new
// slices and pointers: the caller's conversation and failures keep their
// text.
func TestBatchRedactSharesNothing(t *testing.T) {
	t.Parallel()
	calls := []runtype.MessageToolCall{{ID: "c1", Name: "push", Arguments: `{"token":"` + secret + `"}`}}
	failure := &runtype.Failure{Kind: runtype.FailureToolError, Message: "bad " + secret}
	b := &store.Batch{
		Messages:  []*runtype.Message{{Role: runtype.RoleAssistant, ToolCalls: calls}},
		ToolCalls: []*runtype.ToolCall{{ID: "c1", Failure: failure}},
	}
	b.Redact(replaceSecret{})
	if calls[0].Arguments != `{"token":"`+secret+`"}` || failure.Message != "bad "+secret {
		t.Errorf("Redact changed what the caller holds: %+v, %+v", calls, failure)
	}
	if got := b.Messages[0].ToolCalls[0].Arguments; got != `{"token":"`+marker+`"}` {
		t.Errorf("the message's arguments are %q", got)
	}
	if got := b.ToolCalls[0].Failure.Message; got != "bad "+marker {
		t.Errorf("the tool call's failure is %q", got)
	}
}

// TestBatchRedactBlobRef: a blob that redaction changes gets the ref of
// its new data, and the batch's references follow it.
func TestBatchRedactBlobRef(t *testing.T) {
	t.Parallel()
	data := []byte("token " + secret)
	sum := sha256.Sum256(data)
	old := "sha256:" + hex.EncodeToString(sum[:])
	e := &event.Event{Type: event.ToolResult, OutputRef: old, Refs: map[string]string{"output": old},
		Payload: &event.ToolResultPayload{Name: "t", Preview: "see " + old}}
	b := &store.Batch{
		Blobs:     []*runtype.Blob{{Ref: old, MediaType: "text/plain", Data: data}},
		ToolCalls: []*runtype.ToolCall{{ID: "c1", OutputRef: old}},
		Messages:  []*runtype.Message{{Role: runtype.RoleTool, Content: "stored as " + old}},
		Events:    []*event.Event{e},
	}
	b.Redact(replaceSecret{})
	red := []byte("token " + marker)
	sum = sha256.Sum256(red)
	ref := "sha256:" + hex.EncodeToString(sum[:])
	if diff := cmp.Diff(red, b.Blobs[0].Data); diff != "" || b.Blobs[0].Ref != ref {
		t.Errorf("blob %s %q, want %s (-want +got data):\n%s", b.Blobs[0].Ref, b.Blobs[0].Data, ref, diff)
	}
	got := []string{b.ToolCalls[0].OutputRef, b.Messages[0].Content, e.OutputRef, e.Refs["output"], e.Payload.(*event.ToolResultPayload).Preview}
	want := []string{ref, "stored as " + ref, ref, ref, "see " + ref}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("references (-want +got):\n%s", diff)
	}
}

// TestWriterRedacts: a Writer with a Redactor stores, and shows
// subscribers, only redacted text.
func TestWriterRedacts(t *testing.T) {
	t.Parallel()
	st := memstore.New()
	var notified []*event.Event
	w := store.NewWriter(st, store.WriterConfig{Redactor: replaceSecret{}, Notify: func(evs []*event.Event) { notified = append(notified, evs...) }})
	t.Cleanup(func() { w.Stop(context.Background()) })
	ctx := context.Background()
	owner := runtype.Owner{TenantID: "t1"}
	b := &store.Batch{
		Sessions: []*runtype.Session{{ID: "s1", Owner: owner}},
		Threads:  []*runtype.Thread{{ID: "thr1", SessionID: "s1", Owner: owner}},
		Messages: []*runtype.Message{{ThreadID: "thr1", Seq: 1, SessionID: "s1", Owner: owner, Role: runtype.RoleUser, Content: "my " + secret}},
		Events: []*event.Event{{Type: event.ModelDelta, EventID: "evt_1", SessionID: "s1", TenantID: "t1",
			Payload: &event.DeltaPayload{Text: "the " + secret}}},
	}
	if err := w.Write(ctx, b); err != nil {
		t.Fatal(err)
	}
	msgs, err := st.MessageList(ctx, &store.MessageListParams{TenantID: "t1", ThreadID: "thr1"})
	if err != nil || len(msgs) != 1 || msgs[0].Content != "my "+marker {
		t.Errorf("stored messages %+v, %v", msgs, err)
	}
	evs, err := st.EventListAfter(ctx, &store.EventListAfterParams{Filter: event.Filter{TenantID: "t1"}, Limit: 10})
	if err != nil || len(evs) != 1 {
		t.Fatalf("stored events %v, %v", evs, err)
	}
	for _, e := range append(evs, notified...) {
		raw, err := e.JSON()
		if err != nil || strings.Contains(string(raw), secret) || e.Payload.(*event.DeltaPayload).Text != "the "+marker {
			t.Errorf("event %s, %v", raw, err)
		}
	}
}
