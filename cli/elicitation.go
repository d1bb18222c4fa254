package cli

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/runtype"
)

type answerFlags struct {
	storeFlags
	content   string
	decline   bool
	cancel    bool
	message   string
	principal string
}

func newAnswerCmd() *cobra.Command {
	var f answerFlags
	cmd := &cobra.Command{
		Use:   "answer ACTION_ID (--content JSON | --decline | --cancel) [--message M]",
		Short: "Answer the input an MCP server asked for during a tool call",
		Long: `Answer a pending elicitation: an MCP server asked, in the middle of a tool call, for input
described by a JSON Schema (approvals list and watch show its prompt and fields; --json
shows requestedSchema whole). --content answers with a JSON object that must validate
against that schema (accept); --decline refuses to give it; --cancel dismisses the question.
The run that asked is still running and goes on with the answer; the command does not follow
it.

Exit codes: 0 answered; 1 the action is unknown, already answered or the principal may not
answer it; 2 usage error, including content the schema rejects (the reason names the
property; the action stays pending) and an action that is not an elicitation.`,
		Example: `  agentrt approvals answer act_01M7Z6E98T14HZ9P6EVS3DAV37 --config agentrt.yaml --content '{"name":"Ada","age":36}'
  agentrt approvals answer act_01M7Z6E98T14HZ9P6EVS3DAV37 --server http://127.0.0.1:7420 --decline`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return answer(cmd, &f, args)
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&f.content, "content", "", "accept with this JSON object, valid against the requested schema")
	cmd.Flags().BoolVar(&f.decline, "decline", false, "refuse to give the input (decline)")
	cmd.Flags().BoolVar(&f.cancel, "cancel", false, "dismiss the question (cancel)")
	cmd.Flags().StringVar(&f.message, "message", "", "a note kept with the answer")
	cmd.Flags().StringVar(&f.principal, "principal", apitype.DefaultPrincipal, "who answers; needs the operator role")
	return cmd
}

// decision reads the flags of answer into a decision and its content.
func (f *answerFlags) decision(cmd *cobra.Command) (string, json.RawMessage, error) {
	n := 0
	for _, set := range []bool{cmd.Flags().Changed("content"), f.decline, f.cancel} {
		if set {
			n++
		}
	}
	switch {
	case n != 1:
		return "", nil, usageErr("answer takes exactly one of --content, --decline and --cancel")
	case f.decline:
		return runtype.DecisionDecline, nil, nil
	case f.cancel:
		return runtype.DecisionCancel, nil, nil
	case !json.Valid([]byte(f.content)):
		return "", nil, usageErr("invalid --content: not valid JSON: %s", oneLine(f.content, 60))
	}
	return runtype.DecisionAccept, json.RawMessage(f.content), nil
}

func answer(cmd *cobra.Command, f *answerFlags, args []string) error {
	if len(args) != 1 {
		return usageErr("%s takes one ACTION_ID, got %d arguments", cmd.CommandPath(), len(args))
	}
	id := args[0]
	decision, content, err := f.decision(cmd)
	if err != nil {
		return err
	}
	if serverURL(cmd) != "" && cmd.Flags().Changed("principal") {
		return usageErr("--principal applies to a data directory; with --server the daemon answers as its own principal")
	}
	// The run that asked lives in the process that runs it: this one
	// only records the answer, and claims no work.
	b, stop, err := f.backend(cmd, false)
	if err != nil {
		return err
	}
	defer stop()
	ctx := commandContext(cmd)
	owner := runtype.Owner{PrincipalID: f.principal}
	act, err := b.GetAction(ctx, owner, id)
	if err != nil {
		return actionErr(id, err)
	}
	if act.Type != runtype.ActionElicitation {
		return usageErr("action %s is a %s action, not an elicitation: answer it with agentrt approvals approve or deny", id, act.Type)
	}
	res, err := b.RespondAction(ctx, &apitype.RespondActionParams{
		Owner: owner, ActionID: id, Decision: decision, Message: f.message, Content: content,
	})
	if err != nil {
		return actionErr(id, err)
	}
	printResolved(cmd.OutOrStdout(), &res.Action)
	return nil
}

// elicitationFields summarises what an elicitation's schema asks for:
// its properties in the order the schema lists them, each with its type
// (or its choices), required ones marked *: "name*: string, plan: basic|pro".
func elicitationFields(schema json.RawMessage) string {
	var s struct {
		Properties orderedProps `json:"properties"`
		Required   []string     `json:"required"`
	}
	if json.Unmarshal(schema, &s) != nil || len(s.Properties) == 0 {
		return "{}"
	}
	parts := make([]string, len(s.Properties))
	for i, p := range s.Properties {
		name := p.name
		if slices.Contains(s.Required, p.name) {
			name += "*"
		}
		typ := p.Type
		switch {
		case len(p.Enum) > 0:
			choices := make([]string, len(p.Enum))
			for j, v := range p.Enum {
				choices[j] = fmt.Sprint(v)
			}
			typ = strings.Join(choices, "|")
		case typ == "":
			typ = "any"
		}
		parts[i] = name + ": " + typ
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// schemaProp is what elicitationFields shows of a property.
type schemaProp struct {
	name string
	Type string `json:"type"`
	Enum []any  `json:"enum"`
}

// orderedProps decodes a schema's properties keeping their order.
type orderedProps []schemaProp

func (o *orderedProps) UnmarshalJSON(b []byte) error {
	dec := json.NewDecoder(strings.NewReader(string(b)))
	if _, err := dec.Token(); err != nil { // {
		return err
	}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return err
		}
		name, ok := k.(string)
		if !ok {
			return fmt.Errorf("property name %v is not a string", k)
		}
		var p schemaProp
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return err
		}
		json.Unmarshal(raw, &p) // a property that says no type shows as any
		p.name = name
		*o = append(*o, p)
	}
	return nil
}
