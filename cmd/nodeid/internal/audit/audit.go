package audit

import (
	"context"
	"io"
	"os"
	"runtime/debug"
	"strings"
	"time"
	"unicode"

	"github.com/spf13/cobra"

	"github.com/nodeid/nodeid/cmd/nodeid/internal/cli"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/idlayout"
)

// maxByValues bounds the distinct values of --by: a column that tells
// processes apart has a value per process, not per row.
const maxByValues = 1 << 20

// memoryLimit is the soft limit of the Go heap during an audit, so that
// the garbage collector works before an audit nears 256 MB.
const memoryLimit = 192 << 20

// defaultWithin is the default of --within.
const defaultWithin = time.Minute

// Options are the arguments and flags of audit.
type Options struct {
	Env  *cli.Env
	Conn *cli.Conn // the command's connection, set when it runs

	Files    []string // the files of IDs; none, or "-", for standard input
	Query    string
	By       string
	Within   time.Duration
	Examples int
	TempDir  string
	Layout   idlayout.LayoutFlags
	Output   cli.OutputFlag

	layout  idlayout.IDLayout // validated by Validate
	chunk   int               // records sorted in memory at once; defaultChunk
	spilled int               // sorted runs spilled to disk, once audited
}

// Validate checks the layout, the output format and the input.
func (o *Options) Validate() error {
	l, err := o.Layout.Layout()
	if err != nil {
		return err
	}
	o.layout = l
	if err := o.Output.Check(); err != nil {
		return err
	}
	switch {
	case o.Query != "" && len(o.Files) > 0:
		return cli.Usagef("--query and files both give the IDs: give one of them")
	case o.Query != "" && !isSelect(o.Query):
		return cli.Usagef("--query %s: it must be a SELECT (or WITH, VALUES, TABLE) whose first column is the ID; audit only reads", cli.Printable(firstWord(o.Query)+" ..."))
	case o.Within < 0:
		return cli.Usagef("--within %s: it must not be negative", o.Within)
	case o.Examples < 0 || o.Examples > 100:
		return cli.Usagef("--examples %d: it must be 0 to 100", o.Examples)
	}
	if o.TempDir != "" {
		if fi, err := os.Stat(o.TempDir); err != nil || !fi.IsDir() {
			return cli.Usagef("--temp-dir %s: it must be an existing directory", cli.Printable(o.TempDir))
		}
	}
	if o.chunk == 0 {
		o.chunk = defaultChunk
	}
	return nil
}

// NewCmdAudit returns "nodeid audit". runF, if not nil, runs instead of the
// command's own work once the options are valid.
func NewCmdAudit(env *cli.Env, runF func(context.Context, *Options) error) *cobra.Command {
	o := &Options{Env: env}
	cmd := &cobra.Command{
		Use:   "audit [FILE...] | audit --query SQL",
		Short: "Find duplicate IDs, and node fields two processes used at once, in a column of IDs",
		Long: `Read 64-bit Snowflake IDs, split each in its layout, and report the IDs read
more than once and, per node field, the time ranges in which two different
processes must have used it. It needs no lease table: point it at a column
of IDs from any generator.

The IDs come from FILEs (or standard input, with none or "-"), one decimal
ID a line; or from --query, a SELECT whose first column is the ID, streamed
from PostgreSQL (--dsn, DATABASE_URL or the libpq environment) through a
server-side cursor in a read-only transaction, 10,000 rows a fetch, each
within --timeout.

The evidence, per node field:
  - a duplicate: an ID read more than once (the strongest: two processes
    minted the same time unit, node field and step);
  - a repeated step: the same time unit and step with other epoch bits (two
    claims of the node ID in one unit; layouts with --epoch-bits only);
  - two places at once, with --by: the node field's IDs came from one
    process, then another, then the first again, within --within (or from
    two in one time unit). --by names what tells processes apart: a column
    of the query (a host or pod), or with files a second field on each line
    ("ID VALUE", separated by spaces or a tab, as COPY writes it).
A node field handed from one process to the next, neither using it again
within --within, is no evidence. The IDs are judged as a set: their order
does not matter.

` + layoutHelp + `

Memory stays flat whatever the number of IDs: they are sorted in chunks of
2 Mi IDs, spilled to unlinked temporary files in --temp-dir (24 bytes an
ID) and merged.

Output: a table, or -o json: ids (read), duplicates, nodes (one object per
node field with evidence, its number in node), and the examples. Exit codes:
0 clean, 1 duplicates or a node field used by two processes, 2 bad usage or
input (a line that is not an ID names its line number).`,
		Example: `  nodeid audit ids.txt
  psql -Atc 'SELECT id FROM orders' | nodeid audit
  nodeid audit --dsn postgres://app@db/app --query 'SELECT id, pod FROM orders' --by pod
  nodeid audit --by host -o json ids-and-hosts.tsv
  nodeid audit --layout sonyflake ids.txt
  nodeid audit --swap-node-halves ids.txt     # a 5+5 generator given {node%32} in its upper field`,
		Args: cobra.ArbitraryArgs,
		RunE: cli.Action(env, func(cmd *cobra.Command, args []string, c *cli.Conn) error {
			o.Conn, o.Files = c, args
			return cli.Run(cmd.Context(), o, runF, run)
		}),
	}
	fl := cmd.Flags()
	fl.StringVar(&o.Query, "query", "", "a SELECT whose first column is the ID, streamed through a cursor (instead of files)")
	fl.StringVar(&o.By, "by", "", "what tells processes apart: a column of --query, or with files a second field on each line; it names that field in the report")
	fl.Var(cli.NewDurationValue(&o.Within, defaultWithin), "within",
		"with --by: a node field's IDs from one process, another, then the first again, within this, are two places at once")
	fl.IntVar(&o.Examples, "examples", 3, "examples of each kind of evidence per node field")
	fl.StringVar(&o.TempDir, "temp-dir", "", "directory for the sorted chunks (default the system's temporary directory)")
	o.Layout.RegisterReading(cmd)
	o.Output.Register(cmd, cli.OutTable, cli.OutJSON)
	return cmd
}

