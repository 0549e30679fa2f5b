package audit

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/nodeid/nodeid/cmd/nodeid/internal/cli"
)

// emitFunc takes one ID read and the process it came from ("" without
// --by).
type emitFunc func(id int64, by []byte) error

// parseID reads a decimal ID below 2^width: digits only, no sign.
func parseID(s []byte, width int) (int64, error) {
	if len(s) == 0 {
		return 0, errors.New("it is empty")
	}
	var v uint64
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, errors.New("an ID is a decimal number, digits 0-9 only")
		}
		v = v*10 + uint64(c-'0')
		if v>>width != 0 {
			return 0, fmt.Errorf("it is above %d, the largest ID of a %d-bit layout", uint64(1)<<width-1, width)
		}
	}
	return int64(v), nil
}

// readLines reads name's IDs from r, one a line, or with --by an ID and
// the value that tells its process apart, separated by spaces or a tab.
// A line that is not that is a usage error naming its line number.
func readLines(name string, r io.Reader, withBy bool, width int, emit emitFunc) error {
	br := bufio.NewReaderSize(r, 1<<20)
	for n := int64(1); ; n++ {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			return cli.Usagef("%s, line %d: longer than %d bytes: one ID a line (and with --by, its process)", name, n, br.Size())
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("reading %s: %w", name, err)
		}
		if len(line) == 0 && errors.Is(err, io.EOF) {
			return nil
		}
		if e := readLine(line, withBy, width, emit); e != nil {
			var ue *lineError
			if errors.As(e, &ue) {
				return cli.Usagef("%s, line %d: %q is not %s: %s", name, n, cli.Printable(strings.TrimRight(string(line), "\r\n")), ue.what, ue.why)
			}
			return e
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
	}
}

// lineError is a line that is not an ID (and process).
type lineError struct{ what, why string }

func (e *lineError) Error() string { return e.what + ": " + e.why }

// splitFields splits line at runs of spaces, tabs and CRs, into at most 3
// fields (a third says there are more than two), without allocating.
func splitFields(line []byte, out *[3][]byte) int {
	n := 0
	for i := 0; i < len(line) && n < 3; {
		for i < len(line) && isSpace(line[i]) {
			i++
		}
		j := i
		for j < len(line) && !isSpace(line[j]) {
			j++
		}
		if j > i {
			out[n] = line[i:j]
			n++
		}
		i = j
	}
	return n
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f'
}

func readLine(line []byte, withBy bool, width int, emit emitFunc) error {
	var buf [3][]byte
	f := buf[:splitFields(line, &buf)]
	what := "an ID"
	if withBy {
		what = "an ID and its process"
	}
	switch {
	case len(f) == 0:
		return &lineError{what, "the line is empty"}
	case !withBy && len(f) > 1:
		return &lineError{what, "a line holds one ID (with --by, an ID and the value that tells its process apart)"}
	case withBy && len(f) != 2:
		return &lineError{what, "with --by a line holds an ID and the value that tells its process apart, separated by spaces or a tab"}
	}
	id, err := parseID(f[0], width)
	if err != nil {
		return &lineError{what, err.Error()}
	}
	var by []byte
	if withBy {
		by = f[1]
	}
	return emit(id, by)
}

// fetchSize is how many rows one FETCH of the cursor reads.
const fetchSize = 10000

// cursorName is the audit's cursor.
const cursorName = "nodeid_audit"

// readQuery streams the rows of query through a server-side cursor, in a
// read-only transaction, fetchSize rows at a time: the first column is
// the ID, and with by the column of that name tells processes apart. Each
// fetch runs within --timeout.
func readQuery(ctx context.Context, c *cli.Conn, query, by string, width int, emit emitFunc) error {
	db, err := c.DB()
	if err != nil {
		return err
	}
	tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	q := strings.TrimRight(strings.TrimSpace(query), "; \t\r\n")
	err = c.Timed(ctx, func(ctx context.Context) error {
		_, err := tx.ExecContext(ctx, "DECLARE "+cursorName+" NO SCROLL CURSOR FOR "+q)
		return err
	})
	if err != nil {
		return queryError(err)
	}
	var (
		row   int64
		byCol = -1
		dest  []any
		cells []sql.RawBytes
	)
	for {
		got := 0
		err := c.Timed(ctx, func(ctx context.Context) error {
			rows, err := tx.QueryContext(ctx, fmt.Sprintf("FETCH FORWARD %d FROM %s", fetchSize, cursorName))
			if err != nil {
				return err
			}
			defer rows.Close()
			if dest == nil {
				cols, err := rows.Columns()
				if err != nil {
					return err
				}
				if byCol, err = findColumn(cols, by); err != nil {
					return err
				}
				cells = make([]sql.RawBytes, len(cols))
				dest = make([]any, len(cols))
				for i := range cells {
					dest[i] = &cells[i]
				}
			}
			for rows.Next() {
				row++
				got++
				if err := rows.Scan(dest...); err != nil {
					return fmt.Errorf("row %d of --query: %w", row, err)
				}
				if cells[0] == nil {
					return cli.Usagef("row %d of --query: its ID (the first column) is NULL", row)
				}
				id, err := parseID(cells[0], width)
				if err != nil {
					return cli.Usagef("row %d of --query: its ID (the first column) %q is not an ID: %v", row, cli.Printable(string(cells[0])), err)
				}
				var b []byte
				if byCol >= 0 {
					b = cells[byCol]
					if b == nil {
						b = []byte("NULL")
					}
				}
				if err := emit(id, b); err != nil {
					return err
				}
			}
			return rows.Err()
		})
		if err != nil {
			return queryError(err)
		}
		if got < fetchSize {
			return nil
		}
	}
}

// queryError says that the server refused the query itself, in the
// server's words: not in those of the lease table's errors (a column or
// a privilege missing is the query's, not the table's).
func queryError(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return fmt.Errorf("--query: the server refused it: %s (SQLSTATE %s)", pe.Message, pe.Code)
	}
	return err
}

// findColumn returns the index of the column by among cols, -1 for "".
func findColumn(cols []string, by string) (int, error) {
	if len(cols) == 0 {
		return 0, cli.Usagef("--query returns no column: its first column must be the ID")
	}
	if by == "" {
		return -1, nil
	}
	for i, c := range cols {
		if c == by {
			if i == 0 {
				return 0, cli.Usagef("--by %s: that is the first column, the ID; select the column that tells processes apart after it", by)
			}
			return i, nil
		}
	}
	return 0, cli.Usagef("--by %s: the query returns no column of that name (its columns: %s); select it after the ID, as SELECT id, %s FROM ...",
		by, strings.Join(cols, ", "), by)
}
