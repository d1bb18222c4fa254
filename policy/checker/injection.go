package checker

import (
	"context"
	"regexp"
	"strings"

	"github.com/agentrt/agentrt/output"
	"github.com/agentrt/agentrt/policy"
)

// PromptInjection is the builtin checker "prompt_injection". It flags
// text that addresses the model rather than the user: instruction
// overrides, chat-template and turn markers, requests to hide things from
// the user or to leak the system prompt, and exfiltration requests. The
// reason code is prompt_injection. It is meant for tool output
// (PhaseOutput); on PhaseInput it scans the raw input JSON the same way.
// See the package documentation for what it catches.
type PromptInjection struct{}

// Check implements policy.Checker.
func (p PromptInjection) Check(ctx context.Context, in *policy.CheckInput) (policy.CheckResult, error) {
	return check(ctx, in, p.Find, func(string) string { return ReasonPromptInjection }, "text aimed at the model")
}

// Find returns the injection attempts in text, sorted and non-overlapping
// (overlapping matches are united under the kind of the first).
func (PromptInjection) Find(text string) []policy.Finding {
	return findInjections(text)
}

// Prompt injection kinds.
const (
	kindInstructionOverride = "instruction_override"
	kindRoleMarker          = "role_marker"
	kindConcealment         = "concealment"
	kindPromptLeak          = "prompt_leak"
	kindExfiltration        = "exfiltration"
)

// injectionWindow bounds how far past its trigger a pattern may match.
const injectionWindow = 1024

// injectionRule finds one family of phrases. Its triggers are looked for,
// in the ASCII-lowercased text, at the start of every word (and, for
// triggers that start with punctuation, at every byte). At a trigger, the
// cheap tests below must pass, then re (anchored, lowercase, spelling
// whitespace \s+) must match the text from there, or fn, when set,
// decides instead.
type injectionRule struct {
	kind     string
	triggers []string
	re       *regexp.Regexp
	// lineStart: the hit must start a line, after blanks and, when
	// markup is set, Markdown or bracket decoration.
	lineStart, markup bool
	// negatable: a "never", "not" or "n't" just before the hit vetoes it.
	negatable bool
	// titleCase: the hit starts with an upper case letter in the text.
	titleCase bool
	// next, when set, are the starts of the words that may follow the
	// trigger, and needs are words one of which every match holds: cheap
	// tests that spare most hits the regular expression.
	next, needs []string
	// fn, when set, matches at hit in lower and returns the finding's
	// bounds, or ok false.
	fn func(lower string, hit int) (start, end int, ok bool)
}

const (
	// adjectives that point back at the instructions a model was given.
	priorAdj = `(?:previous|prior|above|preceding|earlier|original|initial|system|developer)`
	// nouns for those instructions.
	instrNoun = `(?:instructions?|prompts?|system\s+prompt|directions|directives|guidelines|rules|context|programming)`
)

