package crashtest_test

import (
	"testing"
	"time"
)

// recovery is how fast restarted daemons took up the work lost in kills.
type recovery struct {
	// max and median are over the measured restarts of each restart's
	// slowest take-up, from the restarted daemon being ready to the new
	// attempt's task.attempt.started.
	max, median time.Duration
	measured    int
	// cutShort counts restarts killed before all the work lost in earlier
	// kills was due (their lost tasks are measured in a later restart);
	// idle, restarts that had nothing to take up.
	cutShort, idle int
	// afterExpiry is the longest take-up measured from the moment the
	// task was surely due (a daemon was ready and the lost lease had run
	// out: at the latest lease TTL after the last kill before the
	// take-up): what polling and claiming added to the lease.
	afterExpiry time.Duration
}

// forEachTakeUp calls fn for each attempt of sd started with reason
// worker_lost, with the worker of the lost attempt before it; an attempt
// no lost attempt precedes is an error.
func forEachTakeUp(t *testing.T, sd *sessionData, fn func(lostWorker string, e *evt)) {
	t.Helper()
	type attemptKey struct {
		task    string
		attempt int
	}
	lostBy := make(map[attemptKey]string)
	for _, e := range sd.events {
		if e.Type == "task.attempt.failed" && e.Payload.Status == "lost" {
			lostBy[attemptKey{e.TaskID, e.Payload.Attempt}] = e.Payload.Worker
		}
	}
	for _, e := range sd.events {
		if e.Type != "task.attempt.started" || e.StatusReason != "worker_lost" {
			continue
		}
		lostWorker, ok := lostBy[attemptKey{e.TaskID, e.Payload.Attempt - 1}]
		if !ok {
			t.Errorf("session %s: attempt %d of task %s started with reason worker_lost, but no lost attempt %d precedes it", sd.id, e.Payload.Attempt, e.TaskID, e.Payload.Attempt-1)
			continue
		}
		fn(lostWorker, e)
	}
}

// measureRecovery finds, for every attempt started with reason
// worker_lost, the incarnation that lost the task and the one that took it
// up, and checks that each restart took up, within recoveryBound of being
// ready, every task lost before it, unless it was killed before that bound
// passed.
func measureRecovery(t *testing.T, d *daemon, sessions []*sessionData) recovery {
	t.Helper()
	lives := d.lives
	slowest := make([]time.Duration, len(lives)) // per incarnation, -1: took up nothing
	for i := range slowest {
		slowest[i] = -1
	}
	cutShort := make([]bool, len(lives))
	var rec recovery
	for _, sd := range sessions {
		forEachTakeUp(t, sd, func(lostWorker string, e *evt) {
			j, m := d.incarnationOf(workerPID(lostWorker)), d.incarnationOf(workerPID(e.Payload.Worker))
			if j < 0 || m < 0 || m <= j {
				t.Errorf("session %s: task %s lost by worker %s (incarnation %d), taken up by %s (incarnation %d)", sd.id, e.TaskID, lostWorker, j, e.Payload.Worker, m)
				return
			}
			// Every incarnation between the two should have taken it up;
			// only one killed before the bound passed is excused.
			for i := j + 1; i < m; i++ {
				if lived := lives[i].killed.Sub(lives[i].ready); lived > recoveryBound {
					t.Errorf("session %s: task %s, lost in incarnation %d, was not taken up by incarnation %d, which ran %v after being ready (bound %v); incarnation %d took it up",
						sd.id, e.TaskID, j, i, lived.Round(time.Millisecond), recoveryBound, m)
				}
				cutShort[i] = true
			}
			took := max(0, e.Timestamp.Sub(lives[m].ready))
			slowest[m] = max(slowest[m], took)
			if took > recoveryBound {
				t.Errorf("session %s: task %s, lost in incarnation %d, was taken up %v after incarnation %d was ready; bound %v (lease TTL + 1s)",
					sd.id, e.TaskID, j, took.Round(time.Millisecond), m, recoveryBound)
			}
			// Whichever incarnation last claimed the task (the one that
			// lost it, or one killed before it recorded its attempt) died
			// at the latest when the one before m was killed, so the
			// lease ran out by then + TTL, or the task was due when m was
			// ready, if later.
			due := lives[m-1].killed.Add(leaseTTL)
			if lives[m].ready.After(due) {
				due = lives[m].ready
			}
			rec.afterExpiry = max(rec.afterExpiry, e.Timestamp.Sub(due))
		})
	}
	var per []time.Duration
	for i := 1; i < len(lives); i++ {
		switch {
		case slowest[i] >= 0:
			per = append(per, slowest[i])
			rec.max = max(rec.max, slowest[i])
			t.Logf("restart %d: took up lost work within %v of being ready", i, slowest[i].Round(time.Millisecond))
		case cutShort[i]:
			rec.cutShort++
		default:
			rec.idle++
		}
	}
	rec.measured = len(per)
	rec.median = median(per)
	return rec
}
