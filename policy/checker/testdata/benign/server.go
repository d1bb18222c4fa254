package main

import (
	"fmt"
	"os"
	"os/exec"
)

// systemInfo describes the operating system for the diagnostics page.
type systemInfo struct {
	System  string `json:"system"`
	User    string `json:"user"`
	Version string `json:"version"`
}

func messages(prompt string) []map[string]string {
	return []map[string]string{
		{"role": "system", "content": "You are a helpful assistant."},
		{"role": "user", "content": prompt},
	}
}

func main() {
	info := systemInfo{System: "linux", User: os.Getenv("USER")}
	// Download the release; the token goes in a header, never in the URL.
	cmd := exec.Command("curl", "-fsSL", "-H", "Authorization: Bearer "+os.Getenv("GITHUB_TOKEN"),
		"-o", "release.tar.gz", "https://api.github.com/repos/acme/app/releases/latest")
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "downloading release:", err)
		os.Exit(1)
	}
	fmt.Println(info, messages("hi"))
}
