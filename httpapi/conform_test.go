package httpapi_test

import (
	"bytes"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/agentrt/agentrt/apitype"
)

// This file holds every answer the tests get to the OpenAPI document:
// its status is one the operation lists, its media type the one the
// document gives, and a JSON body validates against the schema the
// document gives for it (additional properties are refused, so a field
// sent and not documented fails as a field documented and not sent
// does). An error body's words name no Go type or package.

// docOperation is an operation of the document, ready to check answers.
type docOperation struct {
	method string
	path   *regexp.Regexp
	// literal is the document's path, braces and all.
	literal string
	// responses maps a status to its media types and their schemas (nil:
	// a body not checked, such as an event stream).
	responses map[string]map[string]*jsonschema.Schema
}

// docChecker holds the committed document's operations.
type docChecker struct {
	ops     []docOperation
	problem *jsonschema.Schema
}

var loadDocChecker = sync.OnceValues(func() (*docChecker, error) {
	raw, err := os.ReadFile("openapi.json")
	if err != nil {
		return nil, err
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("parsing openapi.json: %w", err)
	}
	const base = "file:///openapi.json"
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	if err := c.AddResource(base, doc); err != nil {
		return nil, err
	}
	compile := func(ptr string) (*jsonschema.Schema, error) { return c.Compile(base + "#" + ptr) }
	d := doc.(map[string]any)
	components := d["components"].(map[string]any)
	shared := components["responses"].(map[string]any)
	dc := &docChecker{}
	if dc.problem, err = compile("/components/schemas/Problem"); err != nil {
		return nil, err
	}
	for path, ops := range d["paths"].(map[string]any) {
		// QuoteMeta escapes the braces of {name}.
		re := regexp.MustCompile("^" + regexp.MustCompile(`\\\{[A-Za-z]+\\\}`).ReplaceAllString(regexp.QuoteMeta(path), `[^/]+`) + "$")
		for method, v := range ops.(map[string]any) {
			op := docOperation{method: strings.ToUpper(method), path: re, literal: path, responses: map[string]map[string]*jsonschema.Schema{}}
			for status, rv := range v.(map[string]any)["responses"].(map[string]any) {
				r := rv.(map[string]any)
				loc := "/paths/" + escapePointer(path) + "/" + method + "/responses/" + status
				if ref, ok := r["$ref"].(string); ok {
					loc = strings.TrimPrefix(ref, "#")
					r = shared[strings.TrimPrefix(ref, "#/components/responses/")].(map[string]any)
				}
				types := map[string]*jsonschema.Schema{}
				content, _ := r["content"].(map[string]any)
				for mt, mv := range content {
					var s *jsonschema.Schema
					if mt == "application/json" || mt == apitype.ProblemContentType {
						if _, ok := mv.(map[string]any)["schema"]; !ok {
							return nil, fmt.Errorf("%s %s %s: %s has no schema", method, path, status, mt)
						}
						if s, err = compile(loc + "/content/" + escapePointer(mt) + "/schema"); err != nil {
							return nil, err
						}
					}
					types[mt] = s
				}
				op.responses[status] = types
			}
			dc.ops = append(dc.ops, op)
		}
	}
	return dc, nil
})

// escapePointer escapes a JSON pointer token, for a URL fragment.
func escapePointer(s string) string {
	s = strings.NewReplacer("~", "~0", "/", "~1").Replace(s)
	return url.PathEscape(s)
}

// goText matches words of Go rather than of the API: a qualified
// identifier (apitype.Snapshot), a pointer type, a package path, Go's
// names for its values.
var goText = regexp.MustCompile(`\b[a-z][a-z0-9]*\.[A-Z][A-Za-z0-9]*\b|\*[A-Za-z]|\bstruct\b|github\.com/|\bGo (value|struct|type)\b|\bjson: `)

// goWords returns the first words of Go in a problem body, or "".
func goWords(mediaType string, body []byte) string {
	if mediaType != apitype.ProblemContentType {
		return ""
	}
	return goText.FindString(string(body))
}

// checkAnswer fails t unless the answer to method path conforms to the
// document.
func checkAnswer(t *testing.T, method, path string, resp *http.Response, body []byte) {
	t.Helper()
	dc, err := loadDocChecker()
	if err != nil {
		t.Fatalf("loading the OpenAPI document: %v", err)
	}
	for _, p := range dc.check(method, path, resp.StatusCode, resp.Header.Get("Content-Type"), body, nil) {
		t.Error(p)
	}
}

