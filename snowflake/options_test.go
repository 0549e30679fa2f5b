package snowflake

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nodeid/nodeid"
)

// WithLayout checks its layout itself: a bad one is refused by the option,
// before New binds the lease, with an error that matches
// nodeid.ErrInvalidOption, names the option, the field and the rule, and
// says "snowflake:" once.
func TestWithLayoutError(t *testing.T) {
	for _, c := range []struct {
		l    Layout
		want string
	}{
		{Layout{NodeBits: 0, StepBits: 12}, "snowflake: WithLayout: layout node bits 0: at least 1 is needed"},
		{Layout{NodeBits: 10, StepBits: 0}, "snowflake: WithLayout: layout step bits 0: at least 1 is needed"},
		{Layout{Origin: -1, NodeBits: 10, StepBits: 12}, "snowflake: WithLayout: layout origin -1 is before 1970"},
		{Layout{TimeUnit: 1500 * time.Microsecond, NodeBits: 10, StepBits: 12}, "snowflake: WithLayout: layout time unit 1.5ms is not a whole number of milliseconds from 1ms to 1s"},
		{Layout{TotalBits: 64, NodeBits: 10, StepBits: 12}, "snowflake: WithLayout: layout total bits 64: at most 63 (the sign bit stays 0)"},
		{Layout{NodeBits: 20, StepBits: 12}, "snowflake: WithLayout: layout node bits 20 + step bits 12 leave 31 time bits of 63; at least 32 are needed"},
		{Layout{TotalBits: JSSafeBits, NodeBits: 10, StepBits: 12}, "snowflake: WithLayout: layout node bits 10 + step bits 12 leave 31 time bits of 53; at least 32 are needed"},
		{Layout{NodeBits: 10, StepBits: 4, EpochBits: 4}, "snowflake: WithLayout: layout epoch bits 4 leave 0 of the 4 step bits to count IDs; at least 1 is needed"},
	} {
		var cfg config
		err := WithLayout(c.l)(&cfg)
		if err == nil || err.Error() != c.want || !errors.Is(err, nodeid.ErrInvalidOption) {
			t.Errorf("WithLayout(%+v) = %v; want %q matching ErrInvalidOption", c.l, err, c.want)
		}
		if cfg.layout != (Layout{}) {
			t.Errorf("WithLayout(%+v) set the layout it refused", c.l)
		}
		// The same rule, from Validate, says "snowflake:" once too.
		if err := c.l.Validate(); err == nil || err.Error() != "snowflake: "+strings.TrimPrefix(c.want, "snowflake: WithLayout: ") {
			t.Errorf("Validate(%+v) = %v", c.l, err)
		}

		l := newFake(1, 1, 0)
		_, err = newGenerator(l, WithLayout(c.l))
		if err == nil || err.Error() != c.want || !errors.Is(err, nodeid.ErrInvalidOption) {
			t.Errorf("New with WithLayout(%+v) = %v; want %q", c.l, err, c.want)
		}
		if _, err := newGenerator(l); err != nil {
			t.Errorf("New after a refused layout: %v; the refusal must leave the lease unbound", err)
		}
	}
}
