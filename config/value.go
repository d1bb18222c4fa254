package config

import (
	"errors"
	"io/fs"
	"net"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentrt/agentrt/internal/yamlpos"
)

// present returns f's value, or its status when it is absent (null) or
// is not what ok accepts, reported as "label must be want, got …".
func (d *decoder) present(f yamlpos.Field, label, want string, ok func(*yamlpos.Value) bool) (*yamlpos.Value, status) {
	v := f.Value()
	switch {
	case v == nil:
		return nil, valBad
	case v.Kind == yamlpos.Null:
		return nil, valNull
	case !ok(v):
		d.errorAt(v.Pos, "%s must be %s, got %s", label, want, v.Describe())
		return nil, valBad
	}
	return v, valOK
}

// is returns a check for present that accepts values of kind k.
func is(k yamlpos.Kind) func(*yamlpos.Value) bool {
	return func(v *yamlpos.Value) bool { return v.Kind == k }
}

// mapping returns f's value as a mapping.
func (d *decoder) mapping(f yamlpos.Field, label string) (*yamlpos.Value, status) {
	return d.present(f, label, "a mapping", is(yamlpos.Map))
}

// str decodes f's value as a string. Any scalar is accepted as its text,
// so "tools: [sleep, 5]" and "REGION: 1" work.
func (d *decoder) str(f yamlpos.Field, label string) (string, status) {
	v, st := d.present(f, label, "a string", (*yamlpos.Value).Scalar)
	if st != valOK {
		return "", st
	}
	return v.Text, st
}

// boolean decodes f's value as true or false.
func (d *decoder) boolean(f yamlpos.Field, label string) (bool, status) {
	v, st := d.present(f, label, "true or false", is(yamlpos.Bool))
	return st == valOK && v.Bool, st
}

// integer decodes f's value as an integer.
func (d *decoder) integer(f yamlpos.Field, label string) (int64, status) {
	v, st := d.present(f, label, "an integer", func(v *yamlpos.Value) bool { return v.Kind == yamlpos.Int && v.IntOK })
	if st != valOK {
		return 0, st
	}
	return v.Int, st
}

// number decodes f's value as a finite number that is not negative.
func (d *decoder) number(f yamlpos.Field, label string) (float64, status) {
	v, st := d.present(f, label, "a number", func(v *yamlpos.Value) bool {
		return (v.Kind == yamlpos.Int || v.Kind == yamlpos.Float) && v.Num != ""
	})
	if st != valOK {
		return 0, st
	}
	n, err := strconv.ParseFloat(v.Num, 64)
	if err != nil || n < 0 {
		d.errorAt(v.Pos, "%s must not be negative, got %s", label, v.Text)
		return 0, valBad
	}
	return n, valOK
}

// count decodes f's value as an integer between lo and hi.
func (d *decoder) count(f yamlpos.Field, label string, lo, hi int64) (int64, status) {
	n, st := d.integer(f, label)
	if st == valOK && (n < lo || n > hi) {
		d.errorAt(f.Value().Pos, "%s must be between %d and %d, got %d", label, lo, hi, n)
		return 0, valBad
	}
	return n, st
}

// oneOf decodes f's value as one of the strings in allowed.
func (d *decoder) oneOf(f yamlpos.Field, label string, allowed []string) (string, status) {
	s, st := d.str(f, label)
	if st == valOK && !slices.Contains(allowed, s) {
		d.errorAt(f.Value().Pos, "%s must be one of %s, got %q%s", label, strings.Join(allowed, ", "), s, didYouMean(s, allowed))
		return "", valBad
	}
	return s, st
}

// duration decodes f's value as a positive Go duration such as "10s".
func (d *decoder) duration(f yamlpos.Field, label string) (time.Duration, status) {
	var dur time.Duration
	v, st := d.present(f, label, "a duration such as 10s or 1m30s", func(v *yamlpos.Value) bool {
		var err error
		dur, err = time.ParseDuration(v.Text)
		return v.Scalar() && err == nil
	})
	if st == valOK && dur <= 0 {
		d.errorAt(v.Pos, "%s must be positive, got %s", label, v.Describe())
		return 0, valBad
	}
	return dur, st
}

// durationOr decodes f's value as a positive Go duration, or the word
// word, which decodes as value.
func (d *decoder) durationOr(f yamlpos.Field, label, word string, value time.Duration) (time.Duration, status) {
	var dur time.Duration
	_, st := d.present(f, label, "a duration such as 10s or 1m30s, or "+word, func(v *yamlpos.Value) bool {
		if !v.Scalar() {
			return false
		}
		if v.Text == word {
			dur = value
			return true
		}
		var err error
		dur, err = time.ParseDuration(v.Text)
		return err == nil && dur > 0
	})
	return dur, st
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

// checkPath reports, at p, a path that does not hold what want says; what
// names the path in messages as the file wrote it.
func (d *decoder) checkPath(p yamlpos.Pos, what, path string, want pathCheck) bool {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if want&mayBeMissing != 0 {
			return true
		}
		d.errorAt(p, "%s does not exist (resolved to %s)", what, path)
		return false
	case err != nil:
		d.errorAt(p, "checking %s: %v", what, err)
		return false
	case want&wantDir != 0 && !fi.IsDir():
		d.errorAt(p, "%s is not a directory", what)
		return false
	case want&wantDir == 0 && fi.IsDir():
		d.errorAt(p, "%s is a directory, not a file", what)
		return false
	case want&wantExec != 0 && runtime.GOOS != "windows" && fi.Mode()&0o111 == 0:
		d.errorAt(p, "%s is not executable (chmod +x %s)", what, path)
		return false
	}
	return true
}

// scalarList decodes f as a list of scalars, "a list of " + noun: it
// reports a value that is not a list and each item that is not a scalar
// ("LABEL must list NOUN, got …"), skips empty items, and calls each for
// the others in order.
func (d *decoder) scalarList(f yamlpos.Field, label, noun string, each func(item *yamlpos.Value)) {
	v, st := d.present(f, label, "a list of "+noun, is(yamlpos.Seq))
	if st != valOK {
		return
	}
	for _, item := range v.Items() {
		switch {
		case item == nil:
		case !item.Scalar():
			d.errorAt(item.Pos, "%s must list %s, got %s", label, noun, item.Describe())
		default:
			each(item)
		}
	}
}
