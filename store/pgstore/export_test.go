package pgstore

import "github.com/agentrt/agentrt/store"

// NewListener is newListener for the tests of package pgstore_test, until
// Open's store is a Notifier itself: it hears every handle's commits (no
// origin skips any).
func NewListener(url string) store.Notifier { return newListener(url, "") }
