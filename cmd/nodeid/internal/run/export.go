package run

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/spf13/cobra"

	"github.com/nodeid/nodeid/cmd/nodeid/internal/cli"
	"github.com/nodeid/nodeid/postgres"
)

// An export is one --export NAME=TEMPLATE of "nodeid run": a variable of
// the command's environment computed from the lease. The grammar of
// TEMPLATE (docs/export.md):
//
//	template    = { text | "{{" | "}}" | placeholder } .
//	placeholder = "{" field { op number } "}" .
//	field       = "node" | "epoch" .
//	op          = "%" | "/" .
//	number      = digit { digit } .   a decimal from 1 to 2^63-1
//
// text is any character but "{" and "}". The operations are integer
// remainder and truncating division, applied left to right: {node/32%32}
// is (node / 32) % 32. A field's value is never negative, so neither is a
// result.
type export struct {
	name, template string
	parts          []exportPart
	usesEpoch      bool       // some placeholder reads the epoch
	usesNode       bool       // some placeholder reads the node ID
	form           numberForm // whether, and how, its value reads as a number
}

// exportPart is a literal text, or a placeholder when field is set.
type exportPart struct {
	text  string
	field string // "node", "epoch", or "" for text
	ops   []exportOp
}

type exportOp struct {
	op byte // '%' or '/'
	n  int64
}

// envName is what an environment variable's name may be.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// parseExport parses NAME=TEMPLATE.
func parseExport(s string) (export, error) {
	name, tmpl, ok := strings.Cut(s, "=")
	bad := func(format string, args ...any) (export, error) {
		return export{}, fmt.Errorf(format, args...)
	}
	switch {
	case !ok:
		return bad("it must be NAME=TEMPLATE, as WORKER_ID={node%%32}")
	case !envName.MatchString(name):
		return bad("%q is not an environment variable's name: letters, digits and _, not starting with a digit", name)
	case strings.HasPrefix(strings.ToUpper(name), "NODEID_"):
		return bad("%s clashes with the variables nodeid run sets (NODEID_*): choose another name", name)
	}
	parts, err := parseTemplate(tmpl)
	if err != nil {
		return bad("template %q: %v", tmpl, err)
	}
	e := export{name: name, template: tmpl, parts: parts, form: numberFormOf(parts)}
	for _, p := range parts {
		e.usesEpoch = e.usesEpoch || p.field == "epoch"
		e.usesNode = e.usesNode || p.field == "node"
	}
	return e, nil
}

// parseTemplate parses a template of the grammar above.
func parseTemplate(t string) ([]exportPart, error) {
	var parts []exportPart
	var text strings.Builder
	flush := func() {
		if text.Len() > 0 {
			parts = append(parts, exportPart{text: text.String()})
			text.Reset()
		}
	}
	for i := 0; i < len(t); {
		switch c := t[i]; {
		case strings.HasPrefix(t[i:], "{{"):
			text.WriteByte('{')
			i += 2
		case strings.HasPrefix(t[i:], "}}"):
			text.WriteByte('}')
			i += 2
		case c == '}':
			return nil, fmt.Errorf("a lone } at offset %d (write }} for a literal one)", i)
		case c == '{':
			end := strings.IndexByte(t[i:], '}')
			if end < 0 {
				return nil, fmt.Errorf("the { at offset %d is not closed (write {{ for a literal one)", i)
			}
			p, err := parsePlaceholder(t[i+1 : i+end])
			if err != nil {
				return nil, fmt.Errorf("{%s}: %v", t[i+1:i+end], err)
			}
			flush()
			parts = append(parts, p)
			i += end + 1
		default:
			text.WriteByte(c)
			i++
		}
	}
	flush()
	return parts, nil
}

