package hook_test

import (
	"context"
	"fmt"

	"github.com/agentrt/agentrt/hook"
)

func Example() {
	r, err := hook.New([]hook.Config{{
		Name:    "no-rm-rf",
		Point:   hook.PreToolUse,
		Matcher: "Bash",
		Command: `grep -q 'rm -rf' && { echo "rm -rf is not allowed" >&2; exit 2; }; exit 0`,
	}}, hook.Options{Dir: "/"})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, command := range []string{`ls`, `rm -rf /`} {
		out := r.Run(context.Background(), hook.PreToolUse, hook.Input{
			SessionID: "s1",
			ToolName:  "Bash",
			ToolInput: []byte(`{"command":"` + command + `"}`),
		}, nil)
		fmt.Printf("%s: blocked=%v reason=%q\n", command, out.Blocked, out.Reason)
	}
	// Output:
	// ls: blocked=false reason=""
	// rm -rf /: blocked=true reason="rm -rf is not allowed"
}
