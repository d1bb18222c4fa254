package apitype

// Record kinds a principal owns: the sessions it created, the turns and
// tasks it submitted, the subagents it spawned and the jobs it created. A
// submitter reads and interrupts only its own.
type OwnKind string

// The kinds CheckOwn knows.
const (
	OwnSession  OwnKind = "session"
	OwnTurn     OwnKind = "turn"
	OwnTask     OwnKind = "task"
	OwnSubagent OwnKind = "subagent"
	OwnJob      OwnKind = "job"
)

// Default owner of work submitted without one (the embedded, single-user
// case).
const (
	DefaultTenant    = "default"
	DefaultPrincipal = "local"
)

// RoleOperator is the role a principal needs to respond to actions and
// switch permission modes.
const RoleOperator = "operator"

// APIPrincipal is the principal the HTTP API's bearer token acts as.
const APIPrincipal = "operator"
