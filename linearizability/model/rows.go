package model

// Rowed is a state that says how many rows it holds. A nondeterministic
// checker keeps many states at once, and a write copies what it changes
// (a table of a hundred batches is copied whole by an enqueue), so what
// bounds its memory is states times rows, not the count of states alone
// (sim's oracle bounds both).
type Rowed interface {
	Rows() int
}

// Rows of a runtime state: its graph, ledger, turns, leases, queue,
// checkpoints and attachments.
func (s RuntimeState) Rows() int {
	return len(s.nodes) + len(s.checkpoints) + len(s.ledger) + len(s.turns) + len(s.leases) + len(s.batches) + len(s.attachments)
}

// Rows of a continuity state: its records and snapshots.
func (s ContinuityState) Rows() int { return len(s.records) + len(s.snaps) }

// Rows of a client state: every table's.
func (s ClientState) Rows() int {
	return s.intents.len() + len(s.events) + len(s.outHeads) + len(s.previews) + len(s.prose) + len(s.config) +
		len(s.sessions) + len(s.bindings) + s.tasks.len() + len(s.faults)
}
