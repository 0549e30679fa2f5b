package cli

import (
	"time"

	"github.com/nodeid/nodeid/admin"
)

// ClaimJSON is a claim of the history (a history row) in -o json and -o
// yaml, as show and who print it.
type ClaimJSON struct {
	Epoch        int64      `json:"epoch"`
	Owner        string     `json:"owner"`
	AcquiredAt   time.Time  `json:"acquired_at"`
	AcquiredAtMs int64      `json:"acquired_at_ms"`
	EndedAt      *time.Time `json:"ended_at"`
	EndedAtMs    *int64     `json:"ended_at_ms"`
	EndReason    string     `json:"end_reason"`
	FromMs       int64      `json:"from_ms"`
	HorizonMs    int64      `json:"horizon_ms"`
	Generation   int64      `json:"generation"`
}

// NewClaimJSON returns the document of a history row.
func NewClaimJSON(c admin.HistoryRow) ClaimJSON {
	j := ClaimJSON{Epoch: c.Epoch, Owner: c.Owner, AcquiredAt: c.AcquiredAt.UTC(), AcquiredAtMs: c.AcquiredAt.UnixMilli(),
		EndReason: string(c.EndReason), FromMs: c.FromMs, HorizonMs: c.HorizonMs, Generation: c.Generation}
	j.EndedAt, j.EndedAtMs = JSONTime(c.EndedAt)
	return j
}

// JSONTime returns t as RFC 3339 and as unix milliseconds, both nil for
// the zero time: the form of times in -o json and -o yaml.
func JSONTime(t time.Time) (*time.Time, *int64) {
	if t.IsZero() {
		return nil, nil
	}
	u, ms := t.UTC(), t.UnixMilli()
	return &u, &ms
}
