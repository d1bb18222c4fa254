package agentrt

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"text/template"
	"time"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"

	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/tool"
)

// This file holds workflow definitions (docs/workflows.md): a graph of
// steps, each an agent's turn, a timer or a question to a person, joined
// by needs and guarded by CEL conditions. workflow_run.go runs them.

// Workflow is a workflow definition (Config.Workflows, agentrt.yaml's
// workflows): its steps, in any order (Needs orders them), and the JSON
// Schema its input must match (optional).
type Workflow struct {
	Steps       []WorkflowStep
	InputSchema json.RawMessage
}

// WorkflowStep is one step of a workflow. It is exactly one of: an agent
// step (Agent, with Input), a timer (Wait or Until) or a human step
// (Human, the question asked; answered with approve or deny and a
// message through respond_action).
type WorkflowStep struct {
	// ID names the step, unique in its workflow: letters, digits and _.
	ID string
	// Agent runs the step: its turn's input is Input, a Go text/template
	// over .Input (the run's input, a JSON object) and .Steps (step ID →
	// {.Output, .JSON, .Status}).
	Agent string
	Input string
	// Needs are the steps this one waits for; Join says how many of them
	// must complete: "all" (the default), "any" or "n_of" (N of them).
	Needs []string
	Join  string
	N     int
	// When is a CEL condition over input (the run's input) and steps
	// (step ID → {"status", "output", "json"}): a ready step whose
	// condition is false is skipped.
	When string
	// Wait makes the step a timer that completes Wait after it became
	// ready; Until one that completes at an instant.
	Wait  time.Duration
	Until time.Time
	// Human makes the step a question to a person (a template like
	// Input): the step completes with the answer,
	// {"decision": "approve"|"deny", "message": …}.
	Human string
}

// Join kinds.
const (
	JoinAll = "all"
	JoinAny = "any"
	JoinNOf = "n_of"
)

// Step kinds, as reads and events name them.
const (
	stepAgent = "agent"
	stepTimer = "timer"
	stepHuman = "human"
)

// workflowDef is a validated, compiled workflow.
type workflowDef struct {
	name   string
	schema *tool.Schema // nil: any object
	steps  []*stepDef   // in the definition's order
	byID   map[string]*stepDef
}

type stepDef struct {
	WorkflowStep
	kind  string
	input *template.Template // agent: the input; human: the question
	when  cel.Program        // nil: always
}

