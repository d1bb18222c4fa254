package agentrt_test

import (
	"context"
	"fmt"
	"log"
	"strings"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/model/replay"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/tool"
)

// weatherInput is the input of the example's Go tool; its JSON Schema is
// inferred from the struct.
type weatherInput struct {
	City string `json:"city" jsonschema:"the city to report on"`
}

// Example embeds the runtime with a custom Go tool and a scripted model,
// runs one turn and prints how it went. Without a DataDir the runtime keeps
// everything in memory.
func Example() {
	weather := tool.Func("weather", "Current weather for a city.", tool.Annotations{ReadOnly: true},
		func(ctx context.Context, call *tool.Call, in weatherInput) (map[string]any, error) {
			return map[string]any{"city": in.City, "sky": "clear", "celsius": 21}, nil
		})
	script, err := replay.Parse("weather.replay.yaml", []byte(`
responses:
  - tool_calls: [{name: weather, input: {city: Lyon}}]
  - tool_calls: [{name: complete_task, input: {result: "Clear skies in Lyon, 21°C."}}]
`))
	if err != nil {
		log.Fatal(err)
	}
	rt, err := agentrt.New(agentrt.Config{
		Tools: []tool.Tool{weather},
		Agents: map[string]*agentrt.Agent{
			"forecaster": {
				Instructions:      "Answer weather questions with the weather tool.",
				Provider:          replay.New(script),
				Tools:             []string{"weather"},
				RequireCompletion: true,
			},
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	if err := rt.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer rt.Stop(ctx)

	res, err := rt.SubmitTurn(ctx, &apitype.SubmitTurnParams{Agent: "forecaster", Input: "Weather in Lyon?"})
	if err != nil {
		log.Fatal(err)
	}
	turn, err := rt.WaitTurn(ctx, runtype.Owner{}, res.TurnID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(turn.Status, "-", turn.Result)

	// Every step is a durable event in the Agent Runtime envelope.
	sub, err := rt.Subscribe(ctx, &apitype.SubscribeParams{SessionID: res.SessionID})
	if err != nil {
		log.Fatal(err)
	}
	defer sub.Close()
	var tools []string
	for {
		e, err := sub.TryNext(ctx)
		if err != nil {
			log.Fatal(err)
		}
		if e == nil {
			break
		}
		if e.Type == "tool.result" {
			tools = append(tools, e.ToolCallID[:5]+"… "+string(e.Type))
		}
	}
	fmt.Println(strings.Join(tools, ", "))
	// Output:
	// completed - Clear skies in Lyon, 21°C.
	// call_… tool.result, call_… tool.result
}
