package ids

import (
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"

	bw "github.com/bwmarrin/snowflake"
	"github.com/spf13/cobra"
)

// idForm is the string form an ID was written in.
type idForm string

// The string forms of an ID that the command reads: those of
// github.com/bwmarrin/snowflake's ID.String, ID.Base58 and ID.Base64; and
// formAuto, which reads only the forms that cannot be mistaken.
const (
	formDecimal idForm = "decimal"
	formBase58  idForm = "base58"
	formBase64  idForm = "base64"
	formAuto    idForm = "auto"
)

// name is how messages and tables write the form.
func (f idForm) name() string {
	switch f {
	case formBase58:
		return "Base58"
	case formBase64:
		return "Base64"
	}
	return string(f)
}

// Prefixes that force a form, and the values of --format.
var formPrefixes = []struct {
	prefix string
	form   idForm
}{{"dec:", formDecimal}, {"b58:", formBase58}, {"b64:", formBase64}}

// base58Alphabet is bwmarrin's (Flickr's): no 0, O, I or l.
const base58Alphabet = "123456789abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ"

// idFormRules documents parseID for help texts.
const idFormRules = `An ID may be written in any of the string forms of github.com/bwmarrin/snowflake:
decimal (ID.String), Base58 (ID.Base58) or Base64 (ID.Base64, the standard
Base64 of the decimal digits). --format auto, the default, reads only the
forms that cannot be mistaken:
  - only digits 0-9: decimal;
  - padded standard Base64 of a decimal ID, as ID.Base64 writes it: Base64
    (no word or typo is one by chance); a string that is also valid Base58
    is refused as ambiguous;
  - anything else is refused: Base58 reads almost any word of letters and
    digits ("notanumber" included), so it is read only when asked for.
--format dec, b58 or b64 reads every ID in that form; a prefix dec:, b58: or
b64: reads one ID in that form, whatever --format says (b58:5WoiFjbTMNG).
The output says which form each ID was read as. IDs are non-negative 63-bit
numbers.`

// formatFlag is the --format flag of decode and who.
type formatFlag struct{ form idForm }

func (f *formatFlag) register(cmd *cobra.Command) {
	f.form = formAuto
	cmd.Flags().Var(f, "format", "the form the IDs are written in: auto (decimal or Base64; Base58 only when asked for), dec, b58 or b64")
	_ = cmd.RegisterFlagCompletionFunc("format", cobra.FixedCompletions(
		[]string{"auto", "dec", "b58", "b64"}, cobra.ShellCompDirectiveNoFileComp))
}

// Set implements pflag.Value.
func (f *formatFlag) Set(s string) error {
	if s == string(formAuto) {
		f.form = formAuto
		return nil
	}
	for _, p := range formPrefixes {
		if s+":" == p.prefix {
			f.form = p.form
			return nil
		}
	}
	return fmt.Errorf("%q is not a form: write auto, dec, b58 or b64", s)
}

// String implements pflag.Value.
func (f *formatFlag) String() string {
	for _, p := range formPrefixes {
		if p.form == f.form {
			return strings.TrimSuffix(p.prefix, ":")
		}
	}
	return string(f.form)
}

// Type implements pflag.Value.
func (f *formatFlag) Type() string { return "form" }

// parseID reads an ID by the rules of idFormRules: in form def (formAuto,
// or the one of --format) unless a prefix names another. It says which form
// the ID was read as.
func parseID(s string, def idForm) (bw.ID, idForm, error) {
	form, rest := def, s
	for _, p := range formPrefixes {
		if r, ok := strings.CutPrefix(s, p.prefix); ok {
			form, rest = p.form, r
			break
		}
	}
	if form != formAuto {
		id, err := parseIDAs(rest, form)
		if err != nil {
			return 0, "", fmt.Errorf("ID %q as %s: %w", s, form.name(), err)
		}
		return id, form, nil
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
	case err64 == nil:
		return id64, formBase64, nil
	case err58 == nil:
		return 0, "", fmt.Errorf("ID %q is neither decimal nor Base64; as Base58 it would be %d, but Base58 is read only when asked for: write b58:%s or pass --format b58",
			s, id58, s)
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
