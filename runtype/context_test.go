package runtype_test

import (
	"testing"

	"github.com/agentrt/agentrt/runtype"
	"github.com/google/go-cmp/cmp"
)

func TestContextWindow(t *testing.T) {
	t.Parallel()
	msg := func(seq int64) runtype.Message { return runtype.Message{Seq: seq} }
	boundary := func(seq, through int64) runtype.Message {
		return runtype.Message{Seq: seq, Boundary: &runtype.Boundary{ID: "ctx", Kind: runtype.BoundaryCompaction, ThroughSeq: through}}
	}
	seqs := func(ms []runtype.Message) []int64 {
		var out []int64
		for _, m := range ms {
			out = append(out, m.Seq)
		}
		return out
	}
	for _, tt := range []struct {
		name string
		msgs []runtype.Message
		want []int64
	}{
		{"NoBoundary", []runtype.Message{msg(1), msg(2), msg(3)}, []int64{1, 2, 3}},
		// The boundary comes first, then what follows the covered range,
		// the boundary's own place left out.
		{"OneBoundary", []runtype.Message{msg(1), msg(2), msg(3), msg(4), boundary(5, 2), msg(6)}, []int64{5, 3, 4, 6}},
		// A newer boundary replaces an older one, which its range covers or not.
		{"Two", []runtype.Message{msg(1), msg(2), boundary(3, 1), msg(4), msg(5), boundary(6, 4), msg(7)}, []int64{6, 5, 7}},
		// A handoff is an ordinary first message.
		{"Handoff", []runtype.Message{{Seq: 1, Boundary: &runtype.Boundary{Kind: runtype.BoundaryHandoff}}, msg(2)}, []int64{1, 2}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, b := runtype.ContextWindow(tt.msgs)
			if diff := cmp.Diff(tt.want, seqs(got)); diff != "" {
				t.Errorf("window seqs (-want +got):\n%s", diff)
			}
			if (b != nil) != (tt.want[0] != tt.msgs[0].Seq || tt.msgs[0].IsCompaction()) {
				t.Errorf("boundary %+v for window %v", b, seqs(got))
			}
		})
	}
}
