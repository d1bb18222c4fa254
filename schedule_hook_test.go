package agentrt

import "context"

// FireDue runs one pass of rt's scheduler now, as its poll would: tests
// that move a fake clock call it rather than wait for the poll.
func FireDue(rt *Runtime) { rt.fireDue(context.Background()) }
