// Package runtype holds the leaf types every other agentrt package shares:
// identifiers, the Agent Runtime standard's normalized statuses, persisted
// failures and the durable records a store keeps (sessions, threads, turns,
// tasks, runs, messages, tool calls). It has no logic beyond formatting and
// validation of those values, so that any package may import it without
// creating a cycle.
package runtype