// parsePlaceholder parses what is between { and }: field { op number }.
func parsePlaceholder(s string) (exportPart, error) {
	n := strings.IndexAny(s, "%/")
	if n < 0 {
		n = len(s)
	}
	p := exportPart{field: s[:n]}
	if p.field != "node" && p.field != "epoch" {
		return p, fmt.Errorf("unknown field %q: the fields are node and epoch", p.field)
	}
	for rest := s[n:]; rest != ""; {
		op := rest[0]
		rest = rest[1:]
		j := 0
		for j < len(rest) && rest[j] >= '0' && rest[j] <= '9' {
			j++
		}
		if j == 0 {
			return p, fmt.Errorf("%c must be followed by a whole number, as %c32", op, op)
		}
		v, err := strconv.ParseInt(rest[:j], 10, 64)
		if err != nil {
			return p, fmt.Errorf("%c%s: the number is above %d", op, rest[:j], int64(math.MaxInt64))
		}
		if v == 0 {
			return p, fmt.Errorf("%c0 divides by zero", op)
		}
		p.ops = append(p.ops, exportOp{op, v})
		rest = rest[j:]
		if rest != "" && rest[0] != '%' && rest[0] != '/' {
			return p, fmt.Errorf("unexpected %q: after a number come %% or / or the closing }", rest)
		}
	}
	return p, nil
}

// value returns the export's value for a lease of node at epoch.
func (e export) value(node, epoch int64) string {
	var b strings.Builder
	for _, p := range e.parts {
		switch p.field {
		case "":
			b.WriteString(p.text)
			continue
		case "node":
			b.WriteString(strconv.FormatInt(p.eval(node), 10))
		case "epoch":
			b.WriteString(strconv.FormatInt(p.eval(epoch), 10))
		}
	}
	return b.String()
}

func (p exportPart) eval(v int64) int64 {
	for _, o := range p.ops {
		if o.op == '%' {
			v %= o.n
		} else {
			v /= o.n
		}
	}
	return v
}

// exportFlags is the repeatable --export flag.
type exportFlags struct{ list []export }

// String implements pflag.Value.
func (f *exportFlags) String() string {
	var s []string
	for _, e := range f.list {
		s = append(s, e.name+"="+e.template)
	}
	return strings.Join(s, ",")
}

// Type implements pflag.Value.
func (f *exportFlags) Type() string { return "NAME=TEMPLATE" }

// Set implements pflag.Value: it parses one NAME=TEMPLATE.
func (f *exportFlags) Set(s string) error {
	e, err := parseExport(s)
	if err != nil {
		return err
	}
	for _, o := range f.list {
		if o.name == e.name {
			return fmt.Errorf("%s is exported already (by %q)", e.name, o.name+"="+o.template)
		}
	}
	f.list = append(f.list, e)
	return nil
}

// exportHelp is what "nodeid run --help" says of --export.
const exportHelp = `

Exports: --export NAME=TEMPLATE (repeatable) puts NAME in the command's
environment, computed from the lease, for a program whose ID generator
reads a worker ID of its own rather than NODEID_NODE. TEMPLATE is text with
{node} and {epoch}, and integer operations on them, % (remainder) and /
(truncating division), applied left to right: {node%32}, {node/32%32}.
{{ and }} are literal braces. The exports that identify the generator,
numbers of {node} arithmetic and digits ({node%32}, {node/32%32},
1{node%32}, and with the whitespace, sign and 0x or # that number readers
skip or take: ' {node}', +{node}, 0x{node}; one with other text, as
pod-{node}, is a label), must tell apart every node ID of the table's
recorded range, whichever part of it --range leases: run computes them for
each and refuses (exit 2, before any claim) when two get the same values,
as the numbers a generator reads (015 is 15, or octal 13, as a leading 0
means to some readers; 08 is 0 to C's strtol; 0x10 is 16, or 0 to C's
atoi and JavaScript's parseInt(v, 10), which stop at the x: 0x{node} is
refused). One that tells them apart on its own as most readers read it
(INSTANCE={node}) is judged alone, under every reading, and the others
must tell them apart together without it. A label of {node} must tell
them apart on its own by its digits, which a program may take for its ID
(a StatefulSet-style ordinal): each run of digits that varies over the
range, and all of them together (HOSTNAME=web-{node} passes,
HOSTNAME=web-{node%32} is refused over 0-1023); one that also reads
{epoch} is refused. A number of {epoch} alone is refused over more than
one node ID. With --partition they are judged over --range alone, for a
table split between generators whose IDs never meet.
Recipes (more in docs/export.md):
  CAP (.NET):  --export 'CAP_WORKERID={node}', with a --range within the
    worker IDs CAP accepts
  MyBatis-Plus, hutool, 5-bit worker and 5-bit datacenter IDs, in a Spring
  application whose configuration has sequence.worker-id and
  sequence.datacenter-id (Spring binds SEQUENCE_WORKERID to
  sequence.worker-id); --range 0-1023:
    --export 'SEQUENCE_WORKERID={node%32}' --export 'SEQUENCE_DATACENTERID={node/32%32}'
  ShardingSphere, 10-bit worker.id:  --export 'WORKER_ID={node}', with
    worker.id=${WORKER_ID} in its Spring properties, or
    -- sh -c 'exec java -Dworker.id="$WORKER_ID" -jar app.jar'
What the warden then guarantees a generator that knows nothing of nodeid:
it starts only once this host's wall clock is past the previous holder's
horizon, so that it stamps no millisecond the node ID's earlier holders
did; it gets SIGTERM when the lease is lost, or a grace before the
deadline if no renewal has moved it, and SIGKILL at the deadline, before
anyone else can claim the node ID. What it must not do: stamp from another
host's clock (or a time it is handed) rather than this host's, and keep
minting after SIGTERM or running past the grace.`

