package agentrt_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/internal/testenv"
)

const modulePath = "github.com/agentrt/agentrt"

// root names the module's root package in the graph and in messages.
const root = "agentrt"

// TestDependencyRules enforces the package dependency rules of STYLE.md §1
// and DESIGN.md §3 on the non-test imports of every package in the module.
// "May import only" rules look at direct imports: since the allowed
// packages obey their own rules, that bounds the transitive imports too.
// "Must not depend on" rules follow imports transitively and name the
// whole path.
func TestDependencyRules(t *testing.T) {
	t.Parallel()
	g, all := moduleGraph(t)
	for _, p := range []string{root, "apitype", "runtype", "event", "store", "store/memstore", "store/sqlitestore", "store/pgstore",
		"policy", "loop", "cli", "httpapi", "cmd/agentrt", "replaycase", "client", "telemetry", "telemetry/otlp",
		"evidence", "configure"} {
		if _, ok := g[p]; !ok {
			t.Errorf("package %s is gone: update the dependency rules", p)
		}
	}

	// Layers that may import only the packages below them.
	only := []struct {
		pkg     string
		allowed []string
	}{
		{"runtype", nil},
		{"event", []string{"runtype"}},
		{"store", []string{"runtype", "event"}},
		{"model", []string{"runtype"}},
		{"replaycase", []string{"runtype"}},
		// The contract is plain values over ids, statuses and events.
		{"apitype", []string{"runtype", "event"}},
		// The client speaks the API's JSON: the contract and events,
		// never the runtime (see TestClientWeight).
		{"client", []string{"apitype", "runtype", "event"}},
		{"telemetry", []string{"runtype"}},
		{"telemetry/otlp", []string{"telemetry"}},
		// The bundle format knows events and receipts, never the runtime.
		{"evidence", []string{"runtype", "event", "store"}},
		// When a schedule fires and how a delivery is signed and sent are
		// pure logic: the runtime's scheduler drives them.
		{"schedule", nil},
		{"webhook", nil},
	}
	// An internal package that imports nothing of the module (a leaf
	// helper such as internal/jsonwrite) may be imported anywhere.
	leaf := func(imp string) bool { return strings.HasPrefix(imp, "internal/") && len(g[imp]) == 0 }
	for _, r := range only {
		for _, imp := range g[r.pkg] {
			if !slices.Contains(r.allowed, imp) && !leaf(imp) {
				t.Errorf("%s imports %s: %s may import %s", r.pkg, imp, r.pkg, describe(r.allowed))
			}
		}
	}
	// Store drivers are every package under store/ but the shared test
	// suite; each may import store, runtype, event and its own subpackages,
	// and pgstore the SQL core of sqlitestore, which it runs on PostgreSQL.
	drivers := 0
	for pkg, imports := range g {
		driver, ok := driverOf(pkg)
		if !ok {
			continue
		}
		drivers++
		for _, imp := range imports {
			if imp == "store" || imp == "runtype" || imp == "event" || imp == driver || strings.HasPrefix(imp, driver+"/") || leaf(imp) ||
				(pkg == "store/pgstore" && imp == "store/sqlitestore") {
				continue
			}
			t.Errorf("%s imports %s: a store driver may import only store, runtype, event, its own subpackages and leaf internal packages", pkg, imp)
		}
	}
	if drivers < 3 {
		t.Errorf("found %d store drivers, want memstore, sqlitestore and pgstore at least", drivers)
	}
	// Model adapters are every package under model/; each speaks to its
	// provider with the provider's SDK and knows nothing of runs, stores
	// or events.
	adapters := 0
	for pkg, imports := range g {
		if !strings.HasPrefix(pkg, "model/") {
			continue
		}
		adapters++
		for _, imp := range imports {
			if imp == "model" || imp == "runtype" || imp == "internal/yamlpos" || strings.HasPrefix(imp, "model/") {
				continue
			}
			t.Errorf("%s imports %s: a model adapter may import only model, runtype and other adapters", pkg, imp)
		}
	}
	if adapters < 5 {
		t.Errorf("found %d model adapters, want replay, openaichat, openaicompat, openairesponses and anthropic", adapters)
	}

	// Packages that must not depend on others, even indirectly.
	forbidden := []struct {
		pkg    string
		denied []string // a denied package also denies its subpackages
		why    string
	}{
		{"policy", []string{"store", "loop", "execution", "config", "model"}, "policy decides on facts it is given; it never reads the store or configuration, or drives execution"},
		{"loop", []string{"httpapi", "cli", "config", root}, "the loop is below the runtime, its API and its configuration"},
		{"httpapi", []string{"cli"}, "the HTTP API does not depend on the command line"},
		{"config", []string{"model", "loop", "store", "policy", root}, "config describes agentrt.yaml; package configure turns it into providers, policy and runs"},
	}
	for _, r := range forbidden {
		for _, denied := range r.denied {
			if path := findPath(g, r.pkg, func(p string) bool { return within(p, denied) }); path != nil {
				t.Errorf("%s: %s must not depend on %s (%s)", strings.Join(path, " → "), r.pkg, denied, r.why)
			}
		}
	}
	// What the embeddable library must not link, even indirectly: the
	// model SDKs and the agentrt.yaml schema come in through configure,
	// the OTLP exporter and gRPC through telemetry/otlp, both of which
	// only cli imports.
	heavy := []struct {
		pkgs   []string
		denied []string // module paths, or import path prefixes of other modules
		why    string
	}{
		{[]string{root, "loop", "telemetry"}, []string{"telemetry/otlp", "go.opentelemetry.io/otel/exporters", "google.golang.org/grpc"},
			"the OTLP exporter lives in telemetry/otlp, which only cli imports"},
		{[]string{root, "loop"}, []string{"configure", "config", "model/openaichat", "model/openaicompat", "model/openairesponses",
			"model/anthropic", "github.com/openai/openai-go", "github.com/anthropics/anthropic-sdk-go"},
			"turning agentrt.yaml into a Config, with its model providers, is configure's, which only cli imports"},
		{[]string{root, "loop"}, []string{"store/pgstore", "github.com/jackc/pgx"},
			"the PostgreSQL store is opened by cli and given as Config.Store: embedding the library does not link pgx"},
	}
	for _, r := range heavy {
		for _, pkg := range r.pkgs {
			for _, denied := range r.denied {
				if path := findPath(all, pkg, func(p string) bool { return within(p, denied) }); path != nil {
					t.Errorf("%s: %s must not depend on %s (%s)", strings.Join(path, " → "), pkg, denied, r.why)
				}
			}
		}
	}
	// Only cli imports configure and telemetry/otlp (and only the binary
	// imports cli).
	for pkg, imports := range g {
		for _, imp := range imports {
			if (imp == "configure" || imp == "telemetry/otlp") && pkg != "cli" {
				t.Errorf("%s imports %s: only cli may", pkg, imp)
			}
		}
	}
	// Only the binary imports cli.
	for pkg := range g {
		if pkg == "cmd/agentrt" || within(pkg, "cli") {
			continue
		}
		if path := findPath(g, pkg, func(p string) bool { return within(p, "cli") }); path != nil {
			t.Errorf("%s: only cmd/agentrt may import cli", strings.Join(path, " → "))
		}
	}
	// cli drives the runtime (or, later, a daemon through client/), never
	// the store directly. It only opens a PostgreSQL store for the
	// runtime (Config.Store), so that the library does not link pgx.
	for _, imp := range g["cli"] {
		if within(imp, "store") && imp != "store/pgstore" {
			t.Errorf("cli imports %s: cli reaches the store only through the runtime", imp)
		}
	}
}

