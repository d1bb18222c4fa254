package sqlitestore

// LatestVersion is the schema version Migrate brings a database to.
func LatestVersion() int { return latestVersion() }