// register adds --export to cmd and its help to cmd's.
func (f *exportFlags) register(cmd *cobra.Command) {
	cmd.Flags().Var(f, "export", "put NAME in the command's environment, TEMPLATE computed from the lease: {node}, {epoch}, % and / ('WORKER_ID={node%32}'); repeatable")
	cmd.Long += exportHelp
}

// checkExports refuses, before any claim, exports that do not tell apart
// the node IDs of the table's recorded range (whichever part of it this
// process leases: other processes lease the rest, and run the same
// generator), or, with partition, of r alone, the range this process
// leases. A table that does not exist yet gets the range --create records:
// r if given, else the default.
func checkExports(ctx context.Context, c *cli.Conn, f *exportFlags, partition, given bool, r cli.NodeRange) error {
	if len(f.list) == 0 {
		return nil
	}
	if partition {
		return cli.Usage(f.distinct(r, fmt.Sprintf("the range %s (--range, with --partition)", r), true))
	}
	table := cli.DefaultRange
	if given {
		table = r
	}
	st, err := c.Store(cli.AllNodes)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, cli.DefaultTimeout)
	defer cancel()
	tc, err := st.ReadConfig(ctx)
	switch {
	case err == nil:
		table = cli.NodeRange{Lo: tc.MinNode, Hi: tc.MaxNode}
	case postgres.SQLSTATE(err) != "42P01":
		return err
	}
	return cli.Usage(f.distinct(table, fmt.Sprintf("the range %s of table %s", table, c.Table()), false))
}

// numberForm says whether an export's value is a number, which a
// generator may read as its ID, and how it reads: its template is, once
// the text number readers skip or take as a sign or a base is set aside,
// placeholders and digits alone. Readers skip whitespace around a number
// (Python's int, JavaScript's Number, Spring's binder, which trims it; C's
// strtol the leading one) and take a leading + or - for its sign
// (Integer.parseInt, int, strconv.Atoi, Number, strtol), and 0x or 0X
// (strtol with base 0, Long.decode, int(v, 0), Number, Spring's
// NumberUtils) or # (Long.decode, NumberUtils) before hexadecimal digits.
// So " {node%32}", "+{node%32}", "0x{node%32}" are numbers as "{node%32}"
// is, and "1{node%32}" is one too; "pod-{node}" is a label.
type numberForm struct {
	numeric bool // a number: at least one placeholder, no text but the above
	hex     bool // 0x, 0X or # before the digits: read in hexadecimal
	node    bool // a placeholder reads the node ID
	epoch   bool // a placeholder reads the epoch
}

