package runtype

import "errors"

// Sentinel errors shared by the layers that detect a condition (the
// store, the process manager) and the API contract that names it
// (apitype): each package exports the same value, so errors.Is matches
// across them without the store importing the contract.
var (
	// ErrNotFound: no record with that key exists for that tenant.
	ErrNotFound = errors.New("not found")
	// ErrConflict: a write broke a uniqueness rule, or a request
	// conflicts with the state it addresses.
	ErrConflict = errors.New("conflict")
	// ErrUnknownProcess: no live process has that id.
	ErrUnknownProcess = errors.New("unknown process")
)
