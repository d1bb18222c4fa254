package config

import (
	"errors"
	"io/fs"
	"math"
	"net"
	"os"
	"runtime"
	"strconv"
	"time"

	"github.com/goccy/go-yaml/ast"
)

// isNull reports whether n (resolved) is null.
func isNull(n ast.Node) bool {
	_, ok := n.(*ast.NullNode)
	return ok
}

// mapping resolves e's value as a mapping. Null counts as absent.
func (d *decoder) mapping(e entry, label string) (ast.Node, status) {
	v := d.resolve(e.value)
	switch {
	case v == nil:
		return nil, valBad
	case isNull(v):
		return nil, valNull
	case !isMapping(v):
		d.errorf(e.value, "%s must be a mapping, got %s", label, describe(v))
		return nil, valBad
	}
	return v, valOK
}

// str decodes e's value as a string. Any scalar is accepted as its text,
// so "tools: [sleep, 5]" and "REGION: 1" work; null counts as absent.
func (d *decoder) str(e entry, label string) (string, status) {
	v := d.resolve(e.value)
	switch {
	case v == nil:
		return "", valBad
	case isNull(v):
		return "", valNull
	}
	s, ok := scalarText(v)
	if !ok {
		d.errorf(e.value, "%s must be a string, got %s", label, describe(v))
		return "", valBad
	}
	return s, valOK
}

// boolean decodes e's value as true or false; null counts as absent.
func (d *decoder) boolean(e entry, label string) (bool, status) {
	v := d.resolve(e.value)
	switch b := v.(type) {
	case nil:
		return false, valBad
	case *ast.NullNode:
		return false, valNull
	case *ast.BoolNode:
		return b.Value, valOK
	}
	d.errorf(e.value, "%s must be true or false, got %s", label, describe(v))
	return false, valBad
}

// integer decodes e's value as an integer; null counts as absent.
func (d *decoder) integer(e entry, label string) (int64, status) {
	v := d.resolve(e.value)
	switch n := v.(type) {
	case nil:
		return 0, valBad
	case *ast.NullNode:
		return 0, valNull
	case *ast.IntegerNode:
		switch i := n.Value.(type) {
		case int64:
			return i, valOK
		case uint64:
			if i <= math.MaxInt64 {
				return int64(i), valOK
			}
		}
	}
	d.errorf(e.value, "%s must be an integer, got %s", label, describe(v))
	return 0, valBad
}

// duration decodes e's value as a positive Go duration such as "10s";
// null counts as absent.
func (d *decoder) duration(e entry, label string) (time.Duration, status) {
	v := d.resolve(e.value)
	switch {
	case v == nil:
		return 0, valBad
	case isNull(v):
		return 0, valNull
	}
	s, ok := scalarText(v)
	dur, err := time.ParseDuration(s)
	if !ok || err != nil {
		d.errorf(e.value, "%s must be a duration such as 10s or 1m30s, got %s", label, describe(v))
		return 0, valBad
	}
	if dur <= 0 {
		d.errorf(e.value, "%s must be positive, got %s", label, describe(v))
		return 0, valBad
	}
	return dur, valOK
}

// validListen reports whether s is a host:port address with a numeric port.
func validListen(s string) bool {
	_, port, err := net.SplitHostPort(s)
	if err != nil {
		return false
	}
	n, err := strconv.ParseUint(port, 10, 16)
	return err == nil && n <= 65535
}

// pathCheck says what checkPath expects to find.
type pathCheck int

const (
	wantDir      pathCheck = 1 << iota // a directory, not a file
	wantExec                           // an executable file
	mayBeMissing                       // absence is fine (created later)
)

// checkPath reports, at n, a path that does not hold what want says; what
// names the path in messages as the file wrote it.
func (d *decoder) checkPath(n ast.Node, what, path string, want pathCheck) bool {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if want&mayBeMissing != 0 {
			return true
		}
		d.errorf(n, "%s does not exist (resolved to %s)", what, path)
		return false
	case err != nil:
		d.errorf(n, "checking %s: %v", what, err)
		return false
	case want&wantDir != 0 && !fi.IsDir():
		d.errorf(n, "%s is not a directory", what)
		return false
	case want&wantDir == 0 && fi.IsDir():
		d.errorf(n, "%s is a directory, not a file", what)
		return false
	case want&wantExec != 0 && runtime.GOOS != "windows" && fi.Mode()&0o111 == 0:
		d.errorf(n, "%s is not executable (chmod +x %s)", what, path)
		return false
	}
	return true
}
