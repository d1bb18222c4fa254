package tool_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/tool"
)

type greetInput struct {
	Name  string `json:"name"`
	Times int    `json:"times,omitempty"`
}

func TestFunc(t *testing.T) {
	t.Parallel()

	t.Run("spec", func(t *testing.T) {
		t.Parallel()
		ann := tool.Annotations{ReadOnly: true, Idempotent: true}
		tl := tool.Func("greet", "Greet someone.", ann, func(context.Context, *tool.Call, greetInput) (string, error) {
			return "", nil
		})
		spec := tl.Spec()
		want := tool.Spec{
			Name:        "greet",
			Description: "Greet someone.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"},"times":{"type":"integer"}},"required":["name"],"additionalProperties":false}`),
			Annotations: ann,
			Source:      "go",
		}
		if diff := cmp.Diff(want, spec); diff != "" {
			t.Errorf("Spec (-want +got):\n%s", diff)
		}
		if err := tool.NewRegistry().Register(tl); err != nil {
			t.Errorf("Register: %v", err)
		}
	})

	t.Run("string output is returned as is", func(t *testing.T) {
		t.Parallel()
		var gotCall *tool.Call
		tl := tool.Func("greet", "", tool.Annotations{}, func(_ context.Context, call *tool.Call, in greetInput) (string, error) {
			gotCall = call
			return strings.Repeat("hello "+in.Name+"\n", in.Times), nil
		})
		call := &tool.Call{ID: "call_1", Input: json.RawMessage(`{"name":"Ada","times":2}`)}
		res, err := tl.Call(t.Context(), call)
		if err != nil {
			t.Fatalf("Call: %v", err)
		}
		if diff := cmp.Diff(&tool.Result{Content: "hello Ada\nhello Ada\n"}, res); diff != "" {
			t.Errorf("Result (-want +got):\n%s", diff)
		}
		if gotCall != call {
			t.Error("fn did not receive the call")
		}
	})

	t.Run("struct output is JSON", func(t *testing.T) {
		t.Parallel()
		type out struct {
			Greeting string   `json:"greeting"`
			Tags     []string `json:"tags"`
		}
		tl := tool.Func("greet", "", tool.Annotations{}, func(_ context.Context, _ *tool.Call, in greetInput) (out, error) {
			return out{Greeting: "hi " + in.Name, Tags: []string{"<b>"}}, nil
		})
		res, err := tl.Call(t.Context(), &tool.Call{Input: json.RawMessage(`{"name":"Ada"}`)})
		if err != nil {
			t.Fatalf("Call: %v", err)
		}
		var got out
		if err := json.Unmarshal([]byte(res.Content), &got); err != nil {
			t.Fatalf("content %q is not JSON: %v", res.Content, err)
		}
		if diff := cmp.Diff(out{Greeting: "hi Ada", Tags: []string{"<b>"}}, got); diff != "" {
			t.Errorf("decoded content (-want +got):\n%s", diff)
		}
	})

	t.Run("fn error is returned", func(t *testing.T) {
		t.Parallel()
		errNotFound := errors.New("no such person")
		tl := tool.Func("greet", "", tool.Annotations{}, func(context.Context, *tool.Call, greetInput) (int, error) {
			return 0, errNotFound
		})
		res, err := tl.Call(t.Context(), &tool.Call{Input: json.RawMessage(`{"name":"x"}`)})
		if !errors.Is(err, errNotFound) || res != nil {
			t.Errorf("Call = %v, %v; want nil, errNotFound", res, err)
		}
	})

	t.Run("undecodable input is an error", func(t *testing.T) {
		t.Parallel()
		called := false
		tl := tool.Func("greet", "", tool.Annotations{}, func(context.Context, *tool.Call, greetInput) (int, error) {
			called = true
			return 0, nil
		})
		_, err := tl.Call(t.Context(), &tool.Call{Input: json.RawMessage(`{"name":5}`)})
		if err == nil || !strings.Contains(err.Error(), "decoding input") {
			t.Errorf("Call error = %v, want a decoding error", err)
		}
		if called {
			t.Error("fn was called with undecodable input")
		}
	})

	t.Run("uninferable input is reported by Register", func(t *testing.T) {
		t.Parallel()
		type bad struct {
			C chan int `json:"c"`
		}
		tl := tool.Func("bad", "", tool.Annotations{}, func(context.Context, *tool.Call, bad) (int, error) { return 0, nil })
		err := tool.NewRegistry().Register(tl)
		if err == nil || !strings.Contains(err.Error(), "inferring input schema") {
			t.Errorf("Register error = %v, want an inference error", err)
		}
	})

	t.Run("non-object input is rejected by Register", func(t *testing.T) {
		t.Parallel()
		tl := tool.Func("count", "", tool.Annotations{}, func(context.Context, *tool.Call, int) (int, error) { return 0, nil })
		err := tool.NewRegistry().Register(tl)
		if err == nil || !strings.Contains(err.Error(), `want "object"`) {
			t.Errorf("Register error = %v, want a top-level type error", err)
		}
	})
}