var stepIDPattern = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]{0,63}$`)

// workflowCELEnv is the environment of step conditions.
func workflowCELEnv() (*cel.Env, error) {
	return cel.NewEnv(
		cel.Variable("input", cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable("steps", cel.MapType(cel.StringType, cel.DynType)),
	)
}

// compileWorkflows validates and compiles every definition.
func compileWorkflows(wfs map[string]*Workflow, agents map[string]*Agent) (map[string]*workflowDef, error) {
	out := make(map[string]*workflowDef, len(wfs))
	names := make([]string, 0, len(wfs))
	for name := range wfs {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		d, err := compileWorkflow(name, wfs[name], agents)
		if err != nil {
			return nil, fmt.Errorf("config: workflow %q: %w", name, err)
		}
		out[name] = d
	}
	return out, nil
}

func compileWorkflow(name string, wf *Workflow, agents map[string]*Agent) (*workflowDef, error) {
	if wf == nil || len(wf.Steps) == 0 {
		return nil, errors.New("has no steps")
	}
	if err := runtype.ValidateCallerID("workflow", name); err != nil {
		return nil, err
	}
	d := &workflowDef{name: name, byID: make(map[string]*stepDef, len(wf.Steps))}
	if len(bytes.TrimSpace(wf.InputSchema)) > 0 {
		s, err := tool.CompileSchema("agentrt:///workflow/"+name+"/input.schema.json", wf.InputSchema)
		if err != nil {
			return nil, fmt.Errorf("input schema: %w", err)
		}
		d.schema = s
	}
	env, err := workflowCELEnv()
	if err != nil {
		return nil, fmt.Errorf("creating the CEL environment: %w", err)
	}
	for i := range wf.Steps {
		s := &stepDef{WorkflowStep: wf.Steps[i]}
		if !stepIDPattern.MatchString(s.ID) {
			return nil, fmt.Errorf("step %d: id %q must start with a letter and hold only letters, digits and _ (at most 64)", i+1, s.ID)
		}
		if d.byID[s.ID] != nil {
			return nil, fmt.Errorf("two steps have the id %q", s.ID)
		}
		if err := s.check(agents, env); err != nil {
			return nil, fmt.Errorf("step %q: %w", s.ID, err)
		}
		d.steps = append(d.steps, s)
		d.byID[s.ID] = s
	}
	for _, s := range d.steps {
		for _, n := range s.Needs {
			switch {
			case n == s.ID:
				return nil, fmt.Errorf("step %q needs itself", s.ID)
			case d.byID[n] == nil:
				return nil, fmt.Errorf("step %q needs %q, which is not a step of the workflow", s.ID, n)
			}
		}
	}
	if cycle := d.cycle(); cycle != nil {
		return nil, fmt.Errorf("steps form a cycle: %s", strings.Join(cycle, " → "))
	}
	return d, nil
}

// check validates one step on its own.
func (s *stepDef) check(agents map[string]*Agent, env *cel.Env) error {
	kinds := 0
	if s.Agent != "" {
		kinds++
		s.kind = stepAgent
	}
	if s.Wait != 0 || !s.Until.IsZero() {
		kinds++
		s.kind = stepTimer
	}
	if s.Human != "" {
		kinds++
		s.kind = stepHuman
	}
	switch {
	case kinds != 1:
		return errors.New("must be exactly one of: an agent step (agent), a timer (wait or until) or a human step (human)")
	case s.Wait < 0:
		return fmt.Errorf("wait %s is negative", s.Wait)
	case s.Wait != 0 && !s.Until.IsZero():
		return errors.New("a timer has wait or until, not both")
	case s.kind == stepAgent && agents[s.Agent] == nil:
		return fmt.Errorf("unknown agent %q", s.Agent)
	case s.kind != stepAgent && s.Input != "":
		return errors.New("input is only for an agent step")
	}
	seen := map[string]bool{}
	for _, n := range s.Needs {
		if seen[n] {
			return fmt.Errorf("needs %q twice", n)
		}
		seen[n] = true
	}
	switch s.Join {
	case "", JoinAll:
		if s.N != 0 {
			return errors.New("n is only for join n_of")
		}
	case JoinAny:
		if len(s.Needs) == 0 {
			return errors.New("join any needs at least one need")
		}
		if s.N != 0 {
			return errors.New("n is only for join n_of")
		}
	case JoinNOf:
		if s.N < 1 || s.N > len(s.Needs) {
			return fmt.Errorf("join n_of: n %d is out of range: use 1 to %d (the step's needs)", s.N, len(s.Needs))
		}
	default:
		return fmt.Errorf("unknown join %q: use all, any or n_of", s.Join)
	}
	text := s.Input
	if s.kind == stepHuman {
		text = s.Human
	}
	if s.kind != stepTimer {
		t, err := template.New(s.ID).Option("missingkey=zero").Parse(text)
		if err != nil {
			return fmt.Errorf("template: %w", err)
		}
		s.input = t
	}
	if s.When != "" {
		ast, iss := env.Compile(s.When)
		if iss != nil && iss.Err() != nil {
			return fmt.Errorf("when: %w", iss.Err())
		}
		if t := ast.OutputType(); !t.IsExactType(cel.BoolType) && !t.IsExactType(cel.DynType) {
			return fmt.Errorf("when: must be a bool expression, got %s", t)
		}
		prg, err := env.Program(ast, cel.CostLimit(100_000))
		if err != nil {
			return fmt.Errorf("when: %w", err)
		}
		s.when = prg
	}
	return nil
}

// cycle returns the steps of a cycle of needs, or nil.
func (d *workflowDef) cycle() []string {
	const (
		unseen = iota
		onPath
		done
	)
	state := make(map[string]int, len(d.steps))
	var path []string
	var visit func(id string) []string
	visit = func(id string) []string {
		switch state[id] {
		case onPath:
			i := slices.Index(path, id)
			return append(slices.Clone(path[i:]), id)
		case done:
			return nil
		}
		state[id] = onPath
		path = append(path, id)
		for _, n := range d.byID[id].Needs {
			if c := visit(n); c != nil {
				return c
			}
		}
		path = path[:len(path)-1]
		state[id] = done
		return nil
	}
	for _, s := range d.steps {
		if c := visit(s.ID); c != nil {
			return c
		}
	}
	return nil
}

// stepView is what a template sees of a step (.Steps.<id>).
type stepView struct {
	Output string
	JSON   any
	Status runtype.StepStatus
}

// workflowScope is the run's state as templates and conditions see it.
type workflowScope struct {
	input map[string]any
	steps map[string]stepView
}

func newWorkflowScope(run *runtype.WorkflowRun) *workflowScope {
	sc := &workflowScope{input: map[string]any{}, steps: make(map[string]stepView, len(run.Steps))}
	if run.Input != "" {
		_ = json.Unmarshal([]byte(run.Input), &sc.input)
	}
	for _, st := range run.Steps {
		v := stepView{Output: st.Output, Status: st.Status}
		if st.Output != "" {
			var j any
			if json.Unmarshal([]byte(st.Output), &j) == nil {
				v.JSON = j
			}
		}
		sc.steps[st.ID] = v
	}
	return sc
}

// render executes a step's template.
func (sc *workflowScope) render(t *template.Template) (string, error) {
	var b strings.Builder
	if err := t.Execute(&b, map[string]any{"Input": sc.input, "Steps": sc.steps}); err != nil {
		return "", err
	}
	return b.String(), nil
}

// holds evaluates a step's condition.
func (sc *workflowScope) holds(prg cel.Program) (bool, error) {
	steps := make(map[string]any, len(sc.steps))
	for id, v := range sc.steps {
		steps[id] = map[string]any{"status": string(v.Status), "output": v.Output, "json": v.JSON}
	}
	out, _, err := prg.Eval(map[string]any{"input": sc.input, "steps": steps})
	if err != nil {
		return false, err
	}
	b, ok := out.(types.Bool)
	if !ok {
		return false, fmt.Errorf("the condition gave %s, not a bool", out.Type())
	}
	return bool(b), nil
}
