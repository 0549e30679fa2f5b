package report

// Waits is what sampling pg_stat_activity and pg_locks saw during a
// measurement, on the benchmark's own connections (application_name
// nodeid-bench).
type Waits struct {
	// Samples is how many samples were taken; LockSamples how many saw a
	// backend waiting on a heavyweight lock (wait_event_type Lock: a row,
	// a transaction, an advisory lock, a relation's extension, ...).
	Samples     int `json:"samples"`
	LockSamples int `json:"lock_samples"`
	// MaxLockWaiters is the most backends seen waiting on heavyweight locks
	// in one sample.
	MaxLockWaiters int `json:"max_lock_waiters"`
	// Events maps "wait_event_type:wait_event" to the most backends seen
	// waiting on it in one sample.
	Events map[string]int `json:"events,omitempty"`
	// Ungranted maps a pg_locks locktype to the most requests seen waiting
	// for it in one sample.
	Ungranted map[string]int `json:"ungranted,omitempty"`
}
