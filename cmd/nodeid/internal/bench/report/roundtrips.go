package report

// RoundTripResult counts what each operation costs: statements executed on
// the server (pg_stat_statements), statements the library sent (pgx's
// tracer) and writes to its sockets (one per round trip).
type RoundTripResult struct {
	// Server says whether pg_stat_statements counted on the server;
	// ServerNote why not.
	Server     bool   `json:"server"`
	ServerNote string `json:"server_note,omitempty"`
	ExecMode   string `json:"exec_mode"`
	IDs        int    `json:"ids"`
	// First is the first Acquire of a new Registry on a table that does not
	// exist yet: it creates the tables and fills the range. FirstStatements
	// lists what the server executed for it.
	First           OpCount     `json:"first"`
	FirstStatements []StmtCalls `json:"first_statements,omitempty"`
	// Ops are the later Acquires, the Releases and the renewals.
	Ops []OpCount `json:"ops"`
	// Claims is the number of claim statements executed on the server and
	// HistoryRows the rows of the history table at the end: equal when
	// every claim wrote its history in the same statement.
	Claims      int64 `json:"claims"`
	HistoryRows int64 `json:"history_rows"`
}

// OpCount is the cost of N operations of one kind.
type OpCount struct {
	Op string `json:"op"`
	N  int64  `json:"n"`
	// OwnStatement is how many times the server executed the operation's
	// own statement (claim, renew or release); Other how many other
	// statements it executed in the database meanwhile.
	OwnStatement int64 `json:"own_statement"`
	Other        int64 `json:"other"`
	// Client is the statements the library sent; Writes the writes to its
	// sockets, each a round trip.
	Client int64  `json:"client"`
	Writes int64  `json:"writes"`
	Note   string `json:"note,omitempty"`
}

// StmtCalls is a statement and how many times the server executed it.
type StmtCalls struct {
	Query string `json:"query"`
	Calls int64  `json:"calls"`
}