var injectionRules = []injectionRule{
	{
		kind:     kindInstructionOverride,
		triggers: []string{"ignore", "disregard", "forget"},
		next: []string{"all", "any", "every", "of", "the", "your", "my", "these", "those", "previous", "prior", "above",
			"preceding", "earlier", "original", "initial", "system", "developer", "instruction", "direction", "prompt"},
		needs: []string{"instruction", "prompt", "rule", "direct", "guideline", "context", "programming", "everything"},
		re: regexp.MustCompile(`^(?:ignore|disregard|forget)\s+(?:` +
			// ignore all (of the) previous instructions; ignore your prior rules
			`(?:(?:all|any|every)\s+)?(?:(?:of\s+)?(?:the|your|my|these|those)\s+)?(?:` + priorAdj + `\s+)+` + instrNoun +
			// ignore your instructions; ignore all instructions
			`|(?:your|all(?:\s+(?:of\s+)?(?:the|your))?)\s+` + `(?:instructions?|prompts?|system\s+prompt|directives|guidelines|programming)` +
			// ignore the instructions above
			`|(?:all\s+)?(?:(?:of\s+)?the\s+)?(?:instructions|directions|prompts?)\s+(?:above|before\s+this|(?:given\s+)?(?:above|earlier|previously)|you\s+(?:were|have\s+been)\s+given)` +
			// forget everything above
			`|everything\s+(?:above|before|you\s+(?:were|have\s+been)\s+told|(?:i|we)\s+(?:said|told\s+you))` +
			`)\b`),
	},
	{
		kind:     kindInstructionOverride,
		triggers: []string{"you"},
		next:     []string{"are"},
		re: regexp.MustCompile(`^you\s+are\s+now\s+(?:` +
			`(?:an?\s+|the\s+)?(?:dan|jailbroken|unrestricted|unfiltered|uncensored|unbound)\b` +
			`|free\s+(?:of|from)\s+(?:all\s+|any\s+|your\s+)?(?:rules|restrictions|guidelines|constraints|filters)` +
			`|no\s+longer\s+(?:bound|restricted|limited|an?\s+(?:ai|assistant|language\s+model))` +
			`|in\s+(?:developer|dan|god|jailbreak|jailbroken|unrestricted|unfiltered|evil)\s+mode` +
			`|acting\s+as\b` +
			`|going\s+to\s+(?:act|pretend|ignore|roleplay)\b` +
			`|(?:an?\s+)?(?:different|new|evil|rogue|unrestricted)\s+(?:ai|assistant|model|persona|chatbot)\b` +
			`)`),
	},
	{
		kind:     kindInstructionOverride,
		triggers: []string{"new", "updated", "revised"},
		next:     []string{"system", "instruction"},
		re:       regexp.MustCompile(`^(?:new|updated|revised)\s+(?:system\s+)?instructions?\s*:`),
	},
	{
		kind:      kindRoleMarker,
		triggers:  []string{"system", "developer"},
		re:        regexp.MustCompile(`^(?:system|developer)\s+(?:prompt|message|instructions?)\s*:`),
		lineStart: true,
		markup:    true,
	},
	{
		kind:      kindRoleMarker,
		triggers:  []string{"##"},
		re:        regexp.MustCompile(`^#{2,6}\s*(?:system|instructions?|human|user|assistant|response)\s*:`),
		lineStart: true,
	},
	{
		kind:      kindRoleMarker,
		triggers:  []string{"human", "assistant"},
		re:        regexp.MustCompile(`^(?:human|assistant)[ \t]*:`),
		lineStart: true,
		titleCase: true, // not YAML's assistant: on
	},
	{
		kind:     kindRoleMarker,
		triggers: []string{"<|", "[inst]", "[/inst]", "<<sys>>", "<</sys>>", "<start_of_turn>", "<end_of_turn>"},
		re: regexp.MustCompile(`^(?:<\|(?:im_start|im_end|im_sep|system|user|assistant|endoftext|begin_of_text|end_of_text|` +
			`start_header_id|end_header_id|eot_id|eom_id|start|end|channel|message)\|>` +
			`|\[/?inst\]|<</?sys>>|<(?:start|end)_of_turn>)`),
	},
	{
		kind:     kindRoleMarker,
		triggers: []string{"<tool_", "</tool_", "<function_", "</function_", "<system", "</system"},
		re: regexp.MustCompile(`^</?(?:tool_(?:results?|output|response|calls?|use)|function_(?:results?|calls?)|` +
			`system[-_](?:reminder|prompt|message|instructions?))(?:\s[^<>]{0,200})?>`),
	},
	{
		kind:     kindConcealment,
		triggers: []string{"do", "never", "without", "keep", "hide"},
		next: []string{"not", "tell", "inform", "notify", "alert", "warn", "let", "reveal", "mention", "show",
			"this", "it"},
		needs: []string{"user", "human", "operator"},
		re: regexp.MustCompile(`^(?:` +
			`(?:do\s+not|don(?:'|’)?t|never)\s+(?:tell|inform|notify|alert|warn|let|(?:reveal|mention|show)\s+(?:this|it|anything)\s+to)\s+(?:the\s+)?(?:user|human|operator)\b` +
			`|without\s+(?:telling|informing)\s+(?:the\s+)?(?:user|human|operator)\b` +
			`|(?:keep|hide)\s+(?:this|it)\s+(?:(?:secret|hidden)\s+)?from\s+(?:the\s+)?(?:user|human|operator)\b` +
			`)`),
	},
	{
		kind:      kindPromptLeak,
		triggers:  []string{"reveal", "print", "output", "repeat", "show", "display", "leak", "dump", "tell"},
		next:      []string{"me", "us", "your"},
		re:        regexp.MustCompile(`^(?:reveal|print|output|repeat|show|display|leak|dump|tell\s+me)\s+(?:me\s+|us\s+)?your\s+(?:(?:full|entire|complete|original|initial|hidden|secret|exact)\s+)*(?:system\s+prompt|system\s+message|(?:initial\s+|hidden\s+)?instructions)\b`),
		negatable: true,
	},
	{
		kind:     kindExfiltration,
		triggers: []string{"send", "post", "upload", "forward", "email", "e-mail", "transmit", "exfiltrate", "leak", "share", "submit"},
		needs:    []string{"key", "pass", "credential", "secret", "cookie", "env", "prompt", "conversation", "history"},
		re: regexp.MustCompile(`^(?:send|post|upload|forward|e-?mail|transmit|exfiltrate|leak|share|submit)\s+` +
			`(?:(?:the|your|all|any|my|its|their|these|those|this)\s+)?(?:(?:user'?s?|full|entire|complete|current|stored|saved|openai|anthropic|aws|github|gcp|azure|secret|private|api|admin|root|login|database|db|ssh)\s+)*` +
			`(?:api[\s_-]?keys?|keys|passwords?|passwd|credentials?|secrets?|private\s+keys?|ssh\s+keys?|session\s+(?:tokens?|cookies?)|cookies|env(?:ironment)?\s+variables|\.env(?:\s+file)?|system\s+prompt|conversation(?:\s+history)?|chat\s+history)\s+` +
			`(?:to|at|via|into)\s+(?:https?://[^\s"'<>()]*|[a-z0-9._%+-]+@[a-z0-9-]+(?:\.[a-z0-9-]+)+|(?:me|us)\b|(?:this|the\s+following|my|our|the\s+below)\s+(?:url|link|address|endpoint|server|webhook|email|site|domain)\b|[a-z0-9-]+(?:\.[a-z0-9-]+)*\.[a-z]{2,}(?:[/:\s.,;!?)"']|$))`),
		negatable: true,
	},
	{
		kind:     kindExfiltration,
		triggers: []string{"curl", "wget"},
		fn:       matchShellExfiltration,
	},
}

