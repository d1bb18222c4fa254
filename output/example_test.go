package output_test

import (
	"fmt"
	"io"
	"log"
	"os"
	"strings"

	"github.com/agentrt/agentrt/output"
)

func ExampleRedactor_String() {
	r := output.NewRedactor(output.RedactorConfig{Secrets: []string{"hunter2-db-pass"}})
	s, counts := r.String("connecting with hunter2-db-pass\nAuthorization: Bearer " + "Zx8Qm3Lr7Tp2Wn6Ks9Vb4Hd1Fg5Jc0")
	fmt.Println(s)
	fmt.Println(counts)
	// Output:
	// connecting with [REDACTED:secret_env]
	// Authorization: Bearer [REDACTED:bearer_token]
	// map[bearer_token:1 secret_env:1]
}

func ExampleStore_Sink() {
	dir, err := os.MkdirTemp("", "outputs")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	store, err := output.NewStore(dir)
	if err != nil {
		log.Fatal(err)
	}

	// A tool's output goes through the redactor into a sink.
	r := output.NewRedactor(output.RedactorConfig{})
	sink := store.Sink(output.Limits{Inline: 120})
	w := r.Writer(sink)
	fmt.Fprintln(w, "step 1: cloning with token ghp_"+"aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789")
	fmt.Fprintln(w, strings.Repeat("building…\n", 100)+"done")
	if err := w.Close(); err != nil {
		log.Fatal(err)
	}
	spill, err := sink.Close()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(spill.Bytes, spill.Spilled, w.Counts())
	lines := strings.Split(spill.Preview, "\n")
	fmt.Println(lines[0])
	fmt.Println(lines[2][:strings.Index(lines[2], ";")])
	fmt.Println(lines[len(lines)-2])

	rc, err := store.Open(spill.Ref)
	if err != nil {
		log.Fatal(err)
	}
	defer rc.Close()
	stored, _ := io.ReadAll(rc)
	fmt.Println(len(stored))
	// Output:
	// 1256 true map[github_token:1]
	// step 1: cloning with token [REDACTED:github_token]
	// [… 1137 bytes omitted
	// done
	// 1256
}
