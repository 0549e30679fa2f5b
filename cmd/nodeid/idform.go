package main

import (
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"

	bw "github.com/bwmarrin/snowflake"
)

// idForm is the string form an ID was written in.
type idForm string

// The string forms of an ID that the command reads: those of
// github.com/bwmarrin/snowflake's ID.String, ID.Base58 and ID.Base64.
const (
	formDecimal idForm = "decimal"
	formBase58  idForm = "base58"
	formBase64  idForm = "base64"
)

// Prefixes that force a form.
var formPrefixes = []struct {
	prefix string
	form   idForm
}{{"dec:", formDecimal}, {"b58:", formBase58}, {"b64:", formBase64}}

// base58Alphabet is bwmarrin's (Flickr's): no 0, O, I or l.
const base58Alphabet = "123456789abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ"

// idFormRules documents parseID for help texts and errors.
const idFormRules = `An ID may be written in any of the string forms of github.com/bwmarrin/snowflake:
decimal (ID.String), Base58 (ID.Base58) or Base64 (ID.Base64, the standard
Base64 of the decimal digits). The form is detected without guessing:
  - only digits 0-9: decimal;
  - otherwise, the ID is read as Base58 (bwmarrin's alphabet, no leading "1")
    and as Base64 (padded standard Base64 of a decimal ID); exactly one of
    them must succeed, else the ID is refused as malformed or ambiguous;
  - a prefix dec:, b58: or b64: forces the form, e.g. b58:123 (a Base58
    string of digits only) or b64:MTEx (a string valid in both forms).
IDs are non-negative 63-bit numbers.`

// parseID reads an ID in one of its string forms, by the rules of
// idFormRules, and says which form it was.
func parseID(s string) (bw.ID, idForm, error) {
	for _, p := range formPrefixes {
		if rest, ok := strings.CutPrefix(s, p.prefix); ok {
			id, err := parseIDAs(rest, p.form)
			if err != nil {
				return 0, "", fmt.Errorf("ID %q: %w", s, err)
			}
			return id, p.form, nil
		}
	}
	if s == "" {
		return 0, "", fmt.Errorf("ID is empty")
	}
	if isDigits(s) {
		id, err := parseIDAs(s, formDecimal)
		if err != nil {
			return 0, "", fmt.Errorf("ID %q: %w", s, err)
		}
		return id, formDecimal, nil
	}
	if s[0] == '-' && isDigits(s[1:]) {
		return 0, "", fmt.Errorf("ID %q is negative: IDs are 0 to %d", s, int64(1<<63-1))
	}
	id58, err58 := parseIDAs(s, formBase58)
	id64, err64 := parseIDAs(s, formBase64)
	switch {
	case err58 == nil && err64 == nil:
		return 0, "", fmt.Errorf("ID %q is ambiguous: Base58 for %d and Base64 for %d; write b58:%s or b64:%s", s, id58, id64, s, s)
	case err58 == nil:
		return id58, formBase58, nil
	case err64 == nil:
		return id64, formBase64, nil
	}
	return 0, "", fmt.Errorf("ID %q is not a Snowflake ID: not decimal digits, not Base58 (%v), not Base64 (%v)", s, err58, err64)
}

// parseIDAs reads s in one given form, which must be canonical: the form
// the ID's own method would produce.
func parseIDAs(s string, form idForm) (bw.ID, error) {
	switch form {
	case formDecimal:
		if !isDigits(s) || s == "" {
			return 0, fmt.Errorf("decimal IDs are made of digits 0-9 only")
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("out of range: IDs are 0 to %d", int64(1<<63-1))
		}
		return bw.ID(n), nil
	case formBase58:
		return parseBase58(s)
	case formBase64:
		return parseBase64(s)
	}
	return 0, fmt.Errorf("unknown form %q", form)
}

func parseBase58(s string) (bw.ID, error) {
	if s == "" {
		return 0, fmt.Errorf("empty")
	}
	if len(s) > 1 && s[0] == '1' {
		return 0, fmt.Errorf("leading \"1\" (a zero digit)")
	}
	var n int64
	for i := 0; i < len(s); i++ {
		d := strings.IndexByte(base58Alphabet, s[i])
		if d < 0 {
			return 0, fmt.Errorf("character %q is not in the Base58 alphabet", s[i])
		}
		if n > (1<<63-1-int64(d))/58 {
			return 0, fmt.Errorf("out of range")
		}
		n = n*58 + int64(d)
	}
	return bw.ID(n), nil
}

func parseBase64(s string) (bw.ID, error) {
	b, err := base64.StdEncoding.Strict().DecodeString(s)
	if err != nil {
		return 0, fmt.Errorf("malformed")
	}
	dec := string(b)
	if !isDigits(dec) || dec == "" || (len(dec) > 1 && dec[0] == '0') {
		return 0, fmt.Errorf("does not hold a decimal ID")
	}
	n, err := strconv.ParseInt(dec, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("out of range")
	}
	if base64.StdEncoding.EncodeToString(b) != s {
		return 0, fmt.Errorf("not canonical")
	}
	return bw.ID(n), nil
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}
