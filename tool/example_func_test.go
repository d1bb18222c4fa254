package tool_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agentrt/agentrt/tool"
)

func ExampleFunc() {
	type lookupInput struct {
		OrderID string `json:"order_id" jsonschema:"the order to look up"`
	}
	type order struct {
		ID     string `json:"id"`
		Status string `json:"status"`
	}
	lookup := tool.Func("lookup_order", "Look up an order by id.", tool.Annotations{ReadOnly: true},
		func(ctx context.Context, call *tool.Call, in lookupInput) (order, error) {
			return order{ID: in.OrderID, Status: "shipped"}, nil
		})

	r := tool.NewRegistry()
	if err := r.Register(lookup); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(string(lookup.Spec().InputSchema))

	// The runtime validates the model's arguments before calling the tool.
	fmt.Println(r.Validate("lookup_order", json.RawMessage(`{}`)))

	input := json.RawMessage(`{"order_id":"ORD-7"}`)
	if err := r.Validate("lookup_order", input); err != nil {
		fmt.Println(err)
		return
	}
	res, err := lookup.Call(context.Background(), &tool.Call{ID: "call_1", Input: input})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Content)
	// Output:
	// {"type":"object","properties":{"order_id":{"type":"string","description":"the order to look up"}},"required":["order_id"],"additionalProperties":false}
	// invalid input for lookup_order: missing property 'order_id'
	// {"id":"ORD-7","status":"shipped"}
}
