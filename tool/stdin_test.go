package tool_test

import (
	"testing"

	"github.com/agentrt/agentrt/tool"
)

func TestUnfinishedLine(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ in, want string }{
		{"", ""},
		{"ls", "ls"},
		{"ls\n", ""},
		{"ls\nrm -r", "rm -r"},
		{"rm -r\\\n", "rm -r\\\n"},
		{"a\nrm -r\\\nf x", "rm -r\\\nf x"},
		{"echo \\\\\nrm", "rm"},
		{"\\\\\\\nx", "\\\\\\\nx"},
	} {
		if got := tool.UnfinishedLine(tt.in); got != tt.want {
			t.Errorf("UnfinishedLine(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
