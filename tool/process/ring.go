package process

// ring keeps the last bytes written to it, at most its size, and counts
// everything written. It is not safe for concurrent use.
type ring struct {
	buf   []byte // allocated on the first write, len = size
	size  int
	start int   // index of the oldest byte kept
	n     int   // bytes kept
	total int64 // bytes ever written
}

func newRing(size int) *ring { return &ring{size: size} }

// Write implements io.Writer; it never fails.
func (r *ring) Write(p []byte) (int, error) {
	r.total += int64(len(p))
	if len(p) == 0 {
		return 0, nil
	}
	if r.buf == nil {
		r.buf = make([]byte, r.size)
	}
	written := len(p)
	if len(p) >= r.size {
		copy(r.buf, p[len(p)-r.size:])
		r.start, r.n = 0, r.size
		return written, nil
	}
	end := (r.start + r.n) % r.size
	k := copy(r.buf[end:], p)
	copy(r.buf, p[k:])
	r.n += len(p)
	if r.n > r.size {
		r.start = (r.start + r.n - r.size) % r.size
		r.n = r.size
	}
	return written, nil
}

// Total is how many bytes were ever written.
func (r *ring) Total() int64 { return r.total }

// Since returns, in a new slice, the bytes written from offset off (a
// Total value) on that the ring still holds, and how many bytes from off
// on it no longer holds.
func (r *ring) Since(off int64) (data []byte, dropped int64) {
	oldest := r.total - int64(r.n)
	if off < oldest {
		dropped, off = oldest-off, oldest
	}
	skip := int(off - oldest)
	if skip >= r.n {
		return nil, dropped
	}
	data = make([]byte, 0, r.n-skip)
	from := (r.start + skip) % r.size
	if from+r.n-skip <= r.size {
		return append(data, r.buf[from:from+r.n-skip]...), dropped
	}
	data = append(data, r.buf[from:]...)
	return append(data, r.buf[:r.n-skip-(r.size-from)]...), dropped
}

// Bytes returns, in a new slice, all the bytes the ring holds.
func (r *ring) Bytes() []byte {
	b, _ := r.Since(r.total - int64(r.n))
	return b
}
