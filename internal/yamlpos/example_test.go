package yamlpos_test

import (
	"fmt"

	"github.com/agentrt/agentrt/internal/yamlpos"
)

func Example() {
	src := "base: &base {type: object}\n" +
		"schema:\n" +
		"  <<: *base\n" +
		"  required: [id]\n" +
		"extra: *missing\n"
	// The reader of the file words the problems.
	report := func(p yamlpos.Problem) {
		if p.Kind == yamlpos.UnknownAlias {
			fmt.Printf("%d:%d: unknown alias *%s\n", p.Pos.Line, p.Pos.Column, p.Name)
		}
	}
	doc, _, err := yamlpos.Parse([]byte(src), yamlpos.Options{Report: report})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, f := range doc.Root().Fields() {
		v := f.Value() // resolving extra reports its alias
		if f.Key != "schema" {
			continue
		}
		for _, sf := range v.Fields() {
			fmt.Printf("%s at %d:%d\n", sf.Key, sf.KeyPos.Line, sf.KeyPos.Column)
		}
		b, _ := v.JSON(yamlpos.JSONOptions{})
		fmt.Println(string(b))
	}
	// Output:
	// type at 1:14
	// required at 4:3
	// {"type":"object","required":["id"]}
	// 5:8: unknown alias *missing
}
