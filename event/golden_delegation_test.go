package event

import "github.com/agentrt/agentrt/runtype"

// Identifiers of the golden delegation tree: the golden turn's task (a
// root) delegates to the subagent gSub, whose first input runs as
// gChildTask on the child's thread, and starts the job gJob, whose
// dispatcher task gJobTask starts gItemTask for item gItem.
const (
	gSub         = "sub_01M7Z5ME30GPETVGA3GK813V10"
	gChildThread = "thr_01M7Z5ME30GPETVGA3GK813V11"
	gChildTurn   = "turn_01M7Z5ME30GPETVGA3GK813V12"
	gChildTask   = "task_01M7Z5ME30GPETVGA3GK813V13"
	gChildRun    = "run_01M7Z5ME30GPETVGA3GK813V14"
	gChildTurn2  = "turn_01M7Z5ME30GPETVGA3GK813V15"
	gChildTask2  = "task_01M7Z5ME30GPETVGA3GK813V16"
	gJob         = "job_01M7Z5ME30GPETVGA3GK813V20"
	gJobThread   = "thr_01M7Z5ME30GPETVGA3GK813V21"
	gJobTurn     = "turn_01M7Z5ME30GPETVGA3GK813V22"
	gJobTask     = "task_01M7Z5ME30GPETVGA3GK813V23"
	gItem        = "item_01M7Z5ME30GPETVGA3GK813V24"
	gItemThread  = "thr_01M7Z5ME30GPETVGA3GK813V25"
	gItemTurn    = "turn_01M7Z5ME30GPETVGA3GK813V26"
	gItemTask    = "task_01M7Z5ME30GPETVGA3GK813V27"
	gItemRun     = "run_01M7Z5ME30GPETVGA3GK813V28"
)

// gChildEvent is gEvent for an event of the subagent's run: its thread,
// turn, task and run, under the golden turn's task.
func gChildEvent(typ Type, seq int64, p Payload) *Event {
	e := gEvent(typ, seq, p)
	e.ThreadID, e.TurnID, e.TaskID, e.RunID, e.AttemptID, e.SpanID = gChildThread, gChildTurn, gChildTask, gChildRun, gChildRun, gSpan
	e.ParentTaskID, e.RootTaskID, e.SubagentID = gTask, gTask, gSub
	return e
}

// gJobEvent is gEvent for an event of the job's dispatcher task, which
// the golden turn's task started.
func gJobEvent(typ Type, seq int64, p Payload) *Event {
	e := gEvent(typ, seq, p)
	e.ThreadID, e.TurnID, e.TaskID = gJobThread, gJobTurn, gJobTask
	e.ParentTaskID, e.RootTaskID, e.JobID = gTask, gTask, gJob
	return e
}

// gItemEvent is gEvent for an event of an item attempt's run, a child of
// the dispatcher task.
func gItemEvent(typ Type, seq int64, p Payload) *Event {
	e := gEvent(typ, seq, p)
	e.ThreadID, e.TurnID, e.TaskID, e.RunID, e.AttemptID, e.SpanID = gItemThread, gItemTurn, gItemTask, gItemRun, gItemRun, gSpan
	e.ParentTaskID, e.RootTaskID, e.JobID, e.JobItemID = gJobTask, gTask, gJob, gItem
	return e
}

