// Package tui draws a run for people on a terminal: the live view (Bubble
// Tea), one lane per executor clone with what it is doing, its tokens and
// cost, a task list and the selected task's details; and plain progress
// lines where there is no terminal. It reads the run only as events,
// folded by package runview, and strips terminal control sequences from
// everything an agent wrote before showing it (internal/textsafe).
package tui
