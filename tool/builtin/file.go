package builtin

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"syscall"
	"unicode/utf8"

	"github.com/agentrt/agentrt/tool"
)

// Limits of the file tools.
const (
	// DefaultReadBytes is how much read_file returns when max_bytes is not
	// given.
	DefaultReadBytes = 256 << 10
	// MaxReadBytes is the largest max_bytes read_file accepts.
	MaxReadBytes = 1 << 20
	// MaxListEntries is how many entries list_dir returns at most.
	MaxListEntries = 1000
	// MaxWriteBytes is the largest content write_file accepts.
	MaxWriteBytes = 4 << 20
)

// binarySniffLen is how much of a file read_file looks at for NUL bytes to
// tell binary files from text, as git does.
const binarySniffLen = 8000

var readFileSchema = fmt.Sprintf(`{
  "type": "object",
  "properties": {
    "path": {"type": "string", "minLength": 1, "description": "File path relative to the workspace root."},
    "max_bytes": {"type": "integer", "minimum": 1, "maximum": %d, "description": "Return at most this many bytes (default %d)."}
  },
  "required": ["path"],
  "additionalProperties": false
}`, MaxReadBytes, DefaultReadBytes)

type readFileInput struct {
	Path     string `json:"path"`
	MaxBytes int    `json:"max_bytes"`
}

func readFile() tool.Tool {
	return workspaceTool(tool.Spec{
		Name:        ReadFileName,
		Description: "Read a text file in the workspace. Large files are truncated; the result says so.",
		InputSchema: json.RawMessage(readFileSchema),
		Annotations: tool.Annotations{ReadOnly: true, Idempotent: true},
	}, func(_ context.Context, ws *workspace, in *readFileInput) *tool.Result {
		limit := in.MaxBytes
		if limit <= 0 || limit > MaxReadBytes {
			limit = DefaultReadBytes
		}
		// O_NONBLOCK: opening a FIFO (or a device) must not block the run;
		// it is refused below as not a regular file.
		f, err := ws.OpenFile(in.Path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
		if err != nil {
			return errorResult(ReadFileName, "%s", describe(err))
		}
		defer f.Close()
		if _, err := ws.refuse("open", in.Path, f); err != nil {
			return errorResult(ReadFileName, "%s", describe(err))
		}
		info, err := f.Stat()
		if err != nil {
			return errorResult(ReadFileName, "%s", describe(err))
		}
		if info.IsDir() {
			return errorResult(ReadFileName, "%s is a directory; use list_dir", in.Path)
		}
		if !info.Mode().IsRegular() {
			return errorResult(ReadFileName, "%s is not a regular file", in.Path)
		}
		// Read one byte more than the limit to know whether there is more.
		data, err := io.ReadAll(io.LimitReader(f, int64(limit)+1))
		if err != nil {
			return errorResult(ReadFileName, "%s", describe(err))
		}
		if bytes.IndexByte(data[:min(len(data), binarySniffLen)], 0) >= 0 {
			return errorResult(ReadFileName, "%s is a binary file (%d bytes); read_file shows text only", in.Path, info.Size())
		}
		if len(data) <= limit {
			return &tool.Result{Content: string(data)}
		}
		data = trimPartialRune(data[:limit])
		size := max(info.Size(), int64(limit)+1)
		return &tool.Result{Content: fmt.Sprintf("%s\n[truncated: showing the first %d of %d bytes; pass a larger max_bytes (up to %d) to see more]",
			data, len(data), size, MaxReadBytes)}
	})
}

// trimPartialRune drops a UTF-8 sequence cut short at the end of b.
func trimPartialRune(b []byte) []byte {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return b[:i]
			}
			break
		}
	}
	return b
}

const listDirSchema = `{
  "type": "object",
  "properties": {
    "path": {"type": "string", "default": ".", "description": "Directory path relative to the workspace root (default \".\")."}
  },
  "additionalProperties": false
}`

type listDirInput struct {
	Path string `json:"path"`
}

// DirEntry is one entry of a list_dir result.
type DirEntry struct {
	Name string `json:"name"`
	// Type is file, dir, symlink or other (devices, sockets, pipes).
	Type string `json:"type"`
	Size int64  `json:"size"`
}

// DirListing is the result of list_dir.
type DirListing struct {
	Path    string     `json:"path"`
	Entries []DirEntry `json:"entries"`
	// Truncated is set when the directory has more than MaxListEntries
	// entries; Entries then holds the first ones by name.
	Truncated bool `json:"truncated,omitempty"`
}