// maxClientDeps bounds the packages outside the standard library that
// importing client links, client itself included: today client,
// apitype, event and runtype. Before the contract had a package of its
// own, client linked the runtime and 348 packages with it (SQLite, CEL,
// gRPC, the model SDKs).
const maxClientDeps = 10

// TestClientWeight keeps the Go client light: everything it links
// beyond the standard library is the module's own contract packages, no
// third-party module and never the runtime, whatever path it would come
// by.
func TestClientWeight(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(testenv.GoTool(t), "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", modulePath+"/client")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.Bytes())
	}
	deps := strings.Fields(string(out))
	var foreign []string
	for _, d := range deps {
		pkg, ok := rel(d)
		switch {
		case !ok:
			foreign = append(foreign, d)
		case pkg == root:
			t.Errorf("client links the runtime (package %s): it speaks the API through apitype", modulePath)
		}
	}
	if len(foreign) > 0 {
		t.Errorf("client links %d packages outside the module and the standard library, want none: %s, …", len(foreign), strings.Join(foreign[:min(len(foreign), 5)], ", "))
	}
	if len(deps) > maxClientDeps {
		t.Errorf("client links %d packages beyond the standard library, want at most %d", len(deps), maxClientDeps)
	}
	if !slices.Contains(deps, modulePath+"/apitype") {
		t.Errorf("client does not link apitype: %v; is the list wrong?", deps)
	}
}

