package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/runtype"
)

// The approval queue: the tenant's pending actions, each with the
// decisions it allows and, for a tool call, an edit form generated from
// the tool's input schema.
//
// The form is prefilled from the action's input preview when that is
// the whole input as a JSON object: the API exposes no other copy of a
// call's arguments (the store's tool call record is not part of the
// contract), and the preview is bounded and redacted. When it is not
// whole, the form starts empty and says so. An edit replaces the whole
// input, so a redacted value must be typed again.

// consoleApprovals is the approvals page's data.
type consoleApprovals struct {
	Actions []consoleAction
	Next    string
}

// consoleAction is one pending action with its forms.
type consoleAction struct {
	apitype.ActionRead
	Allows map[string]bool
	// Edit is the edit form; nil when the action offers no edit or the
	// tool's schema is unknown.
	Edit *consoleEditForm
	// Message is what the person typed as the message.
	Message string
}

// consoleEditForm is an edit form made from a tool's input schema.
type consoleEditForm struct {
	Fields []consoleField
	// Schema is the tool's input schema (the form's data-schema).
	Schema string
	// Prefilled says the fields start from the call's input; Note says
	// why not.
	Prefilled bool
	Note      string
	// Error is the server's reason for refusing what was sent.
	Error string
}

// consoleField is one control of an edit form: one property of the
// schema.
type consoleField struct {
	Name, Description string
	// Type is string, number, integer, boolean, enum or json (an object,
	// an array or a type the form has no control for: typed as JSON).
	Type     string
	Required bool
	// Options are an enum's values, each as its JSON text.
	Options []string
	Value   string
	// Constraints the browser checks too.
	Min, Max, Pattern    string
	MinLength, MaxLength string
}

// consoleFormState is what a person sent that the server refused: the
// page shows it again with the reason.
type consoleFormState struct {
	actionID string
	form     url.Values
	reason   string
}

func (c *console) approvals(w http.ResponseWriter, r *http.Request, v *consoleView) {
	c.renderApprovals(w, r, v, http.StatusOK, nil)
}

func (c *console) renderApprovals(w http.ResponseWriter, r *http.Request, v *consoleView, code int, st *consoleFormState) {
	ctx := r.Context()
	q := r.URL.Query()
	page, err := c.s.rt.ListActionsPage(ctx, &apitype.ListActionsParams{
		Owner: owner(r), Status: runtype.ActionPending, Cursor: q.Get("cursor"), Limit: consoleRows,
	})
	if err != nil {
		c.failErr(w, r, v, err)
		return
	}
	d := consoleApprovals{}
	if page.NextCursor != "" {
		d.Next = consoleNextPage(r.URL, page.NextCursor)
	}
	schemas := map[string]map[string]string{} // agent → tool → schema
	shown := false                            // the refusal's reason is in its edit form
	for _, a := range page.Actions {
		ca := consoleAction{ActionRead: a, Allows: map[string]bool{}}
		for _, dec := range a.Decisions {
			ca.Allows[dec] = true
		}
		var sent url.Values
		if st != nil && st.actionID == a.ActionID {
			sent = st.form
			ca.Message = sent.Get("message")
		}
		if ca.Allows[runtype.DecisionEdit] && v.CanAct {
			if schema := c.toolSchema(r, schemas, &a); schema != "" {
				ca.Edit = consoleEditFormOf(schema, a.InputPreview, sent)
				if st != nil && st.actionID == a.ActionID && st.form.Get("decision") == runtype.DecisionEdit {
					ca.Edit.Error, shown = st.reason, true
				}
			}
		}
		d.Actions = append(d.Actions, ca)
	}
	if st != nil && !shown {
		v.Flash, v.FlashBad = st.reason, true
	}
	// The notice after an answer names only an action id and a decision,
	// so that a link cannot put other words on the page.
	if ans, st, dec := q.Get("answered"), runtype.ActionStatus(q.Get("status")), q.Get("decision"); v.Flash == "" &&
		strings.HasPrefix(ans, runtype.PrefixAction) && runtype.ValidateCallerID("answered", ans) == nil &&
		slices.Contains([]runtype.ActionStatus{runtype.ActionApproved, runtype.ActionDenied}, st) &&
		slices.Contains([]string{runtype.DecisionApprove, runtype.DecisionApproveForSession, runtype.DecisionApproveAlways, runtype.DecisionDeny, runtype.DecisionEdit}, dec) {
		v.Flash = fmt.Sprintf("Action %s: %s (%s).", ans, st, dec)
		if q.Get("resumed") == "1" {
			v.Flash += " The request resumed."
		}
	}
	v.Title, v.Live, v.Data = "Approvals", "tenant", d
	c.render(w, r, "approvals", code, v)
}

