// Package muster holds the domain of muster: plans and tasks, the crew of
// executors and their clones, the events of a run's journal, usage, and the
// small ports (interfaces) through which the driver reaches the outside
// world. It imports only the standard library.
//
// Vocabulary:
//   - A Plan is a brief and a list of Tasks with dependencies (After).
//   - An Executor is a named agent kind with Clones: slots named "name#n".
//   - An Attempt is one try at a task on one clone; it may have fix Rounds.
//   - The Journal is an append-only list of Events; every other state is a
//     fold over it.
package muster
