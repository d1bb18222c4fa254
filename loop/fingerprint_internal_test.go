package loop

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/runtype"
)

// TestFingerprintFolds: folding names the messages as ordered Seq ranges
// (a boundary message, then what follows what it covers), hashes as a
// fresh digest of the same messages does, folds only new messages, and
// starts over after restart.
func TestFingerprintFolds(t *testing.T) {
	t.Parallel()
	msg := func(seq int64) runtype.Message {
		return runtype.Message{Seq: seq, Role: runtype.RoleUser, Content: "m"}
	}
	fresh := func(ms []runtype.Message) string {
		var d model.ContextDigest
		for i := range ms {
			d.Add(&ms[i])
		}
		return d.Sum("i", "t")
	}
	var f fingerprint
	defer f.release()
	msgs := []runtype.Message{msg(41), msg(31), msg(32), msg(33)}
	f.fold(msgs)
	msgs = append(msgs, msg(42))
	f.fold(msgs)
	if diff := cmp.Diff([][2]int64{{41, 41}, {31, 33}, {42, 42}}, f.ranges); diff != "" {
		t.Errorf("ranges (-want +got):\n%s", diff)
	}
	if got, want := f.digest.Sum("i", "t"), fresh(msgs); got != want || f.digest.Len() != 5 {
		t.Errorf("incremental hash %s over %d messages, want %s over 5", got, f.digest.Len(), want)
	}
	// A compaction replaces the messages: after restart, only they count.
	msgs = []runtype.Message{msg(43), msg(42)}
	f.restart()
	f.fold(msgs)
	if diff := cmp.Diff([][2]int64{{43, 43}, {42, 42}}, f.ranges); diff != "" {
		t.Errorf("ranges after restart (-want +got):\n%s", diff)
	}
	if got, want := f.digest.Sum("i", "t"), fresh(msgs); got != want {
		t.Errorf("hash after restart %s, want %s", got, want)
	}
}
