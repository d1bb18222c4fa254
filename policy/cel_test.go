package policy

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestWhenCostPerEvaluation: each evaluation starts from no cost, also
// when a call evaluates expressions many times.
func TestWhenCostPerEvaluation(t *testing.T) {
	prg, err := compileWhen(`input.items.all(i, i < 1000)`)
	if err != nil {
		t.Fatal(err)
	}
	if prg.tracker == nil {
		t.Fatal("no cost tracker taken from the program")
	}
	items := make([]int, 200)
	in, _ := json.Marshal(map[string]any{"items": items})
	c := &call{req: &Request{ToolName: "t", Input: in}}
	c.act.c = c
	for i := range 1000 { // 1000 × the cost of one would pass the limit
		if ok, err := prg.eval(c); !ok || err != nil {
			t.Fatalf("evaluation %d = %v, %v; want true", i, ok, err)
		}
	}
	big := make([]int, 100_000)
	in, _ = json.Marshal(map[string]any{"items": big})
	c = &call{req: &Request{ToolName: "t", Input: in}}
	c.act.c = c
	if _, err := prg.eval(c); err == nil || !strings.Contains(err.Error(), "cost limit") {
		t.Errorf("evaluating over %d items: err = %v, want the cost limit", len(big), err)
	}
}