// numberFormOf returns the numberForm of the template of parts.
func numberFormOf(parts []exportPart) numberForm {
	type token struct {
		r     rune   // a character of text, if field is ""
		field string // a placeholder's field
	}
	var toks []token
	for _, p := range parts {
		if p.field != "" {
			toks = append(toks, token{field: p.field})
			continue
		}
		for _, r := range p.text {
			toks = append(toks, token{r: r})
		}
	}
	text := func(i int, chars string) bool {
		return i < len(toks) && toks[i].field == "" && strings.ContainsRune(chars, toks[i].r)
	}
	space := func(i int) bool { return i < len(toks) && toks[i].field == "" && unicode.IsSpace(toks[i].r) }
	for len(toks) > 0 && space(0) {
		toks = toks[1:]
	}
	for len(toks) > 0 && space(len(toks)-1) {
		toks = toks[:len(toks)-1]
	}
	if text(0, "+-") {
		toks = toks[1:]
	}
	var f numberForm
	switch {
	case text(0, "0") && text(1, "xX"):
		f.hex, toks = true, toks[2:]
	case text(0, "#"):
		f.hex, toks = true, toks[1:]
	}
	digits := "0123456789"
	if f.hex {
		digits += "abcdefABCDEF"
	}
	for i, t := range toks {
		switch {
		case t.field == "node":
			f.node = true
		case t.field == "epoch":
			f.epoch = true
		case !text(i, digits):
			return numberForm{}
		}
	}
	f.numeric = f.node || f.epoch
	return f
}

// identifies reports whether the export identifies the generator, as a
// worker or datacenter ID does: its value is a number of {node}
// arithmetic (numberForm: {node%32}, {node/32%32}, 1{node%32}, +{node},
// 0x{node}), which a generator may read as its ID. Any other text makes it
// a label (pod-{node}), which a generator does not read as its ID; and
// {epoch} changes with every claim.
func (e export) identifies() bool { return e.form.numeric && e.form.node && !e.form.epoch }

// epochNumber reports whether the export's value is a number of {epoch}
// alone ({epoch}, {epoch%32}), which a generator may read as its ID but
// which tells no node IDs apart: every node ID's first claim has epoch 1.
func (e export) epochNumber() bool { return e.form.numeric && e.form.epoch && !e.form.node }

// exportReading is a way generators read an identifying export's value as
// the number they take for their ID; where says in an error which readers
// it is.
type exportReading struct {
	read  func(string) string // reads the digits, once 0x or # is set aside
	where string
	// prefix says that the reading takes the leading decimal digits of the
	// value, 0x and # included, in place of read (readDecimalPrefix).
	prefix bool
}

// exportReadings are the ways generators read the digits of an
// identifying export's value, the common one first, so that a refusal
// names it when several find a collision. Each placeholder writes a whole
// number, never negative and without padding, but a template of two
// placeholders writes a leading zero where the first is 0
// ({node/100}{node%100} writes 015 for node 15), and generators read a
// leading zero in three ways. Values of different text can thus be the
// same number, and so the same worker ID. A value in hexadecimal (0x, #)
// reads so in the first three (exportNumber), and as 0 in the last, where
// the reading stops at the x or the #.
var exportReadings = []exportReading{
	{read: readDecimal},
	{read: readOctal, where: " where a leading 0 means octal (Java's Long.decode, Go's strconv.ParseInt with base 0, YAML 1.1)"},
	{read: readOctalPrefix, where: " where a leading 0 means octal and the reading stops at an 8 or 9 (C's strtol and sscanf %i, Go's fmt.Sscan)"},
	{prefix: true, where: " where the reading takes the leading decimal digits and stops at the first other character, 0 if there are none (C's atoi and strtol with base 10, JavaScript's parseInt(v, 10), which gives NaN for none): 0x and # read as 0"},
}

// exportNumber returns, written in decimal, the number rd reads from v,
// the value of an export of the numeric form f: the whitespace around it
// and a + sign are skipped, a - sign is kept (but -0 is 0), and digits
// after 0x, 0X or # are read in hexadecimal, but by a prefix reading,
// which reads the leading decimal digits; zero reports whether other
// digits have a leading zero, without which the readings of the digits
// agree.
func exportNumber(f numberForm, v string, rd exportReading) (n string, zero bool) {
	v = strings.TrimFunc(v, unicode.IsSpace)
	sign := ""
	if v != "" && (v[0] == '+' || v[0] == '-') {
		sign, v = strings.TrimPrefix(v[:1], "+"), v[1:]
	}
	switch {
	case rd.prefix:
		n = readDecimalPrefix(v)
	case f.hex:
		v = strings.TrimPrefix(strings.TrimPrefix(strings.TrimPrefix(v, "0x"), "0X"), "#")
		n = readHex(v)
	default:
		zero = len(v) > 1 && v[0] == '0'
		n = rd.read(v)
	}
	if n == "0" {
		sign = ""
	}
	return sign + n, zero
}