func listDir() tool.Tool {
	return workspaceTool(tool.Spec{
		Name:        ListDirName,
		Description: "List a directory in the workspace: name, type (file, dir, symlink) and size of each entry.",
		InputSchema: json.RawMessage(listDirSchema),
		Annotations: tool.Annotations{ReadOnly: true, Idempotent: true},
	}, func(_ context.Context, ws *workspace, in *listDirInput) *tool.Result {
		dir := in.Path
		if dir == "" {
			dir = "."
		}
		f, err := ws.Open(dir)
		if err != nil {
			return errorResult(ListDirName, "%s", describe(err))
		}
		defer f.Close()
		real, err := ws.refuse("open", dir, f)
		if err != nil {
			return errorResult(ListDirName, "%s", describe(err))
		}
		info, err := f.Stat()
		if err != nil {
			return errorResult(ListDirName, "%s", describe(err))
		}
		if !info.IsDir() {
			return errorResult(ListDirName, "%s is not a directory; use read_file", dir)
		}
		entries, err := f.ReadDir(-1)
		if err != nil {
			return errorResult(ListDirName, "%s", describe(err))
		}
		entries = slices.DeleteFunc(entries, func(e fs.DirEntry) bool { return ws.hides(filepath.Join(real, e.Name())) })
		sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
		out := DirListing{Path: dir, Entries: make([]DirEntry, 0, min(len(entries), MaxListEntries))}
		if len(entries) > MaxListEntries {
			entries, out.Truncated = entries[:MaxListEntries], true
		}
		for _, e := range entries {
			de := DirEntry{Name: e.Name(), Type: entryType(e.Type())}
			if fi, err := e.Info(); err == nil {
				de.Size = fi.Size()
			}
			if de.Type == "dir" {
				de.Size = 0
			}
			out.Entries = append(out.Entries, de)
		}
		return jsonResult(ListDirName, out)
	})
}

func entryType(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "file"
	case m.IsDir():
		return "dir"
	case m&fs.ModeSymlink != 0:
		return "symlink"
	}
	return "other"
}

var writeFileSchema = fmt.Sprintf(`{
  "type": "object",
  "properties": {
    "path": {"type": "string", "minLength": 1, "description": "File path relative to the workspace root. An existing file is replaced."},
    "content": {"type": "string", "maxLength": %d, "description": "The complete new content of the file."},
    "create_dirs": {"type": "boolean", "description": "Create missing parent directories (default false)."}
  },
  "required": ["path", "content"],
  "additionalProperties": false
}`, MaxWriteBytes)

type writeFileInput struct {
	Path       string `json:"path"`
	Content    string `json:"content"`
	CreateDirs bool   `json:"create_dirs"`
}

// WriteResult is the result of write_file.
type WriteResult struct {
	Path  string `json:"path"`
	Bytes int    `json:"bytes"`
}

func writeFile() tool.Tool {
	return workspaceTool(tool.Spec{
		Name:        WriteFileName,
		Description: "Write a file in the workspace, replacing it if it exists.",
		InputSchema: json.RawMessage(writeFileSchema),
		Annotations: tool.Annotations{Destructive: true, Idempotent: true},
	}, func(_ context.Context, ws *workspace, in *writeFileInput) *tool.Result {
		if len(in.Content) > MaxWriteBytes {
			return errorResult(WriteFileName, "content is %d bytes; the limit is %d", len(in.Content), MaxWriteBytes)
		}
		if err := replaceFile(ws, in.Path, []byte(in.Content), in.CreateDirs); err != nil {
			return errorResult(WriteFileName, "%s", describe(err))
		}
		return jsonResult(WriteFileName, WriteResult{Path: in.Path, Bytes: len(in.Content)})
	})
}

// replaceFile writes data to a temporary file next to name and renames it
// over name, so readers see the old content or the new, never a part. An
// existing file keeps its permission bits. It works in the directory it
// opened and checked: a hidden path is refused, whatever that directory
// is renamed to or replaced with meanwhile.
func replaceFile(ws *workspace, name string, data []byte, createDirs bool) error {
	// os.Root paths use forward slashes on every platform.
	dir, base := path.Split(path.Clean(name))
	if base == "." || base == ".." || base == "/" || base == "" {
		return fmt.Errorf("write %s: not a file name", name)
	}
	if ws.hides(ws.resolve(name)) {
		return &fs.PathError{Op: "write", Path: name, Err: fs.ErrPermission}
	}
	if createDirs && dir != "" {
		if err := ws.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	if dir == "" {
		dir = "."
	}
	root, err := ws.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	d, err := root.Open(".")
	if err != nil {
		return err
	}
	real := ws.realPath(d, dir)
	d.Close()
	if ws.hides(filepath.Join(real, base)) {
		return &fs.PathError{Op: "write", Path: name, Err: fs.ErrPermission}
	}
	perm := os.FileMode(0o644)
	if info, err := root.Stat(base); err == nil {
		if info.IsDir() {
			return fmt.Errorf("write %s: is a directory", name)
		}
		perm = info.Mode().Perm()
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}

	var suffix [6]byte
	_, _ = rand.Read(suffix[:]) // crypto/rand never fails on supported platforms
	tmp := "." + base + ".tmp-" + hex.EncodeToString(suffix[:])
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return &fs.PathError{Op: "write", Path: name, Err: underlying(err)}
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = root.Rename(tmp, base)
	}
	if err != nil {
		_ = root.Remove(tmp)
		// The temporary name means nothing to the model.
		return &fs.PathError{Op: "write", Path: name, Err: underlying(err)}
	}
	return nil
}

// underlying returns the cause of a path or link error.
func underlying(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	return err
}

// syscallOps maps the *at system call names os.Root reports to the plain
// operation a model understands.
var syscallOps = map[string]string{
	"openat":     "open",
	"statat":     "stat",
	"fstatat":    "stat",
	"mkdirat":    "mkdir",
	"renameat":   "rename",
	"unlinkat":   "remove",
	"readlinkat": "readlink",
}

// describe formats a file system error for the model: "open
// ../etc/passwd: path escapes from parent".
func describe(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		op := pe.Op
		if plain, ok := syscallOps[op]; ok {
			op = plain
		}
		return op + " " + pe.Path + ": " + pe.Err.Error()
	}
	return err.Error()
}
