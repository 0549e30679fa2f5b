package run

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

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
	usesEpoch      bool // some placeholder reads the epoch
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
	e := export{name: name, template: tmpl, parts: parts}
	for _, p := range parts {
		e.usesEpoch = e.usesEpoch || p.field == "epoch"
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
those of {node} arithmetic and digits alone ({node%32}, {node/32%32},
1{node%32}; one with other text, as pod-{node}, is a label), must tell
apart every node ID of the table's recorded range, whichever part of it
--range leases: run computes them for each and refuses (exit 2, before any
claim) when two get the same values, as the numbers a generator reads (015
is 15, or octal 13, as a leading 0 means to some readers; 08 is 0 to C's
strtol). With --partition they are judged over
--range alone, for a table split between generators whose IDs never meet.
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
What the fence then guarantees a generator that knows nothing of nodeid:
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

// identifies reports whether the export identifies the generator, as a
// worker or datacenter ID does: its template is {node} arithmetic and
// digits alone ({node%32}, {node/32%32}, 1{node%32}), so that its value is
// a number, which a generator may read as its ID. Any other text makes it
// a label (pod-{node}), which a generator does not read as its ID; and
// {epoch} changes with every claim.
func (e export) identifies() bool {
	node := false
	for _, p := range e.parts {
		switch {
		case p.field == "node":
			node = true
		case p.field != "" || strings.Trim(p.text, "0123456789") != "":
			return false
		}
	}
	return node
}

// exportReadings are the ways generators read an identifying export's
// value as the number they take for their ID, the common one first, so
// that a refusal names it when both find a collision; where says in an
// error which readers the collision is for. The value is digits alone:
// each placeholder writes a whole number, never negative and without
// padding, and any text but digits makes the export a label, so no sign or
// space can occur. But a template of two placeholders writes a leading
// zero where the first is 0 ({node/100}{node%100} writes 015 for node 15),
// and generators read a leading zero in three ways. Values of different
// text can thus be the same number, and so the same worker ID.
var exportReadings = []struct {
	read  func(string) string
	where string
}{
	{readDecimal, ""},
	{readOctal, " where a leading 0 means octal (Java's Long.decode, Go's strconv.ParseInt with base 0, YAML 1.1)"},
	{readOctalPrefix, " where a leading 0 means octal and the reading stops at an 8 or 9 (C's strtol and sscanf %i, Go's fmt.Sscan)"},
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

// distinct checks that distinct node IDs of r, described by over, get
// distinct values of the exports that identify the generator, as numbers
// under each of exportReadings, since that is what the generator takes
// for its ID; partition says that r is this process's range alone.
func (f *exportFlags) distinct(r cli.NodeRange, over string, partition bool) error {
	var (
		idents    []export
		labels    []string
		epochOnly = true
	)
	for _, e := range f.list {
		epochOnly = epochOnly && e.usesEpoch
		if e.identifies() {
			idents = append(idents, e)
		} else {
			labels = append(labels, e.name+"="+e.template)
		}
	}
	switch {
	case r.Size() < 2:
		return nil
	case epochOnly:
		return fmt.Errorf("--export %s: every export uses {epoch}, so none tells the node IDs %s apart; export one from {node}", f, r)
	case len(idents) == 0:
		return nil // labels only: the generator takes its ID from elsewhere (NODEID_NODE)
	}
	// values returns the exports' values for node as NAME=VALUE, and as
	// NAME=NUMBER, the numbers read reads them as; zero reports whether a
	// value has a leading zero, without which the readings agree.
	values := func(node int64, read func(string) string) (vals, nums []string, zero bool) {
		for _, e := range idents {
			v := e.value(node, 0)
			zero = zero || len(v) > 1 && v[0] == '0'
			vals = append(vals, e.name+"="+v)
			nums = append(nums, e.name+"="+read(v))
		}
		return vals, nums, zero
	}
	leadingZero := false
	for i, rd := range exportReadings {
		if i > 0 && !leadingZero {
			break
		}
		seen := make(map[string]int64, min(r.Size(), 1<<16))
		for node := r.Lo; node <= r.Hi; node++ {
			vals, nums, zero := values(node, rd.read)
			leadingZero = leadingZero || zero
			key := strings.Join(nums, " ")
			other, dup := seen[key]
			if !dup {
				seen[key] = node
				continue
			}
			otherVals, _, _ := values(other, rd.read)
			get := "both get " + strings.Join(vals, " ")
			if a, b := strings.Join(otherVals, " "), strings.Join(vals, " "); a != b {
				number := "number"
				if len(idents) > 1 {
					number = "numbers"
				}
				get = fmt.Sprintf("get %s and %s, which read as the same %s (%s)%s", a, b, number, strings.Join(nums, " "), rd.where)
			}
			note := ""
			if len(labels) > 0 {
				are := " is a label"
				if len(labels) > 1 {
					are = " are labels"
				}
				note = fmt.Sprintf(" (%s%s, not an ID: only exports of {node} arithmetic alone tell generators apart)", strings.Join(labels, " and "), are)
			}
			advice := "or narrow --range"
			if !partition {
				advice = "or, if the processes that lease the table's other node IDs run generators of their own, whose IDs never meet these, run each with its own --range and --partition"
			}
			return fmt.Errorf("--export %s: node IDs %d and %d of %s %s%s, and two processes holding them would mint the same IDs; export what tells them apart (as DATACENTER_ID={node/32%%32} beside WORKER_ID={node%%32}), %s",
				f, other, node, over, get, note, advice)
		}
	}
	return nil
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
