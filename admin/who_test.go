package admin_test

import (
	"testing"
	"time"
)

// sinceTimeZero is a clock skew back to time zero, under which only the
// horizons bound a claim's stamps.
func sinceTimeZero() time.Duration { return time.Since(time.UnixMilli(0)) + time.Hour }

// TestWhoBoundedBelow: a claim may have stamped only after the previous
// holder's horizon and no earlier than its own acquisition less the skew
// allowed: an ID stamped long before any claim is nobody's, even that of
// the node ID's first claim.
func TestWhoBoundedBelow(t *testing.T) {
	t.Parallel()
	st, _, _ := newStore(t, withNodes(0, 0))
	ctx := ctxT(t)
	if err := st.Apply(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	const (
		t1 = int64(1767225600250) // 2026-01-01T00:00:00.250Z; acquired at .250900
		h1 = t1 + 60_000          // the first claim's horizon
		t2 = t1 + 3_600_000       // the second claim, an hour later, still open
		h2 = t2 + 60_000
	)
	_, err := st.DB().ExecContext(ctx, `
		INSERT INTO snowflake_nodes_history (node_id, epoch, owner, acquired_at, from_ms, ended_at, end_reason, horizon_ms, generation) VALUES
		(0, 1, 'a', to_timestamp($1::float8 / 1000) + interval '900 microseconds', 0, to_timestamp($2::float8 / 1000), 'released', $2, 1),
		(0, 2, 'b', to_timestamp($3::float8 / 1000), $2, NULL, NULL, NULL, 1)`, t1, h1, t2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.DB().ExecContext(ctx, `UPDATE snowflake_nodes SET owner = 'b', epoch = 2, horizon_ms = $1 WHERE node_id = 0`, h2); err != nil {
		t.Fatal(err)
	}
	const skew = 10 * time.Second
	for _, c := range []struct {
		ms   int64
		skew time.Duration
		want string // owner, or "" for none
	}{
		{t1, 0, "a"}, // its millisecond, floored: partly after the claim
		{t1 - 1, 0, ""},
		{t1 - 1, time.Millisecond, "a"},
		{t1 - 10_000, skew, "a"},
		{t1 - 10_001, skew, ""},
		{1577836800000, skew, ""}, // 2020: before any claim, whatever from_ms says
		{h1, skew, "a"},
		{h1 + 1, skew, ""}, // after a's horizon, long before b was acquired
		{h1 + 1, sinceTimeZero(), "b"},
		{t2 - 10_000, skew, "b"},
		{t2 - 10_001, skew, ""},
		{t2, 0, "b"},
		{h2, 0, "b"},
		{h2 + 1, skew, ""},
	} {
		who, err := st.Who(ctx, 0, c.ms, c.skew)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case c.want == "" && len(who) != 0:
			t.Errorf("Who(ms %d, skew %s) = %+v, want nobody", c.ms, c.skew, who)
		case c.want != "" && (len(who) != 1 || who[0].Owner != c.want):
			t.Errorf("Who(ms %d, skew %s) = %+v, want exactly %q", c.ms, c.skew, who, c.want)
		}
	}
}
