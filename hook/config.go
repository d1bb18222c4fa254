package hook

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"
)

// FailMode says what a hook's own failure (a crash, a timeout, output
// that cannot be read) means for the run.
type FailMode string

// The fail modes.
const (
	// FailOpen ignores a failed hook: the run goes on as if it had not run.
	FailOpen FailMode = "fail_open"
	// FailClosed treats a failed hook as one that blocked.
	FailClosed FailMode = "fail_closed"
)

// DefaultTimeout bounds a hook run whose Config has no Timeout, as Claude
// Code's default does.
const DefaultTimeout = 60 * time.Second

// Config describes one hook.
type Config struct {
	// Name identifies the hook in reports and reasons; it must be unique.
	// It defaults to the point and the hook's index in the list given to
	// New, such as "pre_tool_use-2".
	Name  string
	Point Point
	// Matcher selects, at a tool point, the tools the hook runs for: a
	// regular expression that must match the whole tool name, so that
	// "Write|Edit" matches those two tools and "mcp__.*" every MCP tool.
	// "" and "*" match every tool. It must be empty at other points.
	Matcher string
	// Command is a shell command line, run with /bin/sh -c (handler
	// "command"). Exactly one of Command and URL is set.
	Command string
	// URL is an http or https endpoint the hook input is POSTed to
	// (handler "http").
	URL string
	// Headers are added to an HTTP hook's request. Values may use $VAR or
	// ${VAR}, expanded from Env only; an unset variable is empty.
	Headers map[string]string
	// Timeout bounds one run of the hook; zero means DefaultTimeout.
	Timeout time.Duration
	// FailMode defaults to fail_closed at the guarding points
	// (pre_tool_use, permission_request, user_prompt_submit, stop) and to
	// fail_open at the others.
	FailMode FailMode
	// Env holds extra environment variables for a command, and the
	// variables header values may use.
	Env map[string]string
}

// Options configure a Runner.
type Options struct {
	// Dir is the working directory of command hooks, and the input's cwd,
	// when Input.Cwd is empty. When both are empty it is the daemon's.
	Dir string
	// HTTPClient sends HTTP hooks' requests. When nil, a client that
	// does not follow redirects is used: a redirected POST would lose its
	// body.
	HTTPClient *http.Client
	// Now is the clock for reports' durations; nil means time.Now.
	Now func() time.Time
}

// Runner runs the configured hooks. It is immutable after New and safe
// for concurrent use; every Run starts fresh processes and requests.
type Runner struct {
	byPoint map[Point][]*hook
	dir     string
	client  *http.Client
	now     func() time.Time
}

// hook is a validated Config.
type hook struct {
	name     string
	point    Point
	matcher  *regexp.Regexp // nil: every tool
	command  string
	url      string
	headers  map[string]string
	timeout  time.Duration
	failMode FailMode
	env      []string // KEY=value, sorted by key
	envMap   map[string]string
}

func (h *hook) handler() string {
	if h.url != "" {
		return handlerHTTP
	}
	return handlerCommand
}

// matches reports whether h runs for a call of toolName at its point.
func (h *hook) matches(toolName string) bool {
	return h.matcher == nil || !h.point.toolPoint() || h.matcher.MatchString(toolName)
}

const (
	handlerCommand = "command"
	handlerHTTP    = "http"
)

// New validates hooks and returns a Runner for them. Hooks at one point
// run in the order they have in hooks.
func New(hooks []Config, opts Options) (*Runner, error) {
	r := &Runner{
		byPoint: make(map[Point][]*hook),
		dir:     opts.Dir,
		client:  opts.HTTPClient,
		now:     opts.Now,
	}
	if r.client == nil {
		r.client = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		}}
	}
	if r.now == nil {
		r.now = time.Now
	}
	names := make(map[string]int, len(hooks))
	for i := range hooks {
		h, err := newHook(i, &hooks[i])
		if err != nil {
			return nil, err
		}
		if j, dup := names[h.name]; dup {
			return nil, fmt.Errorf("hook %d: duplicate name %q (also hook %d)", i, h.name, j)
		}
		names[h.name] = i
		r.byPoint[h.point] = append(r.byPoint[h.point], h)
	}
	return r, nil
}

