package cli

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/config"
	"github.com/agentrt/agentrt/internal/yamlpos"
	"github.com/agentrt/agentrt/loop"
	"github.com/agentrt/agentrt/policy"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/tool"
)

func newPolicyCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "policy",
		Short: "Explain policy decisions and check rule files",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newExplainCmd(), newLintCmd())
	return cmd
}

type explainFlags struct {
	config    string
	tool      string
	input     string
	agent     string
	principal string
	roles     []string
	mode      string
	session   string
	json      bool
}

func newExplainCmd() *cobra.Command {
	var f explainFlags
	cmd := &cobra.Command{
		Use:   "explain --tool NAME [--input JSON] [--agent A] [--principal P] [--role R]... [--mode M] [--session S] [--json]",
		Short: "Show how the policy would decide a tool call, rule by rule",
		Long: `Build the policy of the config's policy section and ask it about one tool call, as the
runtime would before running it: print the decision (outcome, source, reason code,
message, mode and the deciding rule) and every rule considered, each with whether it
matched and, if not, why. Checkers run as they would for the call. Nothing is recorded;
the data directory is not opened, so a session's switched mode and the rules people added
by approving are not applied (give the mode with --mode).

Exit codes: 0 explained, whatever the decision; 2 usage or configuration error (an
unknown tool or agent, input that is not JSON or that the tool's schema rejects).`,
		Example: `  agentrt policy explain --config agentrt.yaml --tool open_ticket --input '{"order_id":"1042","priority":"high","summary":"late"}'
  agentrt policy explain --config agentrt.yaml --tool read_file --input '{"path":"policy.md"}' --mode read_only --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return explain(cmd, &f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.config, "config", "agentrt.yaml", "the agentrt.yaml whose policy decides")
	fl.StringVar(&f.tool, "tool", "", "the tool called (required)")
	fl.StringVar(&f.input, "input", "{}", "the call's input, a JSON object")
	fl.StringVar(&f.agent, "agent", "", "the agent calling (default: the only agent in the config)")
	fl.StringVar(&f.principal, "principal", apitype.DefaultPrincipal, "the principal the turn runs for")
	fl.StringArrayVar(&f.roles, "role", nil, "a role of the principal, instead of those the config gives it (repeatable)")
	fl.StringVar(&f.mode, "mode", "", "the session's permission mode (default: the agent's, then the policy's)")
	fl.StringVar(&f.session, "session", "", "the session id the call is made in")
	fl.BoolVar(&f.json, "json", false, "print the explanation as JSON")
	return cmd
}

// ExplainReport is what agentrt policy explain prints with --json.
type ExplainReport struct {
	Request  ExplainRequest  `json:"request"`
	Decision ExplainDecision `json:"decision"`
	// DecidingRule is the rule that decided, when one did.
	DecidingRule *ExplainRule `json:"decidingRule,omitempty"`
	// Steps are the kernel's evaluation steps, in order.
	Steps []ExplainStep `json:"steps"`
	// Rules are every rule considered, highest ranked first.
	Rules []ExplainRule `json:"rules"`
}

// ExplainRequest is the call explained, with what the tool's declaration
// adds to it.
type ExplainRequest struct {
	Tool           string          `json:"tool"`
	Input          json.RawMessage `json:"input"`
	Agent          string          `json:"agent,omitempty"`
	Principal      string          `json:"principal"`
	Roles          []string        `json:"roles,omitempty"`
	Mode           string          `json:"mode,omitempty"`
	SessionID      string          `json:"sessionId,omitempty"`
	ReadOnly       bool            `json:"readOnly"`
	Destructive    bool            `json:"destructive"`
	Intent         string          `json:"intent"`
	RequiredScopes []string        `json:"requiredScopes,omitempty"`
	Command        string          `json:"command,omitempty"`
	MCPServer      string          `json:"mcpServer,omitempty"`
}

// ExplainDecision is the policy's decision.
type ExplainDecision struct {
	Outcome       string   `json:"outcome"`
	Source        string   `json:"source"`
	ReasonCode    string   `json:"reasonCode"`
	Message       string   `json:"message,omitempty"`
	Mode          string   `json:"mode,omitempty"`
	RuleIDs       []string `json:"ruleIds,omitempty"`
	MissingScopes []string `json:"missingScopes,omitempty"`
	Checker       string   `json:"checker,omitempty"`
}

// ExplainStep is one evaluation step.
type ExplainStep struct {
	Name   string `json:"name"`
	Detail string `json:"detail"`
}

// ExplainRule is one rule as the policy considered it.
type ExplainRule struct {
	ID       string `json:"id"`
	Tier     string `json:"tier"`
	Source   string `json:"source,omitempty"`
	Priority int    `json:"priority"`
	Decision string `json:"decision"`
	Matched  bool   `json:"matched"`
	Deciding bool   `json:"deciding"`
	// Why says why the rule did not match.
	Why string `json:"why,omitempty"`
}

func explain(cmd *cobra.Command, f *explainFlags) error {
	if f.tool == "" {
		return usageErr("--tool is required")
	}
	cfg, file, err := agentrt.LoadConfig(f.config)
	if err != nil {
		return configErr(err)
	}
	agent := f.agent
	switch {
	case agent != "":
		if _, ok := cfg.Agents[agent]; !ok {
			return usageErr("unknown agent %q: %s defines %s", agent, f.config, strings.Join(file.AgentNames(), ", "))
		}
	case len(file.AgentNames()) == 1:
		agent = file.AgentNames()[0]
	default:
		return usageErr("--agent is required: %s defines %s", f.config, strings.Join(file.AgentNames(), ", "))
	}
	if f.mode != "" && !policy.Mode(f.mode).Valid() {
		return usageErr("invalid --mode %q: use %s", f.mode, strings.Join(config.Modes, ", "))
	}
	// The tools as the runtime registers them: the built-in file and
	// process tools, then the config's.
	reg, err := agentrt.NewToolRegistry(cfg)
	if err != nil {
		return configErr(err)
	}
	t, ok := reg.Lookup(f.tool)
	if !ok {
		return usageErr("unknown tool %q: the known tools are %s", f.tool, strings.Join(reg.Names(), ", "))
	}
	input := json.RawMessage(f.input)
	sum, err := reg.Check(f.tool, input)
	if err != nil {
		return usageErr("invalid --input: %v", err)
	}
	spec := t.Spec()
	// The request the runtime would build for this call.
	req := loop.PolicyRequest(spec, input)
	req.Owner = runtype.Owner{TenantID: apitype.DefaultTenant, PrincipalID: f.principal}
	req.Roles, req.Agent, req.SessionID, req.ArgumentsSHA256, req.Mode = f.roles, agent, f.session, sum, policy.Mode(f.mode)
	rep := ExplainReport{
		Request: ExplainRequest{
			Tool: spec.Name, Input: input, Agent: agent, Principal: f.principal, Roles: f.roles, Mode: f.mode, SessionID: f.session,
			ReadOnly: req.ReadOnly, Destructive: req.Destructive, Intent: req.Intent, RequiredScopes: req.RequiredScopes,
			Command: req.Command, MCPServer: req.MCPServer,
		},
		Steps: []ExplainStep{}, Rules: []ExplainRule{},
	}
	k, ok := cfg.Policy.(*policy.Kernel)
	if !ok {
		// No policy section: the runtime's default evaluator decides.
		d, _ := policy.DefaultEvaluator{}.Evaluate(commandContext(cmd), req)
		rep.Decision = explainDecision(d)
		if f.json {
			return writeJSON(cmd.OutOrStdout(), &rep)
		}
		fmt.Fprintf(cmd.OutOrStdout(), "no policy configured: every call is allowed (%s)\n", d.ReasonCode)
		return nil
	}
	ex, err := k.Explain(commandContext(cmd), req)
	if err != nil {
		return &exitError{code: ExitFailed, err: fmt.Errorf("explaining the decision: %w", err)}
	}
	rep.Decision = explainDecision(ex.Decision)
	for _, s := range ex.Steps {
		rep.Steps = append(rep.Steps, ExplainStep{Name: s.Name, Detail: s.Detail})
	}
	for _, r := range ex.Rules {
		er := ExplainRule{
			ID: r.Rule.ID, Tier: r.Rule.Tier.String(), Source: r.Rule.Source, Priority: r.Priority,
			Decision: string(r.Decision), Matched: r.Matched, Deciding: r.Deciding, Why: r.Why,
		}
		rep.Rules = append(rep.Rules, er)
		if r.Deciding {
			rep.DecidingRule = &er
		}
	}
	if f.json {
		return writeJSON(cmd.OutOrStdout(), &rep)
	}
	printExplain(cmd.OutOrStdout(), &rep, file.Dir, slices.Contains(cfg.Agents[agent].Tools, spec.Name) || spec.Name == tool.CompleteTaskName)
	return nil
}

func explainDecision(d policy.Decision) ExplainDecision {
	return ExplainDecision{
		Outcome: string(d.Outcome), Source: string(d.Source), ReasonCode: d.ReasonCode, Message: d.Message,
		Mode: string(d.Mode), RuleIDs: d.RuleIDs, MissingScopes: d.MissingScopes, Checker: d.Checker,
	}
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// printExplain prints the report for people: the call, the decision, the
// steps, and a table of the rules considered. Rule files are named
// relative to dir, the config's folder, as the config names them.
func printExplain(w io.Writer, rep *ExplainReport, dir string, agentHasTool bool) {
	source := func(r *ExplainRule) string {
		if rel, err := filepath.Rel(dir, r.Source); err == nil && filepath.IsLocal(rel) {
			return rel
		}
		return cmp.Or(r.Source, "-")
	}
	rq := &rep.Request
	traits := []string{"intent " + rq.Intent}
	if rq.ReadOnly {
		traits = append(traits, "read-only")
	}
	if rq.Destructive {
		traits = append(traits, "destructive")
	}
	if len(rq.RequiredScopes) > 0 {
		traits = append(traits, "scopes "+strings.Join(rq.RequiredScopes, ","))
	}
	fmt.Fprintf(w, "call      %s %s (%s)\n", rq.Tool, oneLine(string(rq.Input), 60), strings.Join(traits, ", "))
	if rq.Command != "" {
		fmt.Fprintf(w, "command   %s\n", oneLine(rq.Command, 90))
	}
	who := fmt.Sprintf("agent %s, principal %s", rq.Agent, rq.Principal)
	if rq.Roles != nil {
		who += ", roles " + strings.Join(rq.Roles, ",")
	}
	if rq.SessionID != "" {
		who += ", session " + rq.SessionID
	}
	fmt.Fprintf(w, "by        %s\n", who)
	if !agentHasTool {
		fmt.Fprintf(w, "note      agent %s does not list %s: the runtime would refuse its calls before the policy\n", rq.Agent, rq.Tool)
	}
	d := &rep.Decision
	fmt.Fprintf(w, "\ndecision  %s\n", d.Outcome)
	fmt.Fprintf(w, "source    %s\n", d.Source)
	fmt.Fprintf(w, "reason    %s\n", d.ReasonCode)
	if d.Message != "" {
		fmt.Fprintf(w, "message   %s\n", d.Message)
	}
	fmt.Fprintf(w, "mode      %s\n", d.Mode)
	if r := rep.DecidingRule; r != nil {
		fmt.Fprintf(w, "rule      %s (%s tier, %s)\n", r.ID, r.Tier, source(r))
	}
	if d.Checker != "" {
		fmt.Fprintf(w, "checker   %s\n", d.Checker)
	}
	if len(d.MissingScopes) > 0 {
		fmt.Fprintf(w, "missing   %s\n", strings.Join(d.MissingScopes, ", "))
	}
	fmt.Fprintln(w, "\nsteps")
	for _, s := range rep.Steps {
		fmt.Fprintf(w, "  %-9s %s\n", s.Name, s.Detail)
	}
	fmt.Fprintln(w, "\nrules considered, highest ranked first")
	if len(rep.Rules) == 0 {
		fmt.Fprintln(w, "  (none)")
		return
	}
	cols := []string{"RULE", "TIER", "PRIORITY", "DECISION", "SOURCE", "RESULT"}
	rows := [][]string{cols}
	for i := range rep.Rules {
		r := &rep.Rules[i]
		result := "no: " + r.Why
		switch {
		case r.Deciding:
			result = "matches, decides"
		case r.Matched:
			result = "matches"
		}
		rows = append(rows, []string{r.ID, r.Tier, fmt.Sprint(r.Priority), r.Decision, source(r), result})
	}
	writeTable(w, "  ", rows)
}

// writeTable prints rows in columns two spaces apart; the last column is
// not padded.
func writeTable(w io.Writer, prefix string, rows [][]string) {
	widths := make([]int, len(rows[0]))
	for _, row := range rows {
		for i, cell := range row {
			widths[i] = max(widths[i], len([]rune(cell)))
		}
	}
	for _, row := range rows {
		var b strings.Builder
		b.WriteString(prefix)
		for i, cell := range row {
			b.WriteString(cell)
			if i < len(row)-1 {
				b.WriteString(strings.Repeat(" ", widths[i]-len([]rune(cell))+2))
			}
		}
		fmt.Fprintln(w, b.String())
	}
}

func newLintCmd() *cobra.Command {
	var configPath string
	cmd := &cobra.Command{
		Use:   "lint [--config FILE] RULE_FILE...",
		Short: "Check policy rule files",
		Long: `Parse policy rule files as the runtime would, and print every problem found as
file:line:column: message. With --config, also check that the checkers the rules name are
builtin or defined in the config's policy section.

Exit codes: 0 no problem, 2 problems found (or a file cannot be read, or the config does
not load).`,
		Example: `  agentrt policy lint policy/admin.yaml policy/workspace.yaml
  agentrt policy lint --config agentrt.yaml policy/*.yaml`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return lint(cmd, configPath, args)
		},
	}
	// No default: without --config, checker names are not checked.
	cmd.Flags().StringVar(&configPath, "config", "", "also check checker names against this agentrt.yaml's policy")
	return cmd
}

func lint(cmd *cobra.Command, configPath string, files []string) error {
	if len(files) == 0 {
		return usageErr("missing RULE_FILE: name the rule files to check")
	}
	var checkers []string
	if configPath != "" {
		file, err := config.Load(configPath, config.Options{Builtins: agentrt.BuiltinToolNames()})
		if err != nil {
			return configErr(err)
		}
		checkers = append(checkers, config.BuiltinCheckers...)
		if file.Policy != nil {
			checkers = append(checkers, sortedKeys(file.Policy.Checkers)...)
		}
	}
	rules, err := policy.LoadRuleFiles(files...)
	var problems policy.Errors
	switch {
	case errors.As(err, &problems):
	case err != nil:
		return usageErr("%v", err)
	}
	if checkers != nil {
		if problems != nil {
			// The files that parse still have their checkers checked.
			rules = nil
			for _, f := range files {
				if rs, err := policy.LoadRuleFiles(f); err == nil {
					rules = append(rules, rs...)
				}
			}
		}
		for _, r := range rules {
			if r.Checker != "" && !slices.Contains(checkers, r.Checker) {
				problems = append(problems, checkerProblem(r, checkers))
			}
		}
		order := make(map[string]int, len(files))
		for i, f := range slices.Backward(files) {
			order[f] = i
		}
		slices.SortStableFunc(problems, func(a, b *policy.Error) int {
			return cmp.Or(cmp.Compare(order[a.File], order[b.File]), cmp.Compare(a.Line, b.Line), cmp.Compare(a.Column, b.Column))
		})
	}
	out := cmd.OutOrStdout()
	if len(problems) > 0 {
		for _, p := range problems {
			fmt.Fprintln(out, p.Error())
		}
		return &exitError{code: ExitUsage, err: fmt.Errorf("%s in %s", plural(len(problems), "problem"), plural(len(files), "file"))}
	}
	fmt.Fprintf(out, "%s in %s: ok\n", plural(len(rules), "rule"), plural(len(files), "file"))
	return nil
}

// checkerProblem reports a rule naming an unknown checker, at the rule's
// checker key.
func checkerProblem(r *policy.Rule, known []string) *policy.Error {
	slices.Sort(known)
	file, line := splitSource(r.Source)
	e := &policy.Error{File: file, Line: line, Column: 1,
		Message: fmt.Sprintf("rule %q names unknown checker %q: use %s, or define it under policy.checkers", r.ID, r.Checker, strings.Join(known, ", "))}
	if pos, ok := checkerPos(file, r.ID); ok {
		e.Line, e.Column = pos.Line, pos.Column
	}
	return e
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// splitSource splits a rule's source, "file:line".
func splitSource(src string) (string, int) {
	i := strings.LastIndexByte(src, ':')
	if i < 0 {
		return src, 1
	}
	line, err := strconv.Atoi(src[i+1:])
	if err != nil {
		return src, 1
	}
	return src[:i], line
}

// checkerPos finds where the rule with id names its checker in a rule
// file that parsed.
func checkerPos(file, id string) (yamlpos.Pos, bool) {
	data, err := yamlpos.ReadFile(file)
	if err != nil {
		return yamlpos.Pos{}, false
	}
	doc, _, err := yamlpos.Parse(data, yamlpos.Options{CoreTags: true, EntryPositions: true})
	if err != nil || doc == nil {
		return yamlpos.Pos{}, false
	}
	for _, f := range doc.Root().Fields() {
		if f.Key != "rules" {
			continue
		}
		for _, item := range f.Value().Items() {
			var pos yamlpos.Pos
			found := false
			for _, rf := range item.Fields() {
				switch v := rf.Value(); {
				case v == nil:
				case rf.Key == "id" && v.Text == id:
					found = true
				case rf.Key == "checker":
					pos = v.Pos
				}
			}
			if found && pos != (yamlpos.Pos{}) {
				return pos, true
			}
		}
	}
	return yamlpos.Pos{}, false
}