// toolSchema is the input schema of the action's tool, from the tool
// inventory of its request's agent (GET /v1/tools's); "" when unknown.
func (c *console) toolSchema(r *http.Request, cache map[string]map[string]string, a *apitype.ActionRead) string {
	req, err := c.s.rt.GetRequest(r.Context(), owner(r), a.TurnID)
	if err != nil {
		return ""
	}
	tools, ok := cache[req.Agent]
	if !ok {
		tools = map[string]string{}
		if inv, err := c.s.rt.ToolInventory(r.Context(), &apitype.ToolInventoryParams{Owner: owner(r), Agent: req.Agent}); err == nil {
			for _, t := range inv.Tools {
				tools[t.Name] = string(t.InputSchema)
			}
		}
		cache[req.Agent] = tools
	}
	return tools[a.ToolName]
}

// respond answers POST /ui/approvals/{actionId}: the decision of the
// form's button, with its message and, for an edit, the input built from
// the form's fields. A success goes back to the queue (303); a refusal
// shows the queue again with the reason and what was typed.
func (c *console) respond(w http.ResponseWriter, r *http.Request, v *consoleView) {
	id := r.PathValue("actionId")
	decision := r.PostFormValue("decision")
	p := &apitype.RespondActionParams{
		Owner: owner(r), Role: caller(r).Role, ActionID: id, Decision: decision, Message: r.PostFormValue("message"),
	}
	refuse := func(code int, reason string) {
		c.renderApprovals(w, r, v, code, &consoleFormState{actionID: id, form: r.PostForm, reason: reason})
	}
	if decision == runtype.DecisionEdit {
		a, err := c.s.rt.GetAction(r.Context(), owner(r), id)
		if err != nil {
			c.failErr(w, r, v, err)
			return
		}
		schema := c.toolSchema(r, map[string]map[string]string{}, a)
		if schema == "" {
			refuse(http.StatusUnprocessableEntity, "the input schema of tool "+a.ToolName+" is not known to this runtime: edit it through the API")
			return
		}
		in, err := consoleEditInput(schema, r.PostForm)
		if err != nil {
			refuse(http.StatusUnprocessableEntity, err.Error())
			return
		}
		p.UpdatedInput = in
	}
	res, err := c.s.rt.RespondAction(r.Context(), p)
	var inv *apitype.InvalidError
	switch {
	case errors.As(err, &inv):
		refuse(http.StatusUnprocessableEntity, err.Error())
		return
	case errors.Is(err, apitype.ErrConflict):
		refuse(http.StatusConflict, err.Error())
		return
	case errors.As(err, new(*apitype.SelfApprovalError)):
		refuse(http.StatusForbidden, err.Error())
		return
	case err != nil:
		c.failErr(w, r, v, err)
		return
	}
	to := url.Values{"answered": {id}, "status": {string(res.Action.Status)}, "decision": {decision}}
	if res.Resumed {
		to.Set("resumed", "1")
	}
	http.Redirect(w, r, "/ui/approvals?"+to.Encode(), http.StatusSeeOther)
}

// consoleSchema is the part of a JSON Schema the edit form reads.
type consoleSchema struct {
	Type        json.RawMessage   `json:"type"`
	Description string            `json:"description"`
	Enum        []json.RawMessage `json:"enum"`
	Required    []string          `json:"required"`
	Minimum     *float64          `json:"minimum"`
	Maximum     *float64          `json:"maximum"`
	MinLength   *int              `json:"minLength"`
	MaxLength   *int              `json:"maxLength"`
	Pattern     string            `json:"pattern"`
}

// schemaType is a schema's type: the first that is not null of a list.
func (s *consoleSchema) schemaType() string {
	var one string
	if json.Unmarshal(s.Type, &one) == nil {
		return one
	}
	var many []string
	json.Unmarshal(s.Type, &many)
	for _, t := range many {
		if t != "null" {
			return t
		}
	}
	return ""
}