// newHook validates the i-th hook config and applies its defaults.
func newHook(i int, c *Config) (*hook, error) {
	label := fmt.Sprintf("hook %d", i)
	if c.Name != "" {
		label = fmt.Sprintf("hook %q", c.Name)
	}
	if err := c.validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", label, err)
	}
	h := &hook{
		name:     c.Name,
		point:    c.Point,
		command:  c.Command,
		url:      c.URL,
		headers:  maps.Clone(c.Headers),
		timeout:  c.Timeout,
		failMode: c.FailMode,
		envMap:   maps.Clone(c.Env),
	}
	if h.name == "" {
		h.name = fmt.Sprintf("%s-%d", c.Point, i)
	}
	if h.timeout == 0 {
		h.timeout = DefaultTimeout
	}
	if h.failMode == "" {
		h.failMode = c.Point.defaultFailMode()
	}
	if c.Matcher != "" && c.Matcher != "*" {
		// validate compiled it already; anchoring cannot break it.
		h.matcher = regexp.MustCompile(`^(?:` + c.Matcher + `)$`)
	}
	for _, k := range slices.Sorted(maps.Keys(c.Env)) {
		h.env = append(h.env, k+"="+c.Env[k])
	}
	return h, nil
}

func (c *Config) validate() error {
	if !c.Point.valid() {
		return fmt.Errorf("unknown point %q (want one of %s)", c.Point, pointList())
	}
	if c.Matcher != "" && c.Matcher != "*" {
		if !c.Point.toolPoint() {
			return fmt.Errorf("matcher %q set at point %s: only tool points (pre_tool_use, permission_request, post_tool_use, post_tool_failure) match tool names", c.Matcher, c.Point)
		}
		if _, err := regexp.Compile(`^(?:` + c.Matcher + `)$`); err != nil {
			return fmt.Errorf("invalid matcher %q: %w", c.Matcher, err)
		}
	}
	switch {
	case c.Command == "" && c.URL == "":
		return errors.New("neither command nor url is set; set one")
	case c.Command != "" && c.URL != "":
		return errors.New("both command and url are set; set one")
	case c.URL != "":
		u, err := url.Parse(c.URL)
		if err != nil {
			return fmt.Errorf("invalid url: %w", err)
		}
		if u.Scheme != "http" && u.Scheme != "https" {
			return fmt.Errorf("url %q is not http or https", c.URL)
		}
		if u.Host == "" {
			return fmt.Errorf("url %q has no host", c.URL)
		}
	case strings.Contains(c.Command, "\x00"):
		return errors.New("command contains a NUL byte")
	}
	if len(c.Headers) > 0 && c.URL == "" {
		return errors.New("headers are set on a command hook; they apply to url hooks only")
	}
	for k, v := range c.Headers {
		if !validHeaderName(k) {
			return fmt.Errorf("invalid header name %q", k)
		}
		if strings.ContainsAny(v, "\r\n\x00") {
			return fmt.Errorf("header %s: value contains a line break or NUL", k)
		}
	}
	if c.Timeout < 0 {
		return fmt.Errorf("negative timeout %v", c.Timeout)
	}
	switch c.FailMode {
	case "", FailOpen, FailClosed:
	default:
		return fmt.Errorf("unknown fail mode %q (want %s or %s)", c.FailMode, FailOpen, FailClosed)
	}
	for k, v := range c.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.Contains(v, "\x00") {
			return fmt.Errorf("invalid environment variable %q", k)
		}
	}
	return nil
}

// validHeaderName reports whether s is an HTTP token (RFC 9110 §5.6.2).
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
		if !ok {
			return false
		}
	}
	return true
}

func pointList() string {
	names := make([]string, len(points))
	for i, p := range points {
		names[i] = string(p.point)
	}
	return strings.Join(names, ", ")
}

// Has reports whether a Run at p for toolName would run any hook. It
// does no I/O, so callers can skip building an Input. toolName is ignored
// at points that are not about a tool call.
func (r *Runner) Has(p Point, toolName string) bool {
	return slices.ContainsFunc(r.byPoint[p], func(h *hook) bool { return h.matches(toolName) })
}