type ruleTrigger struct {
	rule    *injectionRule
	trigger string
}

// triggersByFirst indexes the triggers of injectionRules by their first
// byte.
var triggersByFirst = func() *[256][]ruleTrigger {
	var idx [256][]ruleTrigger
	for i := range injectionRules {
		r := &injectionRules[i]
		for _, t := range r.triggers {
			idx[t[0]] = append(idx[t[0]], ruleTrigger{r, t})
		}
	}
	return &idx
}()

// findInjections runs every rule over text in one pass: at each word,
// and at each punctuation byte that starts a trigger, it tries the rules
// whose trigger is there.
func findInjections(text string) []policy.Finding {
	lower := asciiLower(text)
	var found []policy.Finding
	shellLineEnd := -1 // the end of the last line the shell rule read
	for i := 0; i < len(lower); {
		c := lower[i]
		next := i + 1
		switch {
		case wordBytes[c]:
			next = span(lower, i+1, wordBytes)
		case c == '\\':
			next = output.SkipEscape(lower, i) // \nHuman: starts a word at H
		}
		for _, rt := range triggersByFirst[c] {
			if !strings.HasPrefix(lower[i:], rt.trigger) {
				continue
			}
			if rt.rule.fn != nil {
				if i < shellLineEnd {
					continue // one verdict per line
				}
				_, shellLineEnd = lineBounds(lower, i)
			}
			if start, end, ok := rt.rule.matchAt(text, lower, i); ok {
				found = append(found, policy.Finding{Kind: rt.rule.kind, Start: start, End: end})
			}
		}
		i = next
	}
	return mergeFindings(found)
}

func (r *injectionRule) matchAt(text, lower string, hit int) (start, end int, ok bool) {
	if r.titleCase && !('A' <= text[hit] && text[hit] <= 'Z') {
		return 0, 0, false
	}
	if r.lineStart && !atLineStart(lower, hit, r.markup) {
		return 0, 0, false
	}
	window := lower[hit:min(len(lower), hit+injectionWindow)]
	if len(r.next) > 0 && !nextWordIn(window, r.next) {
		return 0, 0, false
	}
	if len(r.needs) > 0 && !containsAny(window, r.needs) {
		return 0, 0, false
	}
	if r.negatable && negated(lower, hit) {
		return 0, 0, false
	}
	if r.fn != nil {
		return r.fn(lower, hit)
	}
	m := r.re.FindStringIndex(window)
	if m == nil {
		return 0, 0, false
	}
	return hit, hit + m[1], true
}

