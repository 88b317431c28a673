package conformance

import (
	"strings"
	"testing"
)

// A child's failure excerpt starts at the innermost failed test's RUN line,
// so the log lines that say why it failed are in it.
func TestExcerptFindsTheFailure(t *testing.T) {
	var b strings.Builder
	b.WriteString("=== RUN   TestC\n=== RUN   TestC/race\n")
	for i := range 30 {
		b.WriteString("=== RUN   TestC/race/" + string(rune('a'+i%26)) + string(rune('a'+i/26)) + "\n")
		if i == 17 {
			b.WriteString("    closerace.go:84: Put racing Close: boom\n")
		}
	}
	b.WriteString("--- FAIL: TestC (1.00s)\n    --- FAIL: TestC/race (1.00s)\n        --- FAIL: TestC/race/ra (0.10s)\nFAIL\n")
	got := excerpt(b.String())
	if !strings.HasPrefix(got, "=== RUN   TestC/race/ra\n") || !strings.Contains(got, "boom") {
		t.Fatalf("excerpt:\n%s", got)
	}
	if got := excerpt("line\npanic: bad\nstack\n"); !strings.HasPrefix(got, "panic: bad") {
		t.Fatalf("panic excerpt: %q", got)
	}
	if got := excerpt("a\nb\n"); got != "a\nb" {
		t.Fatalf("plain excerpt: %q", got)
	}
}
