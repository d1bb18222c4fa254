package store_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
)

// chain returns a sound chain of n receipts of one session.
func chain(n int) []*runtype.Receipt {
	var rs []*runtype.Receipt
	prev := ""
	for i := range n {
		body := fmt.Appendf(nil, `{"type":"tool.result","sequence":%d}`, i+1)
		r := &runtype.Receipt{
			TenantID: "ten_1", SessionID: "ses_1", Seq: int64(i + 1), EventID: fmt.Sprintf("evt_%d", i+1),
			EventType: "tool.result", Body: body, PrevHash: prev, Hash: store.ReceiptHash(prev, body),
		}
		rs = append(rs, r)
		prev = r.Hash
	}
	return rs
}

// TestReceiptHash pins the hash: verifiers outside agentrt recompute it
// (these values are from sha256sum).
func TestReceiptHash(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ prev, body, want string }{
		{"", "{}", "a062dd4952b935e430d409c4a5e5cd760e8781e3200d5c7e12a232dddba8a528"},
		{"abc", "{}", "b4157e40dd21db67528800eb46fe6641eaa5e321734b6890e43e9ce6ed37d91b"},
	} {
		if got := store.ReceiptHash(c.prev, []byte(c.body)); got != c.want {
			t.Errorf("ReceiptHash(%q, %q) = %s, want %s", c.prev, c.body, got, c.want)
		}
	}
}

func TestVerifyReceipts(t *testing.T) {
	t.Parallel()
	for _, n := range []int{0, 1, 5} {
		if err := store.VerifyReceipts(chain(n)); err != nil {
			t.Errorf("VerifyReceipts(sound chain of %d) = %v", n, err)
		}
	}

	for _, c := range []struct {
		name  string
		spoil func([]*runtype.Receipt) []*runtype.Receipt
		want  *store.ReceiptError
	}{
		{"body changed", func(rs []*runtype.Receipt) []*runtype.Receipt {
			rs[2].Body = []byte(`{"type":"tool.result","sequence":3,"x":1}`)
			return rs
		}, &store.ReceiptError{Seq: 3, EventID: "evt_3", Reason: "hash does not match its body"}},
		{"body and hash changed", func(rs []*runtype.Receipt) []*runtype.Receipt {
			rs[2].Body = []byte(`{}`)
			rs[2].Hash = store.ReceiptHash(rs[2].PrevHash, rs[2].Body)
			return rs
		}, &store.ReceiptError{Seq: 4, EventID: "evt_4", Reason: "prev hash does not match receipt 3"}},
		{"receipt removed", func(rs []*runtype.Receipt) []*runtype.Receipt {
			return append(rs[:4], rs[5:]...)
		}, &store.ReceiptError{Seq: 6, EventID: "evt_6", Reason: "sequence gap: 6 after 4"}},
		{"receipt removed and renumbered", func(rs []*runtype.Receipt) []*runtype.Receipt {
			rs = append(rs[:4], rs[5:]...)
			rs[4].Seq = 5
			return rs
		}, &store.ReceiptError{Seq: 5, EventID: "evt_6", Reason: "prev hash does not match receipt 4"}},
		{"first removed", func(rs []*runtype.Receipt) []*runtype.Receipt {
			return rs[1:]
		}, &store.ReceiptError{Seq: 2, EventID: "evt_2", Reason: "sequence gap: 2 after 0"}},
		{"first relinked", func(rs []*runtype.Receipt) []*runtype.Receipt {
			rs[0].PrevHash = "00"
			rs[0].Hash = store.ReceiptHash(rs[0].PrevHash, rs[0].Body)
			return rs
		}, &store.ReceiptError{Seq: 1, EventID: "evt_1", Reason: "prev hash of the first receipt is not empty"}},
		{"duplicated", func(rs []*runtype.Receipt) []*runtype.Receipt {
			return append(rs[:3], rs[2:]...)
		}, &store.ReceiptError{Seq: 3, EventID: "evt_3", Reason: "sequence out of order: 3 after 3"}},
		{"another session's", func(rs []*runtype.Receipt) []*runtype.Receipt {
			rs[1].SessionID = "ses_2"
			return rs
		}, &store.ReceiptError{Seq: 2, EventID: "evt_2", Reason: "belongs to session ses_2 of tenant ten_1, not ses_1 of ten_1"}},
		{"two faults: the first is named", func(rs []*runtype.Receipt) []*runtype.Receipt {
			rs[1].Hash, rs[3].Body = "bad", nil
			return rs
		}, &store.ReceiptError{Seq: 2, EventID: "evt_2", Reason: "hash does not match its body"}},
	} {
		err := store.VerifyReceipts(c.spoil(chain(7)))
		var re *store.ReceiptError
		if !errors.As(err, &re) {
			t.Errorf("%s: VerifyReceipts = %v, want a *store.ReceiptError", c.name, err)
			continue
		}
		if d := cmp.Diff(c.want, re); d != "" {
			t.Errorf("%s: VerifyReceipts error (-want +got):\n%s", c.name, d)
		}
	}
}