// readHex returns, written in decimal, the number read from the
// hexadecimal digits v (0x and # stripped); a number above 2^64-1 stays in
// hexadecimal, 0x and lower case, without leading zeros.
func readHex(v string) string {
	t := strings.TrimLeft(strings.ToLower(v), "0")
	if t == "" {
		return "0"
	}
	if n, err := strconv.ParseUint(t, 16, 64); err == nil {
		return strconv.FormatUint(n, 10)
	}
	return "0x" + t
}

// readDecimal returns, written in decimal without leading zeros, the
// number most generators read from the digits v: in decimal, leading
// zeros ignored (Java's Integer.parseInt, Python's int, Go's strconv.Atoi,
// .NET's int.Parse, JavaScript's Number). 015 is 15, node 105's 15.
func readDecimal(v string) string {
	if t := strings.TrimLeft(v, "0"); t != "" {
		return t
	}
	return "0"
}

// readDecimalPrefix returns, written in decimal without leading zeros, the
// number read from the leading decimal digits of v, 0 if it has none, as
// C's atoi and strtol with base 10 and JavaScript's parseInt(v, 10) read
// it: they stop at the first other character. 0x5 is 0, #5 is 0 (NaN to
// parseInt, for every node ID alike), and 015 is 15.
func readDecimalPrefix(v string) string {
	end := strings.IndexFunc(v, func(r rune) bool { return r < '0' || r > '9' })
	if end < 0 {
		end = len(v)
	}
	return readDecimal(v[:end])
}

// readOctal returns, written in decimal, the number read from the digits
// v where a leading 0 means octal (Java's Long.decode and
// Integer.getInteger, Go's strconv.ParseInt with base 0, YAML 1.1
// parsers, shell arithmetic). 015 is 13, node 103's 13. A value with an 8
// or 9 after its leading 0 is no octal number: Long.decode and the shell
// refuse it, but YAML 1.1 leaves it a string, which the program may then
// read in decimal, so it is read in decimal.
func readOctal(v string) string {
	if len(v) > 1 && v[0] == '0' {
		if n, err := strconv.ParseUint(v, 8, 64); err == nil {
			return strconv.FormatUint(n, 10)
		}
	}
	return readDecimal(v)
}

// readOctalPrefix returns, written in decimal, the number read from the
// digits v where a leading 0 means octal and the reading stops, without an
// error, at the first digit that is not octal (C's strtol and sscanf %i
// with base 0, Go's fmt.Sscan, Perl's oct): 08 is 0, node 0's 00, and 019
// is 1.
func readOctalPrefix(v string) string {
	if len(v) > 1 && v[0] == '0' {
		end := strings.IndexAny(v, "89")
		if end < 0 {
			end = len(v)
		}
		if n, err := strconv.ParseUint(v[:end], 8, 64); err == nil {
			return strconv.FormatUint(n, 10)
		}
	}
	return readDecimal(v)
}

// collision is two node IDs to which some exports give the same numbers
// under one of exportReadings; first says it is the first, the common one.
type collision struct {
	a, b    int64
	reading exportReading
	first   bool
}

// collide returns two node IDs of r to which the exports es give the same
// numbers under one of exportReadings, the first that finds some; ok is
// false if there are none. A reading of the digits after the first is
// applied only if some value has a leading zero, and the prefix reading
// only if some export is in hexadecimal: otherwise they read what the
// first does.
func collide(es []export, r cli.NodeRange) (c collision, ok bool) {
	hex := slices.ContainsFunc(es, func(e export) bool { return e.form.hex })
	return collideBy(r, exportReadings, hex, func(node int64, rd exportReading) (string, bool) {
		nums := make([]string, len(es))
		leadingZero := false
		for j, e := range es {
			n, zero := exportNumber(e.form, e.value(node, 0), rd)
			leadingZero = leadingZero || zero
			nums[j] = n
		}
		return strings.Join(nums, " "), leadingZero
	})
}

