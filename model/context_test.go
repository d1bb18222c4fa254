package model_test

import (
	"testing"

	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/runtype"
)

func TestContextDigest(t *testing.T) {
	t.Parallel()
	msgs := []runtype.Message{
		{Role: runtype.RoleUser, Content: "hello"},
		{Role: runtype.RoleAssistant, ToolCalls: []runtype.MessageToolCall{{ID: "c1", Name: "echo", Arguments: `{"x":1}`}}},
		{Role: runtype.RoleTool, ToolCallID: "c1", Content: "1"},
	}
	sum := func(ms []runtype.Message, instr, tools string) string {
		var d model.ContextDigest
		for i := range ms {
			d.Add(&ms[i])
		}
		return d.Sum(instr, tools)
	}
	base := sum(msgs, "sha256:i", "sha256:t")

	// Summing midway and adding on gives the hash of the whole.
	var d model.ContextDigest
	d.Add(&msgs[0])
	mid := d.Sum("sha256:i", "sha256:t")
	d.Add(&msgs[1])
	d.Add(&msgs[2])
	if got := d.Sum("sha256:i", "sha256:t"); got != base {
		t.Errorf("incremental sum %s, want %s", got, base)
	}
	if mid == base || mid != sum(msgs[:1], "sha256:i", "sha256:t") {
		t.Errorf("the sum after one message is %s; a fresh digest of it differs or equals the whole", mid)
	}

	changed := func(name string, got string) {
		t.Helper()
		if got == base {
			t.Errorf("%s: the hash did not change", name)
		}
	}
	changed("instructions", sum(msgs, "sha256:j", "sha256:t"))
	changed("tools", sum(msgs, "sha256:i", "sha256:u"))
	changed("order", sum([]runtype.Message{msgs[1], msgs[0], msgs[2]}, "sha256:i", "sha256:t"))
	edited := append([]runtype.Message(nil), msgs...)
	edited[1].ToolCalls = []runtype.MessageToolCall{{ID: "c1", Name: "echo", Arguments: `{"x":2}`}}
	changed("arguments", sum(edited, "sha256:i", "sha256:t"))
	edited = append([]runtype.Message(nil), msgs...)
	edited[2].IsError = true
	changed("error flag", sum(edited, "sha256:i", "sha256:t"))
	// Field boundaries are length-prefixed: moving text between fields changes it.
	a := []runtype.Message{{Role: runtype.RoleUser, Content: "ab", ToolCallID: "c"}}
	b := []runtype.Message{{Role: runtype.RoleUser, Content: "a", ToolCallID: "bc"}}
	if sum(a, "", "") == sum(b, "", "") {
		t.Error("moving text from content to tool call id kept the hash")
	}
}

func TestContextDigestAllocs(t *testing.T) {
	m := runtype.Message{Role: runtype.RoleTool, Content: "some output", ToolCallID: "c1"}
	var d model.ContextDigest
	d.Add(&m)
	if n := testing.AllocsPerRun(100, func() { d.Add(&m) }); n != 0 {
		t.Errorf("Add allocates %v times per message, want 0", n)
	}
}

func TestContextDigestReset(t *testing.T) {
	t.Parallel()
	a := runtype.Message{Role: runtype.RoleUser, Content: "a"}
	b := runtype.Message{Role: runtype.RoleAssistant, Content: "b"}
	var fresh model.ContextDigest
	fresh.Add(&b)
	var d model.ContextDigest
	d.Add(&a)
	d.Reset()
	d.Add(&b)
	if got, want := d.Sum("i", "t"), fresh.Sum("i", "t"); got != want || d.Len() != 1 {
		t.Errorf("after Reset and one message: %s (len %d), want %s (len 1)", got, d.Len(), want)
	}
}

func TestContextDigestSumAllocs(t *testing.T) {
	m := runtype.Message{Role: runtype.RoleTool, Content: "some output", ToolCallID: "c1"}
	var d model.ContextDigest
	d.Add(&m)
	ref := "sha256:0123456789012345678901234567890123456789012345678901234567890123"
	if n := testing.AllocsPerRun(100, func() { _ = d.Sum(ref, ref) }); n > 1 {
		t.Errorf("Sum allocates %v times, want 1 (its result)", n)
	}
}
