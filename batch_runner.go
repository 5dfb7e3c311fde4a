package attention

import (
	"fmt"
	"runtime"
)

// TaskRunner runs task(0), …, task(n-1) each once, on any goroutines, in
// any order, concurrently or one after another, and returns only when
// every one has returned. It lets a framework that keeps warm worker
// goroutines of its own run a Batched call's work on them (see
// NewBatchedRunner).
//
// The engine relies on three things:
//   - no task index runs twice, and none outside [0, n);
//   - run returns only after every task it ran has returned, and with
//     the synchronisation that comes with waiting for them (a
//     sync.WaitGroup's Wait, a channel receive per task), so the caller
//     sees their writes. A runner that returns while a task still runs,
//     or starts a task after returning, breaks the contract: the call
//     then races with its own work and its results are undefined;
//   - run does not call into the Batched that called it, whose lock it
//     holds.
//
// A task never waits for another, so a runner may run them one after
// another on a single goroutine (the caller's too), or on fewer goroutines
// than n: one called from a goroutine of its own pool may run on the
// caller the tasks it has no free goroutine for. It may also run fewer
// tasks than n, or none: the caller computes what they left after run
// returns, more slowly. Engines that share a runner may call it
// concurrently (each engine one call at a time).
type TaskRunner func(n int, task func(i int))

// NewBatchedRunner returns a Batched that runs its calls' work on the
// host's goroutines, through run, instead of on goroutines of its own: for
// a framework whose worker goroutines are already warm. workers (0 or
// less: GOMAXPROCS) is how many tasks a call may run at once, each with
// scratch memory of its own.
//
// A call that NewBatched(workers) would share out between its workers
// calls run(k, task) once, k = min(workers, the call's work items), from
// the goroutine that called Attend or AttendCache. The tasks take work
// items from one atomic counter until none is left, and which goroutine
// computes an item never changes its result: the outputs are the bits of
// NewBatched with any number of workers. Small calls (a decode step over a
// few keys) and calls of a single work item run on the caller's goroutine
// without calling run, as the pool runs them on its caller alone; with one
// worker, run is never called. After run returns, the caller computes the
// items no task took (a runner that ran fewer tasks than asked, or none),
// so a call is never left incomplete.
//
// The task function is made here, once, and passed to every call of run,
// so a steady-state call allocates nothing if run allocates nothing. A
// panic in run propagates out of the Attend or AttendCache that called it,
// whose outputs are then undefined; the engine is unlocked and may be used
// again.
//
// The engine starts no goroutine. Close only marks it closed (Attend
// returns ErrClosed afterwards); SetIdleSpin and Wake have no effect, the
// host's goroutines being the host's to keep awake. A nil run runs every
// call on the caller's goroutine: the engine is NewBatched(1), with one
// worker.
func NewBatchedRunner(workers int, run TaskRunner) *Batched {
	if run == nil {
		return NewBatched(1)
	}
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	e := &Batched{workers: workers, scratch: make([]workerScratch, workers), run: run}
	e.task = e.runTask
	return e
}

// runOnHost runs a call's items on the host's runner: up to one task per
// worker, each taking items from the counter with that worker's scratch,
// then the caller takes whatever items the runner left.
func (e *Batched) runOnHost(job batchJob, items int) {
	e.sizeScratch(&job.batchPlan)
	e.job, e.tasks = job, int64(items)
	e.next.Store(0)
	defer e.endCall() // a panicking runner leaves no job behind
	e.run(min(e.workers, items), e.task)
	// Every task has returned, so worker 0's scratch is free for the
	// items of tasks the runner did not run.
	if e.next.Load() < e.tasks {
		e.take(0)
	}
}

// endCall drops the call's job (and the tensors it holds) once its items
// are done, or once the runner has panicked.
func (e *Batched) endCall() { e.job = batchJob{} }

// runTask is task i of a call on the host's runner: it takes the call's
// items, with worker i's scratch, until none is left. e.task holds it,
// made once by NewBatchedRunner, so that a call passes it to the runner
// without allocating.
func (e *Batched) runTask(i int) {
	if i < 0 || i >= len(e.scratch) {
		panic(fmt.Sprintf("attention: TaskRunner ran task %d of a Batched of %d workers", i, len(e.scratch)))
	}
	e.take(i)
}