// collideBy returns two node IDs of r for which read gives the same key
// under one of readings, the first that finds some; ok is false if there
// are none. read returns the key of a node ID under a reading, and whether
// a number in it has a leading zero. A reading after the first is applied
// only if some number has a leading zero (the prefix reading: only if hex
// is set), as collide says.
func collideBy(r cli.NodeRange, readings []exportReading, hex bool, read func(node int64, rd exportReading) (key string, zero bool)) (c collision, ok bool) {
	leadingZero := false
	for i, rd := range readings {
		if i > 0 && !(rd.prefix && hex || !rd.prefix && leadingZero) {
			continue
		}
		seen := make(map[string]int64, min(r.Size(), 1<<16))
		for node := r.Lo; node <= r.Hi; node++ {
			key, zero := read(node, rd)
			leadingZero = leadingZero || zero
			if other, dup := seen[key]; dup {
				return collision{other, node, rd, i == 0}, true
			}
			seen[key] = node
		}
	}
	return collision{}, false
}

// constant reports whether the exports es give every node ID of r the same
// values.
func constant(es []export, r cli.NodeRange) bool {
	for _, e := range es {
		v := e.value(r.Lo, 0)
		for node := r.Lo + 1; node <= r.Hi; node++ {
			if e.value(node, 0) != v {
				return false
			}
		}
	}
	return true
}

// distinct checks that distinct node IDs of r, described by over, get
// distinct values of the exports that identify the generator, as numbers
// under each of exportReadings, since that is what the generator takes
// for its ID; partition says that r is this process's range alone.
//
// An identifying export that tells the node IDs apart on its own as most
// readers read it ({node}, INSTANCE={node} for logs, or a generator's
// whole ID) is judged alone, under every reading: the others must tell
// them apart together without it. A generator reads its ID from the
// exports it knows, and one that reads WORKER_ID={node%32} gets one
// worker ID on node IDs 0 and 32 whatever INSTANCE={node} beside it says;
// one that reads WORKER_ID={node/10}{node%10} with C's strtol gets 0 on
// node IDs 0 and 8 (00 and 08) whatever PORT=80{node%10} beside it says.
// DATACENTER_ID={node/32%32} and WORKER_ID={node%32}, which tell them
// apart only together, are read together.
//
// A label of {node} (HOSTNAME=web-{node%32}) counts for none of them, but
// must tell the node IDs apart on its own by the digits in it, which a
// program may take for its ID (labelDigits).
func (f *exportFlags) distinct(r cli.NodeRange, over string, partition bool) error {
	var (
		idents    []export
		labels    []string
		epochOnly = true
	)
	for _, e := range f.list {
		epochOnly = epochOnly && e.usesEpoch
		switch {
		case e.identifies():
			idents = append(idents, e)
		case !e.epochNumber():
			labels = append(labels, e.name+"="+e.template)
		}
	}
	if r.Size() < 2 {
		return nil
	}
	if epochOnly {
		return fmt.Errorf("--export %s: every export uses {epoch}, so none tells the node IDs %s apart; export one from {node}", f, r)
	}
	for _, e := range f.list {
		if e.epochNumber() {
			return fmt.Errorf("--export %s: %s=%s is a number of {epoch} alone, which tells no node IDs of %s apart: every node ID's first claim has epoch 1, so a generator that reads it as its ID gets the same one on each, whatever else is exported; derive it from {node}, or, where the epoch itself is wanted, read %s, which the command has",
				f, e.name, e.template, over, EnvEpoch)
		}
	}
	for _, e := range f.list {
		if e.usesNode && !e.identifies() {
			if err := f.labelDigits(e, r, over, partition); err != nil {
				return err
			}
		}
	}
	labelNote := ""
	if len(labels) > 0 {
		are := " is a label"
		if len(labels) > 1 {
			are = " are labels"
		}
		labelNote = fmt.Sprintf(" (%s%s, not an ID: only exports whose values are numbers of {node} arithmetic tell generators apart)", strings.Join(labels, " and "), are)
	}
	// The identifying exports that tell the node IDs apart on their own
	// under the first reading are judged alone, under every reading; the
	// others together.
	var alone, joint []export
	for _, e := range idents {
		switch c, ok := collide([]export{e}, r); {
		case ok && c.first:
			joint = append(joint, e)
		case ok:
			return f.refusal([]export{e}, c, over, labelNote, partition)
		default:
			alone = append(alone, e)
		}
	}
	if len(joint) == 0 || constant(joint, r) {
		// None, or each tells them apart; or what is left takes one value
		// over r, as DATACENTER_ID={node/32%32} beside WORKER_ID={node%32}
		// over 0-31: a constant tells nothing apart, and is no ID of its
		// own (DATACENTER_ID=0, written out, is no export of {node}).
		return nil
	}
	c, ok := collide(joint, r)
	if !ok {
		return nil
	}
	note := ""
	if len(alone) > 0 {
		var ds, names []string
		for _, e := range alone {
			ds = append(ds, e.name+"="+e.template)
		}
		for _, e := range joint {
			names = append(names, e.name)
		}
		tells, its, is, it := "tells", "its", "it is", "it"
		if len(alone) > 1 {
			tells, its, is, it = "tell", "their", "they are", "them"
		}
		note = fmt.Sprintf(" (%s %s every node ID apart on %s own, so %s judged alone: a generator that reads %s without %s gets one ID on both)",
			strings.Join(ds, " and "), tells, its, is, strings.Join(names, " and "), it)
	}
	return f.refusal(joint, c, over, note+labelNote, partition)
}

