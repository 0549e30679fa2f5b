package holder

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/nodeid/nodeid"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/cli"
)

// lineHandler is a slog.Handler that writes each record as one line in the
// command's own format, "nodeid: MESSAGE (key=value, ...)", so that the
// library's log lines read like the rest of the command's messages.
type lineHandler struct {
	w     io.Writer
	level slog.Level
	mu    *sync.Mutex
	attrs []string // rendered by WithAttrs, group prefix included
	group string   // prefix of later attributes' keys
}

// NewLogger returns a logger that writes the records at or above level to
// w, one line each, in the command's own format.
func NewLogger(w io.Writer, level slog.Level) *slog.Logger { return slog.New(newLineHandler(w, level)) }

func newLineHandler(w io.Writer, level slog.Level) *lineHandler {
	return &lineHandler{w: w, level: level, mu: new(sync.Mutex)}
}

func (h *lineHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level }

func (h *lineHandler) Handle(_ context.Context, r slog.Record) error {
	if isLoss(r) {
		return nil
	}
	parts := append([]string(nil), h.attrs...)
	r.Attrs(func(a slog.Attr) bool {
		parts = appendAttr(parts, h.group, a)
		return true
	})
	line := "nodeid: " + strings.TrimPrefix(r.Message, "nodeid: ")
	if len(parts) > 0 {
		line += " (" + strings.Join(parts, ", ") + ")"
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	_, err := io.WriteString(h.w, cli.OneLine(line)+"\n")
	return err
}

func (h *lineHandler) WithAttrs(as []slog.Attr) slog.Handler {
	c := *h
	c.attrs = append([]string(nil), h.attrs...)
	for _, a := range as {
		c.attrs = appendAttr(c.attrs, h.group, a)
	}
	return &c
}

func (h *lineHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	c := *h
	c.group = h.group + name + "."
	return &c
}

// appendAttr renders a as key=value: errors without their "nodeid: "
// prefix, durations to the millisecond, groups flattened.
func appendAttr(parts []string, prefix string, a slog.Attr) []string {
	v := a.Value.Resolve()
	if a.Equal(slog.Attr{}) {
		return parts
	}
	if v.Kind() == slog.KindGroup {
		p := prefix
		if a.Key != "" {
			p += a.Key + "."
		}
		for _, g := range v.Group() {
			parts = appendAttr(parts, p, g)
		}
		return parts
	}
	var s string
	switch v.Kind() {
	case slog.KindDuration:
		s = v.Duration().Round(time.Millisecond).String()
	case slog.KindTime:
		s = v.Time().UTC().Format("2006-01-02T15:04:05.000Z07:00")
	case slog.KindAny:
		if err, ok := v.Any().(error); ok {
			s = errorText(err)
		} else {
			s = fmt.Sprint(v.Any())
		}
	default:
		s = v.String()
	}
	return append(parts, prefix+a.Key+"="+s)
}

// isLoss reports whether r is the library's record of a lost lease, which
// the command does not print: run and serve say each loss themselves, with
// what they do about it (stop the command, claim again), in one line.
func isLoss(r slog.Record) bool {
	if r.Level < slog.LevelError {
		return false
	}
	loss := false
	r.Attrs(func(a slog.Attr) bool {
		if err, ok := a.Value.Resolve().Any().(error); ok {
			var end *nodeid.EndError
			loss = errors.As(err, &end) && !errors.Is(end.Cause, nodeid.ErrReleased)
		}
		return !loss
	})
	return loss
}

// errorText is err's message without the "nodeid: " prefix, and, for a
// failure to connect, with each address's cause once: pgx's message
// breaks lines between addresses and names each address twice ("ADDR
// (HOST): dial error: dial tcp ADDR: connect: connection refused"), which
// reads, on one line, as a run of escapes and repeats.
func errorText(err error) string {
	s := strings.TrimPrefix(err.Error(), "nodeid: ")
	var ce *pgconn.ConnectError
	if !errors.As(err, &ce) || ce.Config == nil {
		return s
	}
	prefix, _ := strings.CutSuffix(s, ce.Error())
	if prefix == s {
		prefix = ""
	}
	inner := errors.Unwrap(ce)
	if inner == nil {
		return s
	}
	errs := []error{inner}
	if j, ok := inner.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	causes := make([]string, 0, len(errs))
	for _, e := range errs {
		// pgx tries an address twice with sslmode=prefer: with TLS, then
		// without; the same cause is said once.
		if c := dialCause(e); !slices.Contains(causes, c) {
			causes = append(causes, c)
		}
	}
	return fmt.Sprintf("%scannot connect to database %q as user %q: %s", prefix, ce.Config.Database, ce.Config.User, strings.Join(causes, "; "))
}

// dialCause is what went wrong in one attempt to connect: the address and
// the system's reason for a failed dial, else the attempt's own message on
// one line.
func dialCause(err error) string {
	var op *net.OpError
	if !errors.As(err, &op) || op.Addr == nil {
		return strings.Join(strings.Fields(err.Error()), " ")
	}
	cause := op.Err
	var se *os.SyscallError
	if errors.As(cause, &se) {
		cause = se.Err
	}
	return op.Addr.String() + ": " + cause.Error()
}
