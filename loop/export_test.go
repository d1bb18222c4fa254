package loop

// AccountCount returns how many accounts the ledger holds in memory.
func AccountCount(l *Ledger) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.accounts)
}