// refusal is the error of distinct for the exports es judged together, to
// which the node IDs of c give the same numbers; note follows what they
// get.
func (f *exportFlags) refusal(es []export, c collision, over, note string, partition bool) error {
	// values returns the exports' values for node as NAME=VALUE (quoted
	// if it has whitespace), and as NAME=NUMBER, the numbers the reading
	// reads them as.
	values := func(node int64) (vals, nums string) {
		var vs, ns []string
		for _, e := range es {
			v := e.value(node, 0)
			n, _ := exportNumber(e.form, v, c.reading)
			if strings.ContainsFunc(v, unicode.IsSpace) {
				v = strconv.Quote(v)
			}
			vs = append(vs, e.name+"="+v)
			ns = append(ns, e.name+"="+n)
		}
		return strings.Join(vs, " "), strings.Join(ns, " ")
	}
	a, nums := values(c.a)
	b, _ := values(c.b)
	get := "both get " + b
	if a != b {
		number := "number"
		if len(es) > 1 {
			number = "numbers"
		}
		get = fmt.Sprintf("get %s and %s, which read as the same %s (%s)%s", a, b, number, nums, c.reading.where)
	}
	return fmt.Errorf("--export %s: node IDs %d and %d of %s %s%s, and two processes holding them would mint the same IDs; export what tells them apart (as DATACENTER_ID={node/32%%32} beside WORKER_ID={node%%32}), %s",
		f, c.a, c.b, over, get, note, narrowAdvice(partition))
}

// narrowAdvice is a refusal's last advice: to judge the exports over
// fewer node IDs.
func narrowAdvice(partition bool) string {
	if partition {
		return "or narrow --range"
	}
	return "or, if the processes that lease the table's other node IDs run generators of their own, whose IDs never meet these, run each with its own --range and --partition"
}