// nextWordIn reports whether the word after the first one of s starts
// with one of prefixes.
func nextWordIn(s string, prefixes []string) bool {
	j := 0
	for j < len(s) && !isSpace(s[j]) {
		j++
	}
	for j < len(s) && isSpace(s[j]) {
		j++
	}
	for _, p := range prefixes {
		if strings.HasPrefix(s[j:], p) {
			return true
		}
	}
	return false
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

// asciiLower lowercases ASCII letters only, so byte offsets into the
// result are offsets into s.
func asciiLower(s string) string {
	i := 0
	for i < len(s) && !('A' <= s[i] && s[i] <= 'Z') {
		i++
	}
	if i == len(s) {
		return s
	}
	b := []byte(s)
	for ; i < len(b); i++ {
		if c := b[i]; 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// atLineStart reports whether only blanks (and, with markup, Markdown or
// bracket decoration such as "# ", "> ", "**", "[") stand between the
// start of a line and s[i]. An escaped \n, as in raw JSON, ends a line
// too.
func atLineStart(s string, i int, markup bool) bool {
	for j := i - 1; j >= 0; j-- {
		if i-j > 64 {
			return false
		}
		switch c := s[j]; {
		case c == '\n' || c == '\r':
			return true
		case (c == 'n' || c == 'r') && j > 0 && s[j-1] == '\\':
			return true
		case c == ' ' || c == '\t':
		case markup && strings.IndexByte("#*>-_[(<|`", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// negated reports whether the words just before s[i] negate it: "never
// send your password to …" is advice, not a request.
func negated(s string, i int) bool {
	before := strings.TrimRight(s[max(0, i-24):i], " \t\r\n,")
	for _, neg := range []string{"never", "not", "n't", "n’t", "dont", "do no"} {
		if strings.HasSuffix(before, neg) {
			return true
		}
	}
	return false
}

var (
	// credentialFile matches paths and names of credential stores.
	credentialFile = regexp.MustCompile(`\.ssh/|\bid_(?:rsa|dsa|ecdsa|ed25519)\b|\.aws/credentials|\.netrc\b|\.git-credentials|` +
		`\.npmrc\b|\.pypirc\b|\.docker/config\.json|\.kube/config|/etc/(?:passwd|shadow)\b|(?:^|[\s@'"=/(])\.env\b`)
	// sendsData matches the ways a shell line hands data to curl or wget:
	// uploads, form and data arguments, command substitution and pipes.
	sendsData = regexp.MustCompile(`(?:^|\s)(?:-d|-f|-t|--data(?:-binary|-raw|-urlencode)?|--form|--upload-file|--post-file|--post-data|--body-file)(?:[\s=]|$)|@|\$\(|` + "`" + `|\|`)
	// dumpsEnv matches the whole environment piped or substituted into a
	// request.
	dumpsEnv = regexp.MustCompile(`(?:^|[\s;&(])(?:env|printenv|set)\s*\|\s*(?:curl|wget)\b|\$\(\s*(?:env|printenv)\s*\)|` + "`" + `\s*(?:env|printenv)\s*` + "`")
)

// credentialHints are substrings of every match of credentialFile and
// dumpsEnv, tested first because the regular expressions are slow.
var credentialHints = []string{".ssh/", "id_", ".aws/", ".netrc", ".git-credentials", ".npmrc", ".pypirc",
	".docker/", ".kube/", "/etc/", ".env", "env", "set"}

func containsAny(s string, substrs []string) bool {
	for _, x := range substrs {
		if strings.Contains(s, x) {
			return true
		}
	}
	return false
}

// matchShellExfiltration flags a shell line with curl or wget at hit that
// sends a credential file or the environment somewhere. The finding is
// the line, trimmed.
func matchShellExfiltration(lower string, hit int) (start, end int, ok bool) {
	ls, le := lineBounds(lower, hit)
	line := lower[ls:le]
	// Every credential file and environment dump names one of these.
	if !containsAny(line, credentialHints) {
		return 0, 0, false
	}
	if !dumpsEnv.MatchString(line) && !(credentialFile.MatchString(line) && sendsData.MatchString(line)) {
		return 0, 0, false
	}
	for ls < le && (lower[ls] == ' ' || lower[ls] == '\t') {
		ls++
	}
	for le > ls && (lower[le-1] == ' ' || lower[le-1] == '\t' || lower[le-1] == '\r') {
		le--
	}
	return ls, le, true
}

// lineBounds returns the line around s[i], at most injectionWindow bytes
// either side. Escaped newlines (\n in raw JSON) end lines too.
func lineBounds(s string, i int) (start, end int) {
	start = i
	for start > 0 && i-start < injectionWindow && s[start-1] != '\n' && !(s[start-1] == 'n' && start > 1 && s[start-2] == '\\') {
		start--
	}
	end = i
	for end < len(s) && end-i < injectionWindow && s[end] != '\n' && !(s[end] == '\\' && end+1 < len(s) && s[end+1] == 'n') {
		end++
	}
	return start, end
}