// moduleGraph returns, for every package of the module, its non-test
// imports within the module, both as paths relative to the module root
// (root for the root package); and, for every package outside the
// standard library that the module's packages depend on, its imports
// outside the standard library (module packages named as in the first
// graph, others by import path).
func moduleGraph(t *testing.T) (module, all map[string][]string) {
	t.Helper()
	cmd := exec.Command(testenv.GoTool(t), "list", "-e", "-deps", "-json=ImportPath,Imports,Standard,Error", "./...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.Bytes())
	}
	var pkgs []goPackage
	standard := map[string]bool{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p goPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decoding go list output: %v", err)
		}
		if p.Standard {
			standard[p.ImportPath] = true
			continue
		}
		pkgs = append(pkgs, p)
	}
	module, all = map[string][]string{}, map[string][]string{}
	name := func(importPath string) string {
		if r, ok := rel(importPath); ok {
			return r
		}
		return importPath
	}
	for _, p := range pkgs {
		pkg, inModule := rel(p.ImportPath)
		if p.Error != nil && inModule {
			t.Logf("go list: %s: %s", p.ImportPath, p.Error.Err) // another test reports broken packages
		}
		all[name(p.ImportPath)] = []string{}
		if inModule {
			module[pkg] = []string{}
		}
		for _, imp := range p.Imports {
			if standard[imp] {
				continue
			}
			all[name(p.ImportPath)] = append(all[name(p.ImportPath)], name(imp))
			if r, ok := rel(imp); ok && inModule {
				module[pkg] = append(module[pkg], r)
			}
		}
	}
	return module, all
}

// goPackage is what moduleGraph reads of go list's output.
type goPackage struct {
	ImportPath string
	Imports    []string
	Standard   bool
	Error      *struct{ Err string }
}

// rel returns importPath relative to the module, and whether it is in it.
func rel(importPath string) (string, bool) {
	if importPath == modulePath {
		return root, true
	}
	r, ok := strings.CutPrefix(importPath, modulePath+"/")
	return r, ok
}

// driverOf returns the store driver pkg belongs to, if any.
func driverOf(pkg string) (string, bool) {
	rest, ok := strings.CutPrefix(pkg, "store/")
	if !ok {
		return "", false
	}
	driver := "store/" + strings.Split(rest, "/")[0]
	if driver == "store/storetest" {
		return "", false
	}
	return driver, true
}

// within reports whether pkg is p or one of its subpackages.
func within(pkg, p string) bool {
	if p == root {
		return pkg == root
	}
	return pkg == p || strings.HasPrefix(pkg, p+"/")
}

// findPath returns the shortest import path from `from` to a package
// matching target, or nil.
func findPath(g map[string][]string, from string, target func(string) bool) []string {
	parent := map[string]string{from: ""}
	queue := []string{from}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		imports := slices.Clone(g[p])
		slices.Sort(imports) // deterministic paths
		for _, imp := range imports {
			if _, seen := parent[imp]; seen {
				continue
			}
			parent[imp] = p
			if target(imp) {
				path := []string{imp}
				for q := p; q != ""; q = parent[q] {
					path = append(path, q)
				}
				slices.Reverse(path)
				return path
			}
			queue = append(queue, imp)
		}
	}
	return nil
}

// TestFindPath checks the transitive search behind the "must not depend
// on" rules, which the real graph, obeying them, never exercises.
func TestFindPath(t *testing.T) {
	t.Parallel()
	g := map[string][]string{
		"policy":  {"runtype", "tool"},
		"tool":    {"runtype", "loop"},
		"loop":    {"store/memstore", "event"},
		"runtype": {},
	}
	tests := []struct {
		from, target string
		want         []string
	}{
		{"policy", "store", []string{"policy", "tool", "loop", "store/memstore"}},
		{"policy", "loop", []string{"policy", "tool", "loop"}},
		{"policy", "httpapi", nil},
		{"runtype", "store", nil},
		{"loop", root, nil},
	}
	for _, tt := range tests {
		got := findPath(g, tt.from, func(p string) bool { return within(p, tt.target) })
		if !slices.Equal(got, tt.want) {
			t.Errorf("findPath(%s → %s) = %v, want %v", tt.from, tt.target, got, tt.want)
		}
	}
}

func describe(allowed []string) string {
	if len(allowed) == 0 {
		return "no other agentrt package"
	}
	return "only " + strings.Join(allowed, " and ")
}