// check lists how an answer to method path departs from the document.
// Words of Go that the request's body echo holds are the caller's, not
// the server's.
func (dc *docChecker) check(method, path string, code int, contentType string, body, echo []byte) []string {
	path, _, _ = strings.Cut(path, "?")
	status := strconv.Itoa(code)
	mt, _, _ := mime.ParseMediaType(contentType)
	lookup := method
	if method == http.MethodHead {
		lookup = http.MethodGet // net/http answers HEAD on every GET route, without the body
	}
	// A path the document names as it is (/v1/subagents/wait) is served
	// by its own operations only, never by a wildcard's of the same
	// shape (/v1/subagents/{subagentId}), as ServeMux does.
	literal := slices.ContainsFunc(dc.ops, func(o docOperation) bool { return o.literal == path })
	var op *docOperation
	for i := range dc.ops {
		if dc.ops[i].method == lookup && dc.ops[i].path.MatchString(path) && (!literal || dc.ops[i].literal == path) {
			op = &dc.ops[i]
			break
		}
	}
	var out []string
	var schema *jsonschema.Schema
	switch {
	case code == http.StatusRequestHeaderFieldsTooLarge:
		return nil // net/http's answer, before any route
	case op != nil:
		types, ok := op.responses[status]
		if !ok {
			return []string{fmt.Sprintf("%s %s answered %s, a status the document does not list: %.300s", method, path, status, body)}
		}
		if len(types) == 0 {
			return nil // no body documented
		}
		s, ok := types[mt]
		if !ok {
			s, ok = types["*/*"] // any media type: content served as stored
		}
		if !ok {
			return []string{fmt.Sprintf("%s %s answered %s as %q, a media type the document does not list for it", method, path, status, mt)}
		}
		schema = s
	case code >= 400:
		// No route (404) or not this method (405): a problem too.
		if mt != apitype.ProblemContentType {
			out = append(out, fmt.Sprintf("%s %s answered %s as %q, want %s", method, path, status, mt, apitype.ProblemContentType))
		}
		schema = dc.problem
	default:
		return []string{fmt.Sprintf("%s %s answered %s, and the document has no such operation", method, path, status)}
	}
	if m := goWords(mt, body); m != "" && !bytes.Contains(echo, []byte(m)) {
		out = append(out, fmt.Sprintf("%s %s: the error body names Go's %q: %s", method, path, m, body))
	}
	if schema == nil || len(body) == 0 {
		return out
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		return append(out, fmt.Sprintf("%s %s answered %s with a body that is no JSON: %.300s", method, path, status, body))
	}
	if err := schema.Validate(v); err != nil {
		out = append(out, fmt.Sprintf("%s %s answered %s with a body the document does not describe: %v\nbody: %.2000s", method, path, status, err, body))
	}
	return out
}

// TestDocumentCheckRefuses: the check every test's answers go through
// refuses what the document does not describe.
func TestDocumentCheckRefuses(t *testing.T) {
	t.Parallel()
	dc, err := loadDocChecker()
	if err != nil {
		t.Fatal(err)
	}
	const problem = `{"type":"urn:agentrt:problem:not_found","title":"Not found","status":404,"detail":"not found: turn x","code":"not_found"}`
	tests := []struct {
		name, method, path string
		code               int
		contentType, body  string
		want               string // in the one problem reported; empty: none
	}{
		{"documented", "GET", "/v1/requests/turn_x", 404, apitype.ProblemContentType, problem, ""},
		{"a field not documented", "POST", "/v1/turns/turn_x/promote", 200, "application/json", `{"turnId":"turn_x","promoted":true,"extra":1}`, "additional properties 'extra' not allowed"},
		{"a required field missing", "POST", "/v1/turns/turn_x/promote", 200, "application/json", `{"turnId":"turn_x"}`, "missing property 'promoted'"},
		{"a status not documented", "POST", "/v1/turns/turn_x/promote", 201, "application/json", `{}`, "a status the document does not list"},
		{"an error as plain JSON", "GET", "/v1/requests/turn_x", 404, "application/json", problem, "a media type the document does not list"},
		{"a problem of no kind", "GET", "/v1/requests/turn_x", 404, apitype.ProblemContentType, strings.Replace(problem, "not_found\"}", "missing\"}", 1), "value must be one of"},
		{"a Go type in a detail", "GET", "/v1/requests/turn_x", 404, apitype.ProblemContentType, strings.Replace(problem, "turn x", "agentrt.Turn", 1), `names Go's "agentrt.Turn"`},
		{"a Go pointer in a detail", "GET", "/v1/requests/turn_x", 404, apitype.ProblemContentType, strings.Replace(problem, "turn x", "a *Turn", 1), `names Go's "*T"`},
		{"a Go struct in a detail", "GET", "/v1/requests/turn_x", 404, apitype.ProblemContentType, strings.Replace(problem, "turn x", "into struct field", 1), `names Go's "struct"`},
		{"a package path in a detail", "GET", "/v1/requests/turn_x", 404, apitype.ProblemContentType, strings.Replace(problem, "turn x", "github.com/agentrt/agentrt/store", 1), `names Go's "github.com/"`},
		{"no route, plain JSON", "GET", "/v2/nothing", 404, "application/json", problem, "want " + apitype.ProblemContentType},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := dc.check(tt.method, tt.path, tt.code, tt.contentType, []byte(tt.body), nil)
			switch {
			case tt.want == "" && len(got) > 0:
				t.Errorf("problems %q, want none", got)
			case tt.want != "" && (len(got) != 1 || !strings.Contains(got[0], tt.want)):
				t.Errorf("problems %q, want one mentioning %q", got, tt.want)
			}
		})
	}
}