// consoleSchemaProperties reads an object schema's properties in the order the
// schema lists them, with its required names.
func consoleSchemaProperties(schema string) (names []string, props map[string]consoleSchema, required []string) {
	var top struct {
		Properties json.RawMessage `json:"properties"`
		Required   []string        `json:"required"`
	}
	if json.Unmarshal([]byte(schema), &top) != nil {
		return nil, nil, nil
	}
	props = map[string]consoleSchema{}
	dec := json.NewDecoder(bytes.NewReader(top.Properties))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, props, top.Required
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			break
		}
		name, _ := t.(string)
		var ps consoleSchema
		if dec.Decode(&ps) != nil {
			break
		}
		names = append(names, name)
		props[name] = ps
	}
	return names, props, top.Required
}

// consoleEditFormOf builds the edit form of schema: the values sent when the
// server refused them, else the call's input when preview holds it
// whole.
func consoleEditFormOf(schema, preview string, sent url.Values) *consoleEditForm {
	f := &consoleEditForm{Schema: schema}
	var input map[string]json.RawMessage
	switch {
	case sent != nil:
	case json.Unmarshal([]byte(preview), &input) == nil:
		f.Prefilled = true
	default:
		f.Note = "The call's input is shown only as a preview above (cut or redacted), so the fields start empty: an edit replaces the whole input."
	}
	names, props, required := consoleSchemaProperties(schema)
	for _, name := range names {
		ps := props[name]
		fd := consoleField{Name: name, Description: ps.Description, Required: slices.Contains(required, name), Pattern: ps.Pattern}
		if ps.Minimum != nil {
			fd.Min = strconv.FormatFloat(*ps.Minimum, 'g', -1, 64)
		}
		if ps.Maximum != nil {
			fd.Max = strconv.FormatFloat(*ps.Maximum, 'g', -1, 64)
		}
		if ps.MinLength != nil {
			fd.MinLength = strconv.Itoa(*ps.MinLength)
		}
		if ps.MaxLength != nil {
			fd.MaxLength = strconv.Itoa(*ps.MaxLength)
		}
		switch t := ps.schemaType(); {
		case len(ps.Enum) > 0:
			fd.Type = "enum"
			for _, e := range ps.Enum {
				fd.Options = append(fd.Options, string(e))
			}
		case t == "string" || t == "number" || t == "integer" || t == "boolean":
			fd.Type = t
		default:
			fd.Type = "json"
		}
		switch {
		case sent != nil:
			fd.Value = sent.Get("in." + name)
		case input != nil:
			fd.Value = consoleFieldValue(fd.Type, input[name])
		}
		f.Fields = append(f.Fields, fd)
	}
	return f
}

// consoleFieldValue is a control's text for a JSON value of a field of type t.
func consoleFieldValue(t string, raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	switch t {
	case "string":
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s
		}
	case "enum", "json", "number", "integer", "boolean":
		return string(raw)
	}
	return string(raw)
}

// consoleEditInput builds the JSON object an edit form sent, field by field
// (in.NAME), as schema types them. A field left empty is left out,
// except a required string, which is sent empty; the runtime then
// validates the whole against the schema.
func consoleEditInput(schema string, form url.Values) (json.RawMessage, error) {
	names, props, required := consoleSchemaProperties(schema)
	in := map[string]json.RawMessage{}
	for _, name := range names {
		ps := props[name]
		text := form.Get("in." + name)
		t := ps.schemaType()
		if len(ps.Enum) > 0 {
			t = "enum"
		}
		if text == "" && (t != "string" || !slices.Contains(required, name)) {
			continue
		}
		var v any
		switch t {
		case "string":
			v = text
		case "integer":
			n, err := strconv.ParseInt(strings.TrimSpace(text), 10, 64)
			if err != nil {
				return nil, fmt.Errorf("field %s: %q is not a whole number", name, text)
			}
			v = n
		case "number":
			n, err := strconv.ParseFloat(strings.TrimSpace(text), 64)
			if err != nil {
				return nil, fmt.Errorf("field %s: %q is not a number", name, text)
			}
			v = n
		case "boolean":
			b, err := strconv.ParseBool(text)
			if err != nil {
				return nil, fmt.Errorf("field %s: %q is not true or false", name, text)
			}
			v = b
		default: // enum (each option is its value's JSON) or json
			if !json.Valid([]byte(text)) {
				return nil, fmt.Errorf("field %s: %q is not valid JSON", name, text)
			}
			v = json.RawMessage(text)
		}
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("field %s: %w", name, err)
		}
		in[name] = b
	}
	return json.Marshal(in)
}
