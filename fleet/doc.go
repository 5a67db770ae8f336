// Package fleet runs muster's work on other machines through NATS
// JetStream: an embedded server (Serve), worker registrations and
// heartbeats in a key-value bucket (Register, Workers), tasks on a
// work-queue stream that workers take one at a time for a clone they have
// free, and code that moves as git bundles through the object store.
//
// The orchestrator stays the only keeper of the journal: a worker runs an
// agent invocation (and the task's gates) in a clone of its own and
// returns a commit; the orchestrator accepts a result only when it
// carries the job, the delivery (the lease epoch) and the worker it
// recorded as the job's current holder, and checks its content as it
// checks a local agent's (Owns, gates, reviews, integration).
//
// Names on the server:
//
//	stream MUSTER_TASKS     muster.task.<run>.<executor>   work queue, one durable consumer per executor
//	stream MUSTER_EVENTS    muster.ev.<run>.<job>          what workers report: claims, records, results
//	kv     muster_workers   w.<worker>                     registrations, refreshed by heartbeats (TTL)
//	kv     muster_leases    <run>.<job>                    the holder the orchestrator accepts, or "done"
//	kv     muster_runs      r.<run>                        the run's orchestrator is alive (TTL)
//	object muster_bundles   <run>/...                      git bundles both ways
//	subject muster.bundle.<run>                            a worker asks for the objects it lacks
package fleet
