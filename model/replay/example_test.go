package replay_test

import (
	"context"
	"fmt"

	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/model/replay"
)

func Example() {
	s, err := replay.Parse("support.replay.yaml", []byte(`
model: support-bot-v1
responses:
  - text: "Let me look that up."
    tool_calls:
      - name: lookup_order
        input: {order_id: "1042"}
  - error: {kind: rate_limit, retry_after_ms: 200, message: "slow down"}
  - tool_calls: [{name: complete_task, input: {result: "done"}}]
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	p := replay.New(s)
	fmt.Println(p.Info().Kind, p.Info().Model)

	req := &model.Request{SessionID: "ses_1"}
	for range 4 {
		resp, err := p.Generate(context.Background(), req)
		if err != nil {
			fmt.Println("error:", err)
			continue
		}
		fmt.Println(resp.FinishReason, resp.Text, resp.ToolCalls)
	}
	// Output:
	// replay support-bot-v1
	// tool_calls Let me look that up. [{ lookup_order {"order_id":"1042"}}]
	// error: model rate_limit: slow down
	// tool_calls  [{ complete_task {"result":"done"}}]
	// error: model script_exhausted: replay script "support.replay.yaml" has no response 4 for this session (it holds 3)
}

func ExampleParse_errors() {
	_, err := replay.Parse("support.replay.yaml", []byte(`responses:
  - text: "Let me look that up."
    tool_call:
      - name: lookup_order
  - error: {kind: rate_limited}
    delay_ms: -1
`))
	fmt.Println(err)
	// Output:
	// support.replay.yaml:3:5: response 1: unknown key "tool_call" (did you mean "tool_calls"?)
	// support.replay.yaml:5:19: response 2, error: unknown kind "rate_limited" (did you mean "rate_limit"?)
	// support.replay.yaml:6:15: response 2: delay_ms must not be negative, got -1
}
