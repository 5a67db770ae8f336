// Package planfile reads plan files (ARCHITECTURE.md §2.3) into muster.Plan and
// checks them.
//
// Two formats describe the same plan: Markdown (a "# Plan: title" line,
// the brief, then one "## [ ] ID: Title" heading per task with "Key: value"
// field lines and a prompt) and its YAML twin (files ending in .yaml or
// .yml). Parse keeps the line of every task heading and field, so that
// each problem reads "FILE:LINE: message". Validate checks a parsed plan
// against the crew (all problems at once); ValidateFragment checks the
// tasks a delegating task proposes; Canonical and Hash give a form of the
// plan that does not depend on how it was written.
//
// See docs/planfile.md for the format.
package planfile