// labelDigits checks e, a label of {node}: an export that reads the node
// ID and is no number of it (identifies), as POD=pod-{node} or
// HOSTNAME=web-{node%32}. No generator reads it as its ID as it is, but a
// program may take its ID from the digits in it: the last run, as the
// ordinal of a StatefulSet pod's name (int(name.rsplit('-', 1)[1]),
// ${HOSTNAME##*-}); the first, as a regular expression's search or, where
// the value starts with it, C's atoi and JavaScript's parseInt(v, 10);
// another, split out of the text; or all of them together, the rest
// stripped (re.sub(r"\D", "", v)). So every run of digits in e's value
// must tell the node IDs of r apart on its own, as the numbers of
// exportReadings (but the prefix one: a run holds digits alone), and so
// must all the digits together, as most readers read them, in decimal. A
// run that is the same for every node ID of r is the label's own text
// (k8s-{node}'s 8, pod-{node}-v2's 2), as if written out, and is not
// judged. A label that also reads the epoch is refused: its digits mix
// the node ID's with the epoch's, which changes with every claim, so they
// tell no node IDs apart for sure (nodes 1 and 11 write 112 at epochs 12
// and 2), and a run of the epoch alone is the same on every node ID's
// first claim.
func (f *exportFlags) labelDigits(e export, r cli.NodeRange, over string, partition bool) error {
	if e.usesEpoch {
		return fmt.Errorf("--export %s: %s=%s reads both {node} and {epoch}: a program may take its ID from the digits in it, and those mix the node ID's with the epoch's, which changes with every claim (node IDs 1 and 11 write 112 at epochs 12 and 2), so they tell no node IDs of %s apart for sure; export the epoch on its own (as GEN=g{epoch}), or read %s, which the command has",
			f, e.name, e.template, over, EnvEpoch)
	}
	// runs is the number of runs of digits, which every node ID's value
	// has alike: a placeholder writes one digit or more, and the text
	// between them is fixed. digits returns a node ID's run i, or, for
	// i == runs, all of them together.
	runs := len(digitRuns(e.value(r.Lo, 0)))
	digits := func(node int64, i int) string {
		d := digitRuns(e.value(node, 0))
		if i == runs {
			return strings.Join(d, "")
		}
		return d[i]
	}
	// The last run first, as the commonest reading, then the others, then
	// all together, unless there is one run, which is all of them.
	order := []int{runs - 1}
	for i := 0; i < runs-1; i++ {
		order = append(order, i)
	}
	if runs > 1 {
		order = append(order, runs)
	}
	for _, i := range order {
		first, varies := digits(r.Lo, i), false
		for node := r.Lo + 1; node <= r.Hi && !varies; node++ {
			varies = digits(node, i) != first
		}
		if !varies {
			continue
		}
		readings := exportReadings
		if i == runs {
			readings = exportReadings[:1]
		}
		c, ok := collideBy(r, readings, false, func(node int64, rd exportReading) (string, bool) {
			return exportNumber(numberForm{}, digits(node, i), rd)
		})
		if !ok {
			continue
		}
		which := fmt.Sprintf("digits of run %d of %d", i+1, runs)
		switch {
		case runs == 1:
			which = "digits"
		case i == runs:
			which = "digits together"
		case i == runs-1:
			which = "last digits"
		case i == 0:
			which = "first digits"
		}
		value := func(node int64) string {
			v := e.value(node, 0)
			if strings.ContainsFunc(v, unicode.IsSpace) {
				v = strconv.Quote(v)
			}
			return e.name + "=" + v
		}
		get := "both get " + value(c.a)
		if a, b := value(c.a), value(c.b); a != b {
			get = "get " + a + " and " + b
		}
		n, _ := exportNumber(numberForm{}, digits(c.a, i), c.reading)
		return fmt.Errorf("--export %s: node IDs %d and %d of %s %s, whose %s read as the same number (%s)%s: %s=%s is a label, but a program may take its worker ID from the digits in it, as from a StatefulSet pod's ordinal (int(name.rsplit('-', 1)[1])), and two processes holding them would mint the same IDs; make every run of digits in it that changes with the node ID tell the node IDs apart, as the whole {node} does (web-{node}), or derive the label in the command from %s, %s",
			f, c.a, c.b, over, get, which, n, c.reading.where, e.name, e.template, EnvNode, narrowAdvice(partition))
	}
	return nil
}

// digitRuns returns the runs of decimal digits in v, in order: w8-d10 has
// 8 and 10.
func digitRuns(v string) []string {
	var runs []string
	for {
		i := strings.IndexAny(v, "0123456789")
		if i < 0 {
			return runs
		}
		v = v[i:]
		j := strings.IndexFunc(v, func(r rune) bool { return r < '0' || r > '9' })
		if j < 0 {
			j = len(v)
		}
		runs, v = append(runs, v[:j]), v[j:]
	}
}

// addTo puts the exports' values for node and epoch into env.
func (f *exportFlags) addTo(env map[string]string, node, epoch int64) {
	if f == nil {
		return
	}
	for _, e := range f.list {
		env[e.name] = e.value(node, epoch)
	}
}

// exportedEnv returns, as NAME=VALUE sorted by name, the variables of
// lease that are not nodeid's own (NODEID_*): the exports.
func exportedEnv(lease map[string]string) []string {
	var env []string
	for k, v := range lease {
		if !strings.HasPrefix(k, "NODEID_") {
			env = append(env, k+"="+v)
		}
	}
	slices.Sort(env)
	return env
}
