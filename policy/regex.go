package policy

import (
	"regexp"
	"regexp/syntax"
	"strings"
	"unicode/utf8"

	"cel.dev/cel-go/common/overloads"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/interpreter"
)

// matchesOptimizations compile a when expression's constant regular
// expressions once, as cel-go's own optimization does, and add a literal
// prefilter: a pattern that must match some literal text (password in
// (?i)password\s*=) does not match a text that lacks it, which is found
// much faster than Go's regexp finds that no position matches (it has no
// such shortcut for case-insensitive patterns). The result is
// regexp.MatchString's in every case. They are keyed by overload, which
// cel-go prefers to the function-keyed optimization OptOptimize adds.
var matchesOptimizations = []*interpreter.RegexOptimization{
	{Function: overloads.Matches, OverloadID: overloads.Matches, RegexIndex: 1, Factory: matchesFactory},
	{Function: overloads.Matches, OverloadID: overloads.MatchesString, RegexIndex: 1, Factory: matchesFactory},
}

func matchesFactory(call interpreter.InterpretableCall, pattern string) (interpreter.InterpretableCall, error) {
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, err
	}
	pre := requiredLiteral(pattern)
	return interpreter.NewCall(call.ID(), call.Function(), call.OverloadID(), call.Args(), func(values ...ref.Val) ref.Val {
		if len(values) != 2 {
			return types.NoSuchOverloadErr()
		}
		in, ok := values[0].Value().(string)
		if !ok {
			return types.NoSuchOverloadErr()
		}
		if pre.absent(in) {
			return types.False
		}
		return types.Bool(re.MatchString(in))
	}), nil
}

// literal is text every match of a pattern contains; fold: compared
// ignoring case. The zero literal rules nothing out.
type literal struct {
	text string
	fold bool
}

// requiredLiteral finds the longest literal that is a part of the
// pattern's top-level concatenation (or the whole pattern): any match
// contains it. A case-insensitive literal is kept only when it is ASCII.
func requiredLiteral(pattern string) literal {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return literal{}
	}
	re = unwrapCapture(re.Simplify())
	parts := []*syntax.Regexp{re}
	if re.Op == syntax.OpConcat {
		parts = re.Sub
	}
	var best literal
	for _, p := range parts {
		p = unwrapCapture(p)
		if p.Op != syntax.OpLiteral {
			continue
		}
		lit := literal{text: string(p.Rune), fold: p.Flags&syntax.FoldCase != 0}
		if lit.fold && !isASCII(lit.text) {
			continue
		}
		if len(lit.text) > len(best.text) {
			best = lit
		}
	}
	return best
}

func unwrapCapture(re *syntax.Regexp) *syntax.Regexp {
	for re.Op == syntax.OpCapture && len(re.Sub) == 1 {
		re = re.Sub[0]
	}
	return re
}

// absent reports whether s certainly lacks the literal. A
// case-insensitive literal is looked for only in ASCII text: elsewhere,
// Unicode case folding (K and the Kelvin sign) is left to the regexp.
func (l literal) absent(s string) bool {
	switch {
	case l.text == "":
		return false
	case !l.fold:
		return !strings.Contains(s, l.text)
	case !isASCII(s):
		return false
	}
	return !containsFoldASCII(s, l.text)
}

// containsFoldASCII reports whether s contains sub ignoring ASCII case;
// both are ASCII.
func containsFoldASCII(s, sub string) bool {
	first := lowerASCII(sub[0])
	for i := 0; i+len(sub) <= len(s); i++ {
		if lowerASCII(s[i]) == first && strings.EqualFold(s[i:i+len(sub)], sub) {
			return true
		}
	}
	return false
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}