// layoutHelp documents the layout flags of audit.
const layoutHelp = `The layout must be the generator's: --layout bwmarrin (the default), js53 or
sonyflake, each field's flag given replacing that field of it
(--layout-origin, --time-unit, --total-bits, --node-bits, --step-bits,
--epoch-bits, --field-order); --swap-node-halves for a generator with two
5-bit node fields whose upper field was given the node ID's low half.`

func run(ctx context.Context, o *Options) error {
	if o.Query == "" && len(o.Files) == 0 {
		o.Files = []string{"-"}
	}
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(memoryLimit))
	rep, err := audit(ctx, o)
	if err != nil {
		return err
	}
	if o.Output.Value == cli.OutJSON {
		err = cli.WriteJSON(o.Env.Out, rep)
	} else {
		err = writeTable(o.Env.Out, rep)
	}
	if err != nil {
		return err
	}
	if !rep.Clean() {
		return &cli.ExitError{Code: cli.ExitFailure, Msg: "audit found " + rep.Summary()}
	}
	return nil
}

// audit reads the IDs, sorts them and judges them.
func audit(ctx context.Context, o *Options) (Report, error) {
	k := newKeyer(o.layout)
	s := newSorter(o.TempDir, o.chunk)
	defer s.Close()
	var (
		names   []string
		indexOf map[string]uint32
	)
	if o.By != "" {
		names, indexOf = []string{}, map[string]uint32{}
	}
	emit := func(id int64, by []byte) error {
		var b uint32
		if names != nil {
			i, ok := indexOf[string(by)]
			if !ok {
				if len(names) == maxByValues {
					return cli.Usagef("--by %s has more than %d distinct values: it must tell processes apart (a host or pod), not rows", cli.Printable(o.By), maxByValues)
				}
				i = uint32(len(names))
				names = append(names, string(by))
				indexOf[string(by)] = i
			}
			b = i
		}
		return s.Add(record{key: k.key(id), id: id, by: b})
	}
	width := o.layout.Width()
	if o.Query != "" {
		if err := readQuery(ctx, o.Conn, o.Query, o.By, width, emit); err != nil {
			return Report{}, err
		}
	} else {
		for _, name := range o.Files {
			if err := readFile(o.Env.In, name, o.By != "", width, emit); err != nil {
				return Report{}, err
			}
		}
	}
	j := newJudge(k, names, o.Within, o.Examples)
	var lo, hi int64 = -1, -1
	err := s.Sorted(func(r record) error {
		j.add(r)
		u := j.prevF.units
		if lo < 0 || u < lo {
			lo = u
		}
		hi = max(hi, u)
		return nil
	})
	if err != nil {
		return Report{}, err
	}
	o.spilled = s.Runs()
	rep := j.report()
	rep.Layout = o.layout.String()
	if o.By != "" {
		by := o.By
		rep.By = &by
	}
	if lo >= 0 {
		from, to := k.ms(lo), k.ms(hi+1)-1
		f, t := time.UnixMilli(from).UTC(), time.UnixMilli(to).UTC()
		rep.From, rep.FromMs, rep.To, rep.ToMs = &f, &from, &t, &to
	}
	return rep, nil
}

// readFile reads the IDs of the file name, or of in for "-".
func readFile(in io.Reader, name string, withBy bool, width int, emit emitFunc) error {
	if name == "-" {
		return readLines("standard input", in, withBy, width, emit)
	}
	f, err := os.Open(name)
	if err != nil {
		return cli.Usagef("%v", err)
	}
	defer f.Close()
	if err := readLines(name, f, withBy, width, emit); err != nil {
		return err
	}
	return nil
}

// isSelect reports whether query starts, past white space, comments and
// opening parentheses, with a keyword of a query that returns rows: the
// cursor audit reads it through takes nothing else.
func isSelect(query string) bool {
	switch strings.ToLower(firstWord(query)) {
	case "select", "with", "values", "table":
		return true
	}
	return false
}

// firstWord returns the first word of query, past white space, SQL
// comments and opening parentheses.
func firstWord(query string) string {
	s := query
	for {
		s = strings.TrimLeft(s, " \t\r\n\f(")
		switch {
		case strings.HasPrefix(s, "--"):
			_, s, _ = strings.Cut(s, "\n")
		case strings.HasPrefix(s, "/*"):
			_, s, _ = strings.Cut(s, "*/")
		default:
			end := strings.IndexFunc(s, func(r rune) bool { return !unicode.IsLetter(r) })
			if end < 0 {
				end = len(s)
			}
			return s[:end]
		}
	}
}
