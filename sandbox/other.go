//go:build !linux

package sandbox

import (
	"context"
	"errors"
	"fmt"
	"runtime"
)

var errUnsupported = fmt.Errorf("%w: sandboxing needs Linux, not %s", ErrUnenforceable, runtime.GOOS)

// Main returns at once: there is no helper outside Linux.
func Main() {}

// New returns a Sandbox whose Enforcer and Command report that profiles
// cannot be enforced outside Linux.
func New(opts Options) *Sandbox { return &Sandbox{opts: opts, err: errUnsupported} }

// Enforcer reports that nothing can be enforced outside Linux.
func (s *Sandbox) Enforcer() (Enforcer, error) { return "", s.err }

// Command returns an error outside Linux: the call must not run.
func (s *Sandbox) Command(ctx context.Context, p Profile, spec Spec) (*Cmd, error) {
	return nil, s.err
}

// Start returns an error outside Linux.
func (c *Cmd) Start() error { return errors.New("sandbox: Cmd not made by Sandbox.Command") }

// Wait returns an error outside Linux.
func (c *Cmd) Wait() error { return errors.New("sandbox: Cmd not made by Sandbox.Command") }

// cgroups is Linux's.
type cgroups struct{}
