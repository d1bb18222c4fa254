package agentrt

// KickWorkers wakes rt's workers, as a due time passing on a real clock
// would at their next poll (tests run a fake clock).
func KickWorkers(rt *Runtime) { rt.kick() }
