package yamlpos

import (
	"fmt"
	"testing"
)

// testBundle holds a parsed document and the problems it reports, each as
// "line:column message".
type testBundle struct {
	doc      *Doc
	problems []string
}

// setup parses src, which must hold one document.
func setup(t *testing.T, src string, opts Options) *testBundle {
	t.Helper()
	b := &testBundle{}
	opts.Report = func(p Problem) {
		b.problems = append(b.problems, fmt.Sprintf("%d:%d %s", p.Pos.Line, p.Pos.Column, p.Message))
	}
	doc, next, err := Parse([]byte(src), opts)
	if err != nil || doc == nil || next != (Pos{}) {
		t.Fatalf("Parse(%q) = %v, %v, %v; want one document", src, doc, next, err)
	}
	b.doc = doc
	return b
}

// field returns the value of the root mapping's key.
func (b *testBundle) field(t *testing.T, key string) *Value {
	t.Helper()
	for _, f := range b.doc.Root().Fields() {
		if f.Key == key {
			return f.Value()
		}
	}
	t.Fatalf("no key %q", key)
	return nil
}

// keys returns a mapping's keys with their positions, as "key@line:column".
func keys(v *Value) []string {
	var out []string
	for _, f := range v.Fields() {
		out = append(out, fmt.Sprintf("%s@%d:%d", f.Key, f.KeyPos.Line, f.KeyPos.Column))
	}
	return out
}