// delegationGoldens are the golden events of subagents and jobs.
func delegationGoldens() []*Event {
	// The parent's step records the spawn and the edge: the envelope's
	// task is the parent's, its call the one that delegated.
	child := SubagentPayload{
		SubagentID: gSub, Agent: "lookup", Name: "lookup_order", ThreadID: gChildThread, TurnID: gChildTurn, TaskID: gChildTask,
		ParentTaskID: gTask, ParentTurnID: gTurn, ParentToolCallID: gCall, RootTaskID: gTask, Depth: 1,
		Workspace: runtype.WorkspaceParentReadOnly,
	}
	spawnedP := child
	spawnedP.Status, spawnedP.InputPreview = runtype.StatusQueued, `{"order_id":"1042"}`
	spawned := gRunEvent(SubagentSpawned, 70, &spawnedP)
	spawned.StepID, spawned.ToolCallID, spawned.SubagentID = gStep, gCall, gSub
	delegated := gRunEvent(TaskDelegated, 71, &DependencyPayload{
		Relationship: RelationshipChild, ChildTaskID: gChildTask, SubagentID: gSub, Agent: "lookup", Depth: 1, Status: runtype.StatusQueued,
	})
	delegated.StepID, delegated.ToolCallID, delegated.SubagentID = gStep, gCall, gSub

	// The child's terminal batch: its own events, and the parent's edge.
	completedP := child
	completedP.Status, completedP.ResultPreview = runtype.StatusCompleted, "Order 1042 left the warehouse on 3 Nov; carrier Parcelo."
	completed := gChildEvent(SubagentCompleted, 80, &completedP)
	dependency := gTurnEvent(TaskDependencyUpdated, 81, &DependencyPayload{
		Relationship: RelationshipChild, ChildTaskID: gChildTask, SubagentID: gSub, Agent: "lookup", Depth: 1,
		Status: runtype.StatusCompleted, Open: 1,
	})
	dependency.SubagentID = gSub
	failedP := child
	failedP.Status = runtype.StatusFailed
	failedP.Failure = &runtype.Failure{Kind: runtype.FailureModel, Message: "provider unavailable", Retryable: true}
	failed := gChildEvent(SubagentFailed, 82, &failedP)

	// A later input to the open child runs as a new turn and task on its
	// thread; closing it ends its life.
	inputP := child
	inputP.TurnID, inputP.TaskID, inputP.Status, inputP.InputPreview = gChildTurn2, gChildTask2, runtype.StatusQueued, "And order 1043?"
	input := gChildEvent(SubagentInput, 83, &inputP)
	input.TurnID, input.TaskID, input.RunID, input.AttemptID, input.SpanID = gChildTurn2, gChildTask2, "", "", ""
	closedP := child
	closedP.TurnID, closedP.TaskID, closedP.Status, closedP.ClosedBy = gChildTurn2, gChildTask2, runtype.StatusCompleted, "alice"
	closed := gChildEvent(SubagentClosed, 84, &closedP)
	closed.TurnID, closed.TaskID, closed.RunID, closed.AttemptID, closed.SpanID = gChildTurn2, gChildTask2, "", "", ""

	job := func(typ Type, seq int64, p JobPayload) *Event {
		p.JobID, p.Agent, p.Concurrency, p.MaxAttempts, p.Items, p.ParentTaskID = gJob, "ticket_triage", 3, 2, 200, gTask
		return gJobEvent(typ, seq, &p)
	}
	jobCreated := job(JobCreated, 90, JobPayload{Status: runtype.JobPending})
	// After retry_job_items put the 3 failed items back.
	jobProgress := job(JobProgress, 91, JobPayload{Status: runtype.JobRunning, Completed: 197, Running: 3, RequestedBy: "alice"})
	jobCompleted := job(JobCompleted, 92, JobPayload{Status: runtype.JobCompleted, Completed: 200})
	jobCancelled := job(JobCancelled, 93, JobPayload{Status: runtype.JobCancelled, Completed: 120, Failed: 2, Cancelled: 78, RequestedBy: "alice"})

	item := func(typ Type, seq int64, p JobItemPayload) *Event {
		p.JobID, p.ItemID, p.Index, p.TaskID, p.ThreadID = gJob, gItem, 17, gItemTask, gItemThread
		return gItemEvent(typ, seq, &p)
	}
	itemStarted := item(JobItemStarted, 100, JobItemPayload{Status: runtype.ItemRunning, Attempt: 1})
	itemFailed := item(JobItemFailed, 101, JobItemPayload{
		Status: runtype.ItemFailed, Attempt: 2, Retryable: true,
		Failure: &runtype.Failure{Kind: runtype.FailureToolError, Message: "ticket 4417 not found"},
	})
	itemCompleted := item(JobItemCompleted, 102, JobItemPayload{Status: runtype.ItemCompleted, Attempt: 3, ResultPreview: `{"ticket":"4417","queue":"billing"}`})

	return []*Event{
		spawned, delegated, completed, dependency, failed, input, closed,
		jobCreated, jobProgress, jobCompleted, jobCancelled,
		itemStarted, itemFailed, itemCompleted,
	}
}
