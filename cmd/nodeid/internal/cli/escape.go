package cli

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Printable returns s as it may be printed to a terminal: unchanged if it is
// valid UTF-8 made only of printable characters (in the sense of
// strconv.IsPrint: letters, marks, numbers, punctuation, symbols and the
// ASCII space), otherwise quoted like strconv.Quote, which escapes every
// control character, escape sequence, formatting character and invalid
// byte. Owner names and history rows come from other processes: they must
// never move the cursor or recolour the terminal. Strings that would read as
// quoted or as the "-" placeholder are quoted too, so that the output is
// unambiguous.
func Printable(s string) string {
	if s == "-" || strings.HasPrefix(s, `"`) || !utf8.ValidString(s) {
		return strconv.Quote(s)
	}
	for _, r := range s {
		if !strconv.IsPrint(r) {
			return strconv.Quote(s)
		}
	}
	return s
}

// orDash returns Printable(s), or "-" for the empty string.
func OrDash(s string) string {
	if s == "" {
		return "-"
	}
	return Printable(s)
}

// OneLine makes an error message fit on one line of a terminal: line breaks
// become "; ", and every other non-printable character is escaped.
func OneLine(s string) string {
	s = strings.TrimSpace(s)
	s = strings.NewReplacer("\r\n", "; ", "\n", "; ", "\r", "; ").Replace(s)
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	var b strings.Builder
	for _, r := range s {
		if strconv.IsPrint(r) {
			b.WriteRune(r)
			continue
		}
		q := strconv.QuoteRune(r)
		b.WriteString(q[1 : len(q)-1])
	}
	return b.String()
}

// jsonSafe escapes, as \uXXXX, every character of JSON text that is not
// printable and not JSON's own whitespace. encoding/json leaves DEL, the C1
// controls (among them the one-byte CSI, U+009B) and formatting characters
// such as U+202E raw; inside strings they become escapes, which decode to
// the same value.
func jsonSafe(b []byte) []byte { return escapeUnprintable(b, false) }

// escapeQuoted escapes, as \uXXXX (or \UXXXXXXXX beyond U+FFFF: YAML has
// no UTF-16 surrogate escapes), every character of YAML text that is not
// printable and not a newline. The YAML encoder escapes the control
// characters itself but leaves formatting characters such as U+202E raw;
// writeYAML double-quotes every string that holds one, and inside a
// double-quoted scalar the escape reads back as the same character.
func escapeQuoted(b []byte) []byte { return escapeUnprintable(b, true) }

func escapeUnprintable(b []byte, yaml bool) []byte {
	if !needsJSONEscape(b) {
		return b
	}
	var out bytes.Buffer
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		switch {
		case r == '\n' || r == '\t' || r == ' ' || r == '\r' || strconv.IsPrint(r):
			out.Write(b[:size])
		case r > 0xFFFF && yaml:
			fmt.Fprintf(&out, `\U%08x`, r)
		case r > 0xFFFF:
			r1, r2 := utf16.EncodeRune(r)
			fmt.Fprintf(&out, `\u%04x\u%04x`, r1, r2)
		default:
			fmt.Fprintf(&out, `\u%04x`, r)
		}
		b = b[size:]
	}
	return out.Bytes()
}

func needsJSONEscape(b []byte) bool {
	for _, c := range b {
		if c >= 0x7f {
			return true
		}
	}
	return false
}
