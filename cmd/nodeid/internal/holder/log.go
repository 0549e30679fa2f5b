package holder

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

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
			s = strings.TrimPrefix(err.Error(), "nodeid: ")
		} else {
			s = fmt.Sprint(v.Any())
		}
	default:
		s = v.String()
	}
	return append(parts, prefix+a.Key+"="+s)
}
