package admin

// The lease protocol of docs/protocol.md as a model: holders, the statements
// they send, the client's rules and the environment's actions, over integer
// clocks. modelcheck_test.go explores it; replay_test.go runs its traces
// against PostgreSQL through the Store's statements.
//
// Every action names the statement or client rule it stands for (act.rule).
// The statements' rules are written once, in the methods of mstate whose
// names start with the statement's (claim, renew, release, evict, verify,
// raise, confirm, restored, seen, ddl); each rule a mutant may break reads
// m.mut once, at the line that the mutant changes.

import (
	"fmt"
	"strings"
)

// Time is counted in ticks. A tick stands for a tenth of the largest TTL a
// model's table allows (maxTTL/10 is the statements' tolerance of the
// servers' clocks and the margin of the quarantine), so that the model's
// fractions of a TTL are the statements' own.
type tick = int16

const (
	never        tick = -1 << 14 // expires_at = '-infinity': a free row
	noQuarantine tick = 1 << 14  // quarantine_until_ms IS NULL: a restore not yet declared
	noStamp      tick = -1 << 13 // a release with no exact horizon
	stampLo      tick = -4       // the lowest millisecond a holder's clock can show
	nStamps           = 28       // the milliseconds a model can stamp: stampLo .. stampLo+nStamps-1
	maxNode           = 2
	maxHold           = 3
)

// A mutant is the one-line change of one rule that the model checker must
// catch; "" is the protocol itself.
type mutant string

// mutants lists every mutant with the rule it breaks, for --list-mutants
// and the test that each is caught.
var mutants = []struct {
	name    mutant
	rule    string
	witness string // the run that catches it first
}{
	{"f1-copy-max-ttl", "the quarantine after a change of generation lasts the copy's maximum TTL, not the largest the operator declared or a pending raise", "2h:restore"},
	{"f2-renew-lifts-quarantine", "a renewal records the current generation in the row, lifting its quarantine", "2h:late+failover"},
	{"f2-release-lifts-quarantine", "a release records the current generation in the row, lifting its quarantine", "3h:failover"},
	{"async-lease-write", "a lease write is not durable when its statement returns: a crash loses it", "2h:crash"},
	{"move-keeps-epoch", "the first claim of a row of an earlier generation takes the next epoch, not one of a new era", "3h:failover"},
	{"renew-revives-lapsed", "a renewal extends a lease that has already expired by the database's clock", "2h:failover+evict"},
	{"claim-before-horizon", "a claim takes a row whose previous holder's horizon has not passed", "3h:failover"},
	{"evict-at-horizon", "an evicted row is claimable once its horizon has passed, before the evicted lease's expiry", "2h:failover+evict"},
	{"raise-not-pending", "a raise of the maximum TTL takes effect at once, before every standby has it", "2h:raise"},
	{"quarantine-without-tolerance", "the quarantine lasts the maximum TTL without the servers' clock tolerance", "2h:clock"},
	{"claim-ignores-quarantine", "a row of an earlier generation is claimable once its horizon has passed", "3h:failover"},
	{"verify-without-lock", "a verification does not hold the row: a claim may take it while the verified transaction is open", "3h:verify+evict"},
	{"horizon-uncapped", "the horizon recorded is the holder's clock plus the TTL, not bounded by the database's now() plus the TTL", "2h:clock"},
	{"horizon-lowered", "a renewal records the holder's new horizon even when it is below the row's", "2h:late"},
	{"deadline-by-wall-clock", "the holder's deadline is the server's expires_at read on its own wall clock, not a duration on its monotonic clock from t0", "2h:clock"},
	{"claim-unexpired", "a claim takes a row whose lease has not expired", "3h:failover"},
	{"claim-above-max", "a claim takes a TTL above the table's maximum", "3h:raise"},
	{"confirm-unmarked", "a confirmation makes the raise pending when it runs the maximum, not the one whose WAL position the standbys were seen to replay", "2h:raise-twice"},
	{"confirm-on-another-server", "a confirmation runs on whatever server init reaches, not only the one whose WAL position the standbys were seen to replay", "2h:raise+failover"},
	{"quarantine-shortened", "a new generation's quarantine replaces a longer one still running (a failover after a declared restore)", "2h:restore+failover"},
	{"move-forgets-quarantine", "a move forgets the quarantine running, and a declaration after it ends it sooner", "2h:move-twice"},
	{"renew-any-epoch", "a renewal extends the row of its owner whatever the epoch", "3h:failover"},
	{"renew-lowers-expiry", "a renewal sets the expiry from its now() even when the row's is later", "2h:late"},
	{"switch-without-generation-check", "the DDL does not run the generation check before it records sync (or widens the range, or raises the maximum TTL)", "2h:ddl"},
	{"widening-rows-current-generation", "the rows a widening of the range adds are of the current generation, not the one before", "2h:ddl"},
	{"creation-not-pending", "a table created on an asynchronous server with a standby hands out node IDs at once, before the standby has its creation", "2h:create"},
	{"e2-client-confirms", "a confirmation counts a WAL client that no failover promotes (pg_receivewal, a logical consumer) as a standby that has the mark's position", "2h:create"},
	{"e3-command-trusts-warden", "the command of nodeid run stamps after NODEID_HORIZON_MS and stops when the warden kills it, without re-reading the lease file's deadline and ceiling before each ID", "2h:freeze"},
	{"release-lowers-horizon", "a release records the last stamp its client gives even below the horizon its claim stamped after", "3h:failover"},
	{"e1-sync-trusts-ack", "a table that records sync trusts its synchronous standby to have every acknowledged commit: no generation check, a raise at once, a switch to sync confirms what is pending", "2h:ddl"},
}

func knownMutant(name string) bool {
	for _, m := range mutants {
		if string(m.name) == name {
			return true
		}
	}
	return false
}

// bounds are what a run of the model explores.
type bounds struct {
	holders   int  // at most maxHold
	nodes     int  // the table's range at the start, at most maxNode
	widenTo   int  // the range a widening makes it (ddl family), at most maxNode; 0 if none
	tmax      tick // the last tick
	maxStep   tick // the most ticks one action lets pass
	depth     int  // actions per trace
	ttl       [maxHold]tick
	maxTTL    tick     // the table's maximum TTL at the start
	raiseTo   tick     // the raise of the maximum TTL (raise family)
	raiseTo2  tick     // a second, larger raise, 0 if none
	pending   tick     // a raise pending at the start, which the standby has, 0 if none
	lacks     bool     // the standby lacks the pending raise at the start
	backupMax tick     // the backup's maximum TTL, if not the table's: a copy older than a raise
	absent    bool     // no copy has the table at the start (create family)
	tol       tick     // the servers' clocks agree to within tol; the quarantine adds it
	holdOffs  [][]tick // the holders' wall clocks: true time plus these, one set a run
	srv0      tick     // the first server's clock: true time plus srv0
	srvOffs   []tick   // a new server's clock: true time plus one of these
	families  family   // the environment's actions
	budget    budget   // how many times a trace may take each of the rarer actions
}

// budget counts what a trace may still do of the actions whose
// repetitions add states faster than they add behaviours: a bound of the
// exploration, stated with the others.
type budget struct {
	failovers, evictions, lost, restores, crashes, late, switches, cancels, freezes int8
}

// family is a set of environment actions.
type family uint16

const (
	famFailover family = 1 << iota // replicate, fail over to the standby
	famEvict                       // an operator's eviction
	famRestore                     // backup, restore (move, point-in-time, rollback), declare
	famRaise                       // raise the maximum TTL, confirm it
	famCrash                       // a crash of the server (replicate stands for a flush)
	famVerify                      // Verify in a transaction, end it
	famLate                        // statements that execute late, after their holder gave up
	famDDL                         // the DDL: switch the replication mode, widen the range; a cancelled synchronous wait
	famCreate                      // the DDL creates the table where it is missing
	famFreeze                      // a holder's whole process tree frozen and thawed (nodeid run and its warden)
)

var familyNames = []struct {
	f    family
	name string
}{
	{famFailover, "failover"}, {famEvict, "evict"}, {famRestore, "restore"}, {famRaise, "raise"},
	{famCrash, "crash"}, {famVerify, "verify"}, {famLate, "late"}, {famDDL, "ddl"}, {famCreate, "create"}, {famFreeze, "freeze"},
}

func (f family) String() string {
	var s []string
	for _, n := range familyNames {
		if f&n.f != 0 {
			s = append(s, n.name)
		}
	}
	return strings.Join(s, "+")
}

// row is a lease row: owner 0 is ” (free or evicted), else holder owner-1.
type row struct {
	owner   int8
	gen     int8 // the generation of the row's last claim
	expires tick // never for a free row
	horizon tick
	from    tick  // the horizon its last claim stamped after (the history's from_ms)
	epoch   int32 // era<<8 | count
}

// config is the configuration row, and the server that last wrote it.
type config struct {
	maxTTL, raise   tick // raise: a pending raise, 0 if none
	quarantineUntil tick // quarantine_until_ms; noQuarantine while a restore is not declared
	moved           tick // moved_quarantine_until_ms: the quarantine a move left running, 0 if none
	// owed is a ghost: the longest lease the history that a restore not
	// yet declared lost may hold, which its declaration must cover, 0 if
	// none. A backup of a copy that owes it owes it too.
	owed         tick
	gen, sid, tl int8
	nodes        int8 // the range: node IDs 0 to nodes-1 have rows
	sync         bool // replication = 'sync': the standby is synchronous, unless stalled
	// creating: creation_pending, the table's creation not yet confirmed.
	// A copy without the table has gen 0 and no rows.
	creating bool
}

// data is what a copy of the database holds.
type data struct {
	rows [maxNode]row
	cfg  config
}

// stmt is a statement sent by a holder: its kind, the true time it was sent
// (the holder's t0), and its arguments.
type stmt struct {
	kind  int8 // 0 none, sClaim, sRenew, sRelease
	node  int8
	t0    tick
	h5    tick // the horizon ($5): the holder's clock at t0 plus the TTL
	h6    tick // a release's exact horizon
	exact bool // a release with an exact horizon
	epoch int32
	srv   int8 // mstate.servers when it was sent
}

const (
	sClaim int8 = 1 + iota
	sRenew
	sRelease
)

// holder is one process with a Registry and at most one lease.
type holder struct {
	off, ttl tick
	// has: it holds a lease: node, epoch, the previous horizon, the
	// highest horizon received, the deadline (true time: it mints while
	// t < dl) and the latest millisecond it stamped. They stay after the
	// lease ends, for a release still to send. lease names the lease for
	// the stamp checker: the holder and how many leases it has had.
	has bool
	rel bool // a release to send or retry: its generator is sealed
	// frozen: the holder's whole process tree is stopped (E3: a cgroup
	// freezer, docker pause, a suspended VM; for nodeid run, its warden
	// and its command together): it neither mints nor acts, and its
	// deadline timer fires only once it is thawed.
	frozen bool
	// tx: a verified transaction (Verify) holds row tx-1 until it ends,
	// whatever the holder does meanwhile (0: none).
	tx               int8
	node, lease, nth int8
	epoch            int32
	prev, hloc       tick
	dl, last         tick
	dlSrv            int8 // mstate.servers when dl was set
	pend             stmt // in flight, its holder waiting for the answer
	orphan           stmt // in flight, its holder gone on without it
}

// mstate is a state of the model.
type mstate struct {
	t       tick
	srvOff  tick // the current primary's clock: t + srvOff
	srvSID  int8 // the current primary's system identifier and timeline
	srvTL   int8
	nextSID int8
	// servers counts the changes of the server process (failover, crash,
	// restore): a statement in flight across one never commits in the
	// transaction it began.
	servers int8
	left    budget // what the trace may still do
	// stalled: the synchronous standby stopped receiving, and a commit's
	// wait for it was cancelled (E1): commits are acknowledged without it
	// until it replicates again.
	stalled bool
	db      data
	standby data // the standby's copy (famCrash: the last flushed state)
	backup  data
	// markSID and markTL are the server init read the mark on; markSeen
	// says that the standby has replayed a position at or past the mark's,
	// which on another timeline than the mark's says nothing of the raise.
	markSID, markTL int8
	markSeen        bool
	// clientSeen says that a WAL client that is no server that may be
	// promoted (E2: pg_receivewal, pg_basebackup -X stream, a logical
	// consumer) has received the mark's position; no rule reads it but a
	// mutant's.
	clientSeen bool
	// mark is the pending raise that nodeid init read, with the WAL
	// position it waits for the standbys to replay (PendingRaise), 0 if none;
	// markCreate, that it read a pending creation (PendingCreation).
	mark       tick
	markCreate bool
	hold       [maxHold]holder
	// Ghosts, for the invariants: the highest epoch granted per node in any
	// history, the largest TTL ever granted, and which lease stamped each
	// millisecond of each node.
	maxEpoch   [maxNode]int32
	maxGranted tick
	// grantedSince is the largest TTL granted or renewed, in any history,
	// since the backup was taken: the longest lease any holder of the
	// history a restore of it loses may hold, which the operator declares
	// (D). The quarantine a copy records covers the leases before it.
	grantedSince tick
	stamp        [maxNode][nStamps]int8
}

// model is a run of the model: its bounds and mutant.
type model struct {
	b   bounds
	mut mutant
}

func (m *model) initial() []mstate {
	var out []mstate
	var s mstate
	s.nextSID, s.srvSID, s.srvTL = 2, 1, 1
	s.srvOff = m.b.srv0
	if !m.b.absent {
		s.db.cfg = config{maxTTL: m.b.maxTTL, raise: m.b.pending, quarantineUntil: -m.b.maxTTL, gen: 1, sid: 1, tl: 1, nodes: int8(m.b.nodes)}
		for n := 0; n < m.b.nodes; n++ {
			s.db.rows[n] = row{gen: 1, expires: never, horizon: stampLo}
		}
	}
	s.standby, s.backup = s.db, s.db
	if m.b.lacks {
		s.standby.cfg.raise = 0
	}
	if m.b.backupMax != 0 {
		s.backup.cfg.maxTTL = m.b.backupMax
	}
	s.left = m.b.budget
	s.maxGranted = m.b.maxTTL
	for i := 0; i < m.b.holders; i++ {
		s.hold[i].ttl = m.b.ttl[i]
	}
	for _, offs := range m.b.holdOffs {
		for i := 0; i < m.b.holders; i++ {
			s.hold[i].off = offs[i]
		}
		out = append(out, s)
	}
	return out
}

// now is the current primary's clock.
func (s *mstate) now() tick { return s.t + s.srvOff }

// violation is a broken invariant, numbered as docs/guarantees.md.
type violation struct {
	rule string
	what string
}

func (v *violation) Error() string { return "rule " + v.rule + ": " + v.what }

// --- the statements -------------------------------------------------------

// seen is the generation check at the head of the claim and the refusal
// (asyncHead's q and seen; the renewal and the release have none), and of
// the DDL (ddlHead): on a table that records async, a server other than
// the one recorded (another system identifier or another timeline) starts
// a new generation. A table that records sync looks too: its server tells
// its identity (the model's servers all do; one that does not is the
// stated assumption of a WAL-less service). After a
// move (another system identifier), or while a move is not declared, no
// quarantine can be computed: its end stays unset until the operator
// declares the restore. After a failover the quarantine lasts the larger of
// the maximum TTL and a pending raise, and the servers' clock tolerance.
func (m *model) seen(s *mstate) {
	c, sid, tl := &s.db.cfg, s.srvSID, s.srvTL
	if c.gen == 0 || m.trusted(c) || c.sid == sid && c.tl == tl {
		return // no table, or nothing to see
	}
	moved := c.sid != sid
	if m.mut == "f1-copy-max-ttl" {
		moved = false // the new generation starts at once, from the copy's maximum
	}
	c.gen++
	switch {
	case moved || c.quarantineUntil == noQuarantine:
		if c.quarantineUntil != noQuarantine && m.mut != "move-forgets-quarantine" {
			c.moved = max(c.moved, c.quarantineUntil) // kept until the declaration
		}
		c.quarantineUntil = noQuarantine
	default:
		c.quarantineUntil = m.laterQuarantine(c.quarantineUntil, s.now()+m.quarantine(c))
	}
	c.sid, c.tl = sid, tl
}

// laterQuarantine is where a new generation's quarantine ends: at f, or at
// the end of the one still running, if later (a declared restore's may
// exceed the maximum TTL), or f while a restore is not declared.
func (m *model) laterQuarantine(old, f tick) tick {
	if old == noQuarantine || m.mut == "quarantine-shortened" {
		return f
	}
	return max(old, f)
}

// quarantine is how long after a change of generation the rows of earlier
// generations stay unclaimable: the longest lease the lost history could
// hold, and the servers' clock tolerance.
func (m *model) quarantine(c *config) tick {
	d := max(c.maxTTL, c.raise)
	if m.mut == "quarantine-without-tolerance" {
		return d
	}
	return d + m.b.tol
}

// claimable reports whether row r may be claimed at the server's now
// ({t}_claim's claimable and its candidates), and the horizon its next
// holder must stamp after.
func (m *model) claimable(s *mstate, n int) (bool, tick) {
	r, c, now := s.db.rows[n], &s.db.cfg, s.now()
	for i := range s.hold {
		if int(s.hold[i].tx)-1 == n && m.mut != "verify-without-lock" {
			return false, 0 // FOR UPDATE SKIP LOCKED passes over a row Verify holds
		}
	}
	if r.expires >= now && m.mut != "claim-unexpired" {
		return false, 0
	}
	prev := r.horizon
	if r.gen < c.gen && m.mut != "claim-ignores-quarantine" {
		prev = max(prev, c.quarantineUntil)
	}
	wait := prev
	if m.mut == "claim-before-horizon" {
		wait = stampLo // the row's own horizon is not waited for
		if r.gen < c.gen {
			wait = c.quarantineUntil
		}
	}
	return wait < now, prev
}

// era is the first epoch of the era of the server's clock now (the
// seconds since EraOrigin, in its high bits).
func era(now tick) int32 { return int32(now+1) << 8 }

// claim is {t}_claim: the lowest claimable node ID, for a TTL the table
// allows, never while a restore is not declared or the table's creation
// is not confirmed, and none on a server without the table.
func (m *model) claim(s *mstate, h int, st stmt) (ok bool, n int, r row, prev tick, v *violation) {
	c := &s.db.cfg
	ttl := s.hold[h].ttl
	if c.gen == 0 || c.creating || c.quarantineUntil == noQuarantine || ttl > c.maxTTL && m.mut != "claim-above-max" {
		return false, 0, row{}, 0, nil
	}
	now := s.now()
	for n = 0; n < int(c.nodes); n++ {
		can, p := m.claimable(s, n)
		if !can {
			continue
		}
		old := s.db.rows[n]
		// Rule 1: the row's lease has expired and no verified
		// transaction holds it; rule 5: its horizon has passed.
		if old.expires >= now {
			return false, 0, row{}, 0, &violation{"1", fmt.Sprintf("node %d claimed while its lease expires at %d, now %d", n, old.expires, now)}
		}
		for i := range s.hold {
			if i != h && int(s.hold[i].tx)-1 == n {
				return false, 0, row{}, 0, &violation{"Verify", fmt.Sprintf("node %d claimed while holder %d's verified transaction holds it", n, i)}
			}
		}
		if p >= now {
			return false, 0, row{}, 0, &violation{"5", fmt.Sprintf("node %d claimed at %d before the horizon %d its holder must stamp after", n, now, p)}
		}
		e := old.epoch + 1
		if old.gen < c.gen && m.mut != "move-keeps-epoch" {
			e = max(e, era(now)|(e&255))
		}
		hz := min(st.h5, now+ttl)
		if m.mut == "horizon-uncapped" {
			hz = st.h5
		}
		r = row{owner: int8(h + 1), gen: c.gen, expires: now + ttl, horizon: max(p, hz), from: p, epoch: e}
		s.db.rows[n] = r
		return true, n, r, p, nil
	}
	return false, 0, row{}, 0, nil
}

// renew is {t}_renew: only the live lease of this owner and epoch; the
// horizon is raised, never lowered; the row's generation stays that of its
// claim.
func (m *model) renew(s *mstate, h int, st stmt) (ok bool, r row) {
	c, now := &s.db.cfg, s.now()
	ttl := s.hold[h].ttl
	r = s.db.rows[st.node]
	match := r.owner == int8(h+1) && r.epoch == st.epoch
	if m.mut == "renew-any-epoch" {
		match = r.owner == int8(h+1)
	}
	live := r.expires >= now
	if m.mut == "renew-revives-lapsed" {
		live = r.expires > never
	}
	if !match || !live {
		return false, r
	}
	hz := max(r.horizon, min(st.h5, now+ttl))
	if m.mut == "horizon-lowered" {
		hz = min(st.h5, now+ttl)
	}
	exp := max(r.expires, now+ttl)
	if m.mut == "renew-lowers-expiry" {
		exp = now + ttl
	}
	r.expires, r.horizon = exp, hz
	if m.mut == "f2-renew-lifts-quarantine" {
		r.gen = c.gen
	}
	s.db.rows[st.node] = r
	return true, r
}

// release is T_release: the live lease of this owner and epoch becomes
// free at once, with the exact horizon its sealed generator gives (else the
// row keeps its own), never below the horizon its claim stamped after; the
// row's generation stays that of its claim.
func (m *model) release(s *mstate, h int, st stmt) bool {
	c, now := &s.db.cfg, s.now()
	r := s.db.rows[st.node]
	if r.owner != int8(h+1) || r.epoch != st.epoch || r.expires < now {
		return false
	}
	if st.exact {
		r.horizon = max(st.h6, r.from)
		if m.mut == "release-lowers-horizon" {
			r.horizon = st.h6
		}
	}
	r.owner, r.expires, r.from = 0, never, 0
	if m.mut == "f2-release-lifts-quarantine" {
		r.gen = c.gen
	}
	s.db.rows[st.node] = r
	return true
}

// evict is {t}_evict: the holder of node n loses the row, which keeps
// its expiry (it is claimable once the evicted lease has expired and its
// horizon passed), its horizon and its generation. It waits for a verified
// transaction's lock, and gives up.
func (m *model) evict(s *mstate, n int) bool {
	r := s.db.rows[n]
	if r.owner == 0 {
		return false
	}
	for i := range s.hold {
		if int(s.hold[i].tx)-1 == n {
			return false // lock_timeout: the verified transaction holds the row
		}
	}
	r.owner, r.from = 0, 0
	if m.mut == "evict-at-horizon" {
		r.expires = never
	}
	s.db.rows[n] = r
	return true
}

// verify is {t}_verify: the lease of this owner and epoch is unexpired
// by the statement's time; the row is then held until the transaction ends.
func (m *model) verify(s *mstate, h int) bool {
	hd := &s.hold[h]
	r := s.db.rows[hd.node]
	return r.owner == int8(h+1) && r.epoch == hd.epoch && r.expires >= s.now()
}

// raise is the DDL that raises the table's maximum TTL to to, after its
// generation check (ddlHead): pending until every standby has it
// (confirm), whatever mode the table records.
func (m *model) raise(s *mstate, to tick) {
	m.ddlHead(s)
	c := &s.db.cfg
	if m.trusted(c) {
		c.maxTTL, c.raise = max(c.maxTTL, to, c.raise), 0
		return
	}
	if m.mut == "raise-not-pending" {
		c.maxTTL = to
		return
	}
	c.raise = to
}

// ddlHead is the DDL's generation check (schemaText's, on a table that
// records async: the claim's, seen), which runs before it records sync,
// adds rows or raises the maximum TTL: a failover, a move or a restore
// that no claim has seen yet starts its generation there.
func (m *model) ddlHead(s *mstate) {
	if m.mut == "switch-without-generation-check" {
		return // the DDL records sync, and adds rows, on a generation not yet started
	}
	m.seen(s)
}

// ddlSwitch is the DDL with the other replication mode (nodeid init
// --replication, ApplyMode), after its generation check. It changes what
// the table records and how the environment replicates (synchronously
// while the table records sync, unless a wait is cancelled), and no rule
// of the statements: a table that records sync still watches its server.
func (m *model) ddlSwitch(s *mstate) {
	m.ddlHead(s)
	c := &s.db.cfg
	c.sync = !c.sync
	if m.trusted(c) {
		c.maxTTL, c.raise, c.creating = max(c.maxTTL, c.raise), 0, false
	}
	c.sid, c.tl = s.srvSID, s.srvTL
}

// trusted reports whether the statements trust c's table never to lose an
// acknowledged commit: none does (a synchronous standby may lack one whose
// wait was cancelled), unless the mutant restores the rule of earlier
// versions, which trusted a table that records sync.
func (m *model) trusted(c *config) bool {
	return c.sync && m.mut == "e1-sync-trusts-ack"
}

// ddlWiden is the DDL with a wider range (nodeid init --range, Apply),
// after its generation check: the rows it adds are free, at epoch 0, and of
// the generation before the current one (a generation 0 row becomes the
// first generation's, as a new table's rows do), so that the current
// quarantine and a new era's epochs cover a widening and claims of its rows
// that a failover or a restore lost.
func (m *model) ddlWiden(s *mstate, to int) {
	m.ddlHead(s)
	c := &s.db.cfg
	g := c.gen - 1
	if g == 0 {
		g = c.gen // UPDATE ... SET claim_generation = c.generation WHERE claim_generation = 0
	}
	if m.mut == "widening-rows-current-generation" {
		g = c.gen
	}
	for n := int(c.nodes); n < to; n++ {
		s.db.rows[n] = row{gen: g, expires: never, horizon: stampLo}
	}
	c.nodes = int8(to)
}

// create is the DDL on a server without the table (nodeid init,
// WithCreateTable, the DDL of SchemaSQL): a new table of the run's range
// and maximum TTL, free rows of its first generation, on the server of
// now, with no quarantine; pending, since the model's server has a
// standby, until the standby has its creation (confirm).
func (m *model) create(s *mstate) {
	s.db = data{cfg: config{maxTTL: m.b.maxTTL, quarantineUntil: s.now(), gen: 1, sid: s.srvSID, tl: s.srvTL, nodes: int8(m.b.nodes),
		creating: m.mut != "creation-not-pending"}}
	for n := 0; n < m.b.nodes; n++ {
		s.db.rows[n] = row{gen: 1, expires: never, horizon: stampLo}
	}
}

// confirm makes the raise that init read (the mark) the maximum, and ends
// the pending creation it read, once the standby has replayed the WAL
// position read with them, on the server they were read on; a later raise
// stays pending.
func (m *model) confirm(s *mstate) bool {
	c, mark := &s.db.cfg, s.mark
	raise, create := c.raise != 0 && mark != 0, c.creating && s.markCreate
	seen := s.markSeen
	if m.mut == "e2-client-confirms" {
		seen = seen || s.clientSeen
	}
	if !raise && !create || !seen {
		return false
	}
	if (s.srvSID != s.markSID || s.srvTL != s.markTL) && m.mut != "confirm-on-another-server" {
		return false // ErrServerChanged: init reads them again
	}
	if raise {
		if m.mut == "confirm-unmarked" {
			mark = c.raise
		}
		c.maxTTL = max(c.maxTTL, min(c.raise, mark))
		if c.raise <= mark {
			c.raise = 0
		}
	}
	if create {
		c.creating = false
	}
	s.mark, s.markCreate, s.markSID, s.markTL, s.markSeen, s.clientSeen = 0, false, 0, 0, false, false
	return true
}

// restored is {t}_restored, "nodeid init --restored --max-ttl D": a new
// generation from now, quarantined for the largest of D (the longest lease
// the operator says the old history may hold), the maximum and a pending
// raise, and the server recorded as the one; never sooner than the
// quarantine a move left unset (moved_quarantine_until_ms).
func (m *model) restored(s *mstate, d tick) {
	c := &s.db.cfg
	c.gen++
	d = max(d, c.owed)
	if m.mut == "f1-copy-max-ttl" {
		d = 0
	}
	c.quarantineUntil = m.laterQuarantine(c.quarantineUntil, max(c.moved, s.now()+m.quarantine(&config{maxTTL: max(c.maxTTL, d), raise: c.raise})))
	c.moved, c.owed = 0, 0
	if !m.trusted(c) { // a trusted table's statement records no server
		c.sid, c.tl = s.srvSID, s.srvTL
	}
}

// --- actions ---------------------------------------------------------------

type actKind uint8

const (
	aTick actKind = iota
	aCall
	aCallLost
	aSend
	aExec
	aExecLost
	aAbandon
	aExecOrphan
	aVerify
	aEndTx
	aEvict
	aReplicate
	aFailover
	aCrash
	aBackup
	aMove
	aPITR
	aRollback
	aDeclare
	aRaise
	aMark
	aConfirm
	aSwitch
	aWiden
	aCreate
	aCancelWait
	aWALClient
	aFreeze
	aThaw
	nActKinds
)

// rules names what each action stands for: the statement, the client's
// rule or the environment's action, as docs/protocol.md names them.
var rules = [nActKinds]string{
	aTick:       "time passes, a tick or more; a lease whose local deadline passes ends (Lease.onDeadline, rule 4)",
	aCall:       "the holder reads t0, sends the statement, which commits on the current primary, and gets its answer",
	aCallLost:   "the holder reads t0 and sends the statement, which commits; its answer is lost (the holder sees an error)",
	aSend:       "the holder reads t0 and sends the statement, which stays in flight",
	aExec:       "the statement in flight commits on the current primary and its answer arrives",
	aExecLost:   "the statement in flight commits; its answer is lost (the holder sees an error)",
	aAbandon:    "the holder stops waiting for the statement (bounded, the attempt's timeout); it stays in flight",
	aExecOrphan: "a statement its holder stopped waiting for commits late",
	aVerify:     "Lease.Verify in the holder's transaction (store.Verify, {t}_verify)",
	aEndTx:      "the verified transaction commits or rolls back",
	aEvict:      "an operator evicts the holder (nodeid evict, admin.Evict, {t}_evict)",
	aReplicate:  "the standby replays every commit so far (crash family: the WAL is flushed)",
	aFailover:   "the standby is promoted on a new timeline; the old primary takes no more writes",
	aCrash:      "the server crashes and restarts; what was durable survives",
	aBackup:     "a backup of the database is taken (pg_dump, pg_basebackup, a snapshot)",
	aMove:       "the backup is restored into another cluster (a move, a dump, an upgrade): another system identifier",
	aPITR:       "the backup is restored on a new timeline (point-in-time recovery), and the operator declares it (nodeid init --restored --max-ttl)",
	aRollback:   "the backup is restored on the same server (a snapshot rolled back), and the operator declares it (nodeid init --restored --max-ttl)",
	aDeclare:    "the operator declares a restore (nodeid init --restored --max-ttl D, admin.Restored, {t}_restored)",
	aRaise:      "the maximum TTL is raised (nodeid init --max-ttl, the DDL of SchemaSQL): pending until the standbys have it (at once only where the table is trusted)",
	aMark:       "nodeid init (or Acquire, for a creation) reads the pending raise or creation and the WAL position to wait for (admin.PendingRaise, admin.PendingCreation)",
	aConfirm:    "the raise or the creation read is confirmed once every standby has replayed its position; a later raise stays pending (nodeid init, admin.ConfirmRaise, admin.ConfirmCreation)",
	aSwitch:     "the table's replication mode is switched, async to sync or back (nodeid init --replication, store.ApplyMode, the DDL of SchemaSQL)",
	aWiden:      "the node range is widened: the DDL adds rows (nodeid init --range, store.Apply, the DDL of SchemaSQL)",
	aCreate:     "the DDL creates the table on a server without it (nodeid init, WithCreateTable, store.Create, the DDL of SchemaSQL)",
	aCancelWait: "E1: the synchronous standby stops receiving and a commit's wait for it is cancelled (pg_cancel_backend, a query timeout): commits are acknowledged without it until it catches up",
	aWALClient:  "E2: a WAL client that no failover promotes (pg_receivewal, pg_basebackup -X stream, a logical consumer) receives every commit so far, and replays none",
	aFreeze:     "E3: the holder's whole process tree is frozen (for nodeid run: the warden with its command)",
	aThaw:       "E3: the frozen tree is thawed, the command first (it mints by its own rule before the warden's kill lands) or the warden first (arg 1)",
}

// act is one action: its kind, the holder or node it is about, and its
// argument (a new server's clock offset).
type act struct {
	kind actKind
	who  int8
	arg  tick
}

func (a act) String() string {
	name := [nActKinds]string{"tick", "call", "call-lost", "send", "exec", "exec-lost", "abandon",
		"exec-late", "verify", "end-tx", "evict", "replicate", "failover", "crash", "backup", "move", "pitr",
		"rollback", "declare", "raise", "mark", "confirm", "switch", "widen", "create", "cancel-wait", "wal-client", "freeze", "thaw"}[a.kind]
	switch a.kind {
	case aCall, aCallLost, aSend:
		return fmt.Sprintf("%s %s h%d", name, [...]string{"", "claim", "renew", "release"}[a.arg], a.who)
	case aExec, aExecLost, aAbandon, aExecOrphan, aVerify, aEndTx, aFreeze:
		return fmt.Sprintf("%s h%d", name, a.who)
	case aThaw:
		return fmt.Sprintf("%s h%d, %s first", name, a.who, [...]string{"command", "warden"}[a.arg])
	case aEvict:
		return fmt.Sprintf("%s node %d", name, a.who)
	case aTick:
		return fmt.Sprintf("%s +%d", name, a.arg)
	case aFailover, aMove, aPITR, aRollback:
		return fmt.Sprintf("%s (clock %+d)", name, a.arg)
	}
	return name
}

// next is the statement a holder may send besides kind: a holder with a
// lease may renew it or release it.
func next(kind int8, has, rel bool) int8 {
	switch {
	case has && kind == sRenew:
		return sRelease
	case rel && kind == sRelease:
		return sClaim // it gives up the release and claims again
	}
	return 0
}

// enabled appends the actions enabled in s to out.
func (m *model) enabled(s *mstate, out []act) []act {
	f := m.b.families
	for k := tick(1); k <= m.b.maxStep && s.t+k <= m.b.tmax; k++ {
		out = append(out, act{kind: aTick, arg: k})
	}
	for h := 0; h < m.b.holders; h++ {
		hd := &s.hold[h]
		w := int8(h)
		if f&famFreeze != 0 {
			switch {
			case hd.frozen:
				out = append(out, act{kind: aThaw, who: w, arg: 0}, act{kind: aThaw, who: w, arg: 1})
				continue // a frozen process does nothing else
			case hd.has && s.left.freezes > 0:
				out = append(out, act{kind: aFreeze, who: w})
			}
		}
		if hd.pend.kind == 0 {
			kind := sClaim
			switch {
			case hd.has:
				kind = sRenew
			case hd.rel:
				kind = sRelease
			}
			for ; kind != 0; kind = next(kind, hd.has, hd.rel) {
				k := tick(kind)
				out = append(out, act{kind: aCall, who: w, arg: k})
				if s.left.lost > 0 {
					out = append(out, act{kind: aCallLost, who: w, arg: k})
				}
				if f&famLate != 0 && s.left.late > 0 {
					out = append(out, act{kind: aSend, who: w, arg: k})
				}
			}
		} else {
			out = append(out, act{kind: aExec, who: w})
			if s.left.lost > 0 {
				out = append(out, act{kind: aExecLost, who: w})
			}
			if hd.orphan.kind == 0 && hd.pend.kind != sClaim {
				out = append(out, act{kind: aAbandon, who: w})
			}
		}
		if hd.orphan.kind != 0 {
			out = append(out, act{kind: aExecOrphan, who: w})
		}
		if f&famVerify != 0 {
			if hd.has && hd.tx == 0 {
				out = append(out, act{kind: aVerify, who: w})
			}
			if hd.tx != 0 {
				out = append(out, act{kind: aEndTx, who: w})
			}
		}
	}
	if f&famEvict != 0 && s.left.evictions > 0 {
		for n := 0; n < int(s.db.cfg.nodes); n++ {
			if s.db.rows[n].owner != 0 {
				out = append(out, act{kind: aEvict, who: int8(n)})
			}
		}
	}
	if (f&(famFailover|famRaise) != 0 && s.left.failovers > 0 || f&famCrash != 0 && s.left.crashes > 0 || s.db.cfg.raise != 0 ||
		s.db.cfg.creating) && s.standby != s.db {
		out = append(out, act{kind: aReplicate})
	}
	if f&(famFailover|famRaise) != 0 && s.left.failovers > 0 {
		for _, o := range m.b.srvOffs {
			out = append(out, act{kind: aFailover, arg: o})
		}
	}
	if f&famCrash != 0 && s.left.crashes > 0 {
		out = append(out, act{kind: aCrash})
	}
	if f&famRestore != 0 {
		if s.backup != s.db && s.left.restores > 0 {
			out = append(out, act{kind: aBackup})
		}
		for _, o := range m.b.srvOffs {
			if s.left.restores > 0 {
				out = append(out, act{kind: aMove, arg: o}, act{kind: aPITR, arg: o}, act{kind: aRollback, arg: o})
			}
		}
		out = append(out, act{kind: aDeclare})
	}
	if f&(famRaise|famCreate) != 0 || (f&famRestore != 0 && m.b.raiseTo > 0) {
		c := &s.db.cfg
		if c.raise == 0 && c.maxTTL < m.b.raiseTo || max(c.raise, c.maxTTL) < m.b.raiseTo2 {
			out = append(out, act{kind: aRaise})
		}
		if (c.raise != 0 || c.creating) && (s.mark != c.raise || s.markCreate != c.creating || s.srvSID != s.markSID || s.srvTL != s.markTL) {
			out = append(out, act{kind: aMark})
		}
		if c.raise != 0 && s.mark != 0 || c.creating && s.markCreate {
			out = append(out, act{kind: aConfirm})
			if !s.clientSeen {
				out = append(out, act{kind: aWALClient})
			}
		}
	}
	if f&famCreate != 0 && s.db.cfg.gen == 0 {
		out = append(out, act{kind: aCreate})
	}
	if f&famDDL != 0 {
		if s.left.switches > 0 {
			out = append(out, act{kind: aSwitch})
		}
		if int(s.db.cfg.nodes) < m.b.widenTo {
			out = append(out, act{kind: aWiden})
		}
		if s.left.cancels > 0 && s.db.cfg.sync && !s.stalled {
			out = append(out, act{kind: aCancelWait})
		}
	}
	return out
}

// step applies a to s. It reports false if a changed nothing (and s is to
// be dropped), and the invariant it broke, if any.
func (m *model) step(s *mstate, a act) (bool, *violation) {
	h := int(a.who)
	switch a.kind {
	case aCallLost, aExecLost:
		s.left.lost--
	case aSend:
		s.left.late--
	case aEvict:
		s.left.evictions--
	case aFailover:
		s.left.failovers--
	case aCrash:
		s.left.crashes--
	case aMove, aPITR, aRollback:
		s.left.restores--
	case aSwitch:
		s.left.switches--
	case aCancelWait:
		s.left.cancels--
	case aFreeze:
		s.left.freezes--
	}
	switch a.kind {
	case aTick:
		for k := tick(0); k < a.arg; k++ {
			if k > 0 {
				if v := m.mint(s); v != nil {
					return true, v
				}
			}
			s.t++
			for i := 0; i < m.b.holders; i++ {
				hd := &s.hold[i]
				if hd.has && s.t >= hd.dl && !hd.frozen { // the deadline timer fires
					hd.has, hd.rel = false, true // Close still frees the row if the database holds it
				}
			}
		}
	case aCall, aCallLost, aSend:
		m.send(s, h, int8(a.arg))
		if a.kind == aSend {
			break
		}
		st := s.hold[h].pend
		s.hold[h].pend = stmt{}
		if v := m.exec(s, h, st, a.kind == aCall); v != nil {
			return true, v
		}
	case aExec, aExecLost:
		st := s.hold[h].pend
		s.hold[h].pend = stmt{}
		if v := m.exec(s, h, st, a.kind == aExec); v != nil {
			return true, v
		}
	case aAbandon:
		hd := &s.hold[h]
		hd.orphan, hd.pend = hd.pend, stmt{}
	case aExecOrphan:
		st := s.hold[h].orphan
		s.hold[h].orphan = stmt{}
		// A statement's now() is its transaction's start: one its holder
		// stopped waiting for may have begun at once and stalled, and
		// commit only now, on the server it was sent to.
		t := s.t
		if st.srv == s.servers {
			s.t = st.t0
		}
		v := m.exec(s, h, st, false)
		s.t = t
		if v != nil {
			return true, v
		}
	case aVerify:
		hd := &s.hold[h]
		if m.verify(s, h) {
			hd.tx = hd.node + 1
		} else {
			hd.has = false // Verify ends the lease it finds lost
		}
	case aEndTx:
		s.hold[h].tx = 0
	case aEvict:
		if !m.evict(s, h) {
			return false, nil
		}
	case aReplicate:
		s.standby, s.stalled = s.db, false
		// Past the mark's position: on its timeline the standby has the
		// raise or the creation; on another, the new timeline's WAL may
		// have passed it.
		s.markSeen = s.mark != 0 || s.markCreate
	case aFailover:
		s.servers++
		s.db = s.standby
		s.srvTL++
		s.srvOff = a.arg
		m.abortTx(s)
	case aCrash:
		s.servers++
		if m.mut == "async-lease-write" {
			s.db.rows = s.standby.rows // what was not flushed is lost
		}
		m.abortTx(s)
	case aBackup:
		s.backup, s.grantedSince = s.db, 0
	case aMove, aPITR, aRollback:
		s.servers++
		s.db = s.backup
		s.srvOff = a.arg
		if s.standby.cfg.sync {
			// A synchronous standby follows the restored server (it is
			// rebuilt from it): promoting the old history would be a
			// failover of a table that records sync that loses commits.
			s.standby = s.db
		}
		switch a.kind {
		case aMove:
			s.srvSID, s.srvTL = s.nextSID, 1
			s.nextSID++
			s.db.cfg.owed = max(s.db.cfg.owed, s.grantedSince)
			if m.trusted(&s.db.cfg) {
				// A trusted copy never sees the move: the operator
				// declares it before clients connect, as the statements
				// cannot.
				m.restored(s, s.grantedSince)
			}
		case aPITR:
			s.srvTL++
			m.restored(s, s.grantedSince)
		case aRollback:
			m.restored(s, s.grantedSince)
		}
		m.abortTx(s)
	case aDeclare:
		m.restored(s, s.grantedSince)
	case aRaise:
		to := m.b.raiseTo
		if max(s.db.cfg.raise, s.db.cfg.maxTTL) >= to {
			to = m.b.raiseTo2
		}
		m.raise(s, to)
	case aMark:
		s.mark, s.markCreate, s.markSID, s.markTL = s.db.cfg.raise, s.db.cfg.creating, s.srvSID, s.srvTL
		s.markSeen, s.clientSeen = s.standby == s.db, false
	case aWALClient:
		s.clientSeen = true
	case aConfirm:
		if !m.confirm(s) {
			return false, nil
		}
	case aSwitch:
		m.ddlSwitch(s)
	case aWiden:
		m.ddlWiden(s, m.b.widenTo)
	case aCreate:
		m.create(s)
	case aCancelWait:
		s.stalled = true
	case aFreeze:
		s.hold[h].frozen = true
	case aThaw:
		if v := m.thaw(s, h, a.arg == 0); v != nil {
			return true, v
		}
	}
	if (s.db.cfg.sync || a.kind == aSwitch) && !s.stalled {
		// While the table records sync the operator keeps the replication
		// synchronous, the switch's own commit included, either way: the
		// standby has every commit, unless it stalled and a wait for it
		// was cancelled (aCancelWait).
		s.standby, s.markSeen = s.db, s.mark != 0 || s.markCreate
	}
	return true, m.mint(s)
}

// send is the holder sending a statement of kind at t0 = s.t, with the
// arguments the client computes (horizonFor, the lease's ceiling, the
// sealed generator's last stamp).
func (m *model) send(s *mstate, h int, kind int8) {
	hd := &s.hold[h]
	defer func() { hd.pend.srv = s.servers }()
	switch kind {
	case sClaim:
		hd.pend = stmt{kind: sClaim, t0: s.t, h5: s.t + hd.off + hd.ttl}
	case sRenew:
		hd.pend = stmt{kind: sRenew, node: hd.node, epoch: hd.epoch, t0: s.t, h5: s.t + hd.off + hd.ttl}
	case sRelease:
		// Release seals the generator and records the latest millisecond it
		// stamped; a retry sends the same.
		hd.has, hd.rel = false, true
		// A holder that stamped nothing sends 0 (stampLo here), as docs/sql.md's
		// session does: the database keeps the horizon its claim stamped after.
		last := hd.last
		if last == hd.prev {
			last = stampLo
		}
		hd.pend = stmt{kind: sRelease, node: hd.node, epoch: hd.epoch, t0: s.t, h6: last, exact: true}
	}
}

func (m *model) abortTx(s *mstate) {
	for i := range s.hold {
		s.hold[i].tx = 0
	}
}

// exec runs statement st of holder h on the current primary; delivered
// says whether its answer reaches the holder.
func (m *model) exec(s *mstate, h int, st stmt, delivered bool) *violation {
	hd := &s.hold[h]
	if st.kind == sClaim {
		m.seen(s) // the claim's head (and the refusal's, after a claim that finds nothing)
	}
	now := s.now()
	switch st.kind {
	case sClaim:
		hd.rel = false
		pre := s.db
		ok, n, r, prev, v := m.claim(s, h, st)
		if v != nil || !ok {
			return v
		}
		// Rule 2: epochs strictly increase per node ID, across every
		// history a failover or a restore lost.
		if r.epoch <= s.maxEpoch[n] {
			return &violation{"2", fmt.Sprintf("node %d granted epoch %s, not above %s granted before (row had %s, generation %d of %d)",
				n, epochStr(r.epoch), epochStr(s.maxEpoch[n]), epochStr(pre.rows[n].epoch), pre.rows[n].gen, s.db.cfg.gen)}
		}
		s.maxEpoch[n] = r.epoch
		s.maxGranted = max(s.maxGranted, hd.ttl)
		s.grantedSince = max(s.grantedSince, hd.ttl)
		if !delivered {
			return nil
		}
		hd.nth++
		hd.has, hd.rel, hd.node, hd.epoch, hd.lease = true, false, int8(n), r.epoch, int8(h+1)+4*(hd.nth%16)
		hd.prev, hd.hloc, hd.last, hd.dl, hd.dlSrv = prev, r.horizon, prev, m.deadline(s, hd, st, r.expires), s.servers
		if s.t >= hd.dl { // the claim took longer than the lease allows: released
			hd.has, hd.rel = false, true
		}
	case sRenew:
		pre := s.db.rows[st.node]
		ok, r := m.renew(s, h, st)
		if ok {
			// Rule 3: only the live lease of this owner and epoch.
			if pre.owner != int8(h+1) || pre.epoch != st.epoch || pre.expires < now {
				return &violation{"3", fmt.Sprintf("node %d renewed for holder %d epoch %s: the row had owner %d epoch %s expiring at %d, now %d",
					st.node, h, epochStr(st.epoch), pre.owner-1, epochStr(pre.epoch), pre.expires, now)}
			}
			s.maxGranted = max(s.maxGranted, hd.ttl)
			s.grantedSince = max(s.grantedSince, hd.ttl)
		}
		if !hd.has || hd.epoch != st.epoch || hd.node != st.node {
			return nil
		}
		if delivered {
			if !ok {
				hd.has = false // taken over, evicted, expired or lost in a failover
				return nil
			}
			hd.dl, hd.dlSrv, hd.hloc = m.deadline(s, hd, st, r.expires), s.servers, max(hd.hloc, r.horizon)
		}
		// Rule 4: the lease the holder keeps ends, by its deadline, before
		// the server that gave it the deadline takes it for expired. (Another
		// server's copy may lack renewals, and its clock differ by up to
		// tol: the quarantine covers those.)
		if ok && hd.dlSrv == s.servers && hd.dl > r.expires-s.srvOff {
			return &violation{"4", fmt.Sprintf("node %d: holder %d keeps epoch %s until %d, but the row expires at %d (true time %d)",
				st.node, h, epochStr(st.epoch), hd.dl, r.expires, r.expires-s.srvOff)}
		}
	case sRelease:
		pre := s.db.rows[st.node]
		ok := m.release(s, h, st)
		if ok && (pre.owner != int8(h+1) || pre.epoch != st.epoch || pre.expires < now) {
			return &violation{"3", fmt.Sprintf("node %d released for holder %d epoch %s: the row had owner %d epoch %s expiring at %d, now %d",
				st.node, h, epochStr(st.epoch), pre.owner-1, epochStr(pre.epoch), pre.expires, now)}
		}
		if delivered && hd.epoch == st.epoch && st.node == hd.node {
			hd.rel = false // released, or lost: nothing more to send
		}
	}
	return nil
}

// deadline is localDeadline: t0 plus the time the server granted (the
// expiry less the server's now() of the statement), on the holder's
// monotonic clock, which the model's true time stands for. The margin
// (TTL/10) covers a drift of the clocks' rates, which the model's clocks
// do not have.
func (m *model) deadline(s *mstate, hd *holder, st stmt, expires tick) tick {
	if m.mut == "deadline-by-wall-clock" {
		return expires - hd.off // the holder's wall clock reads expires_at then
	}
	return st.t0 + (expires - s.now())
}

// mint is the holders' generators: each live lease may stamp its clock's
// millisecond, if it is after the previous horizon and not after the
// horizon it holds (Fence.Check). Rule 5: no two leases of a node ever
// stamp the same millisecond.
func (m *model) mint(s *mstate) *violation {
	for h := 0; h < m.b.holders; h++ {
		hd := &s.hold[h]
		if !hd.has || s.t >= hd.dl || hd.frozen {
			continue
		}
		ms := s.t + hd.off
		if ms <= hd.prev || ms > hd.hloc || ms <= hd.last {
			continue
		}
		i := ms - stampLo
		if i < 0 || i >= nStamps {
			panic(fmt.Sprintf("model: millisecond %d outside the stamp range", ms))
		}
		if o := s.stamp[hd.node][i]; o != 0 && o != hd.lease {
			return &violation{"5", fmt.Sprintf("node %d: millisecond %d stamped by lease #%d and by holder %d's lease #%d (epoch %s)",
				hd.node, ms, o, h, hd.lease, epochStr(hd.epoch))}
		}
		s.stamp[hd.node][i] = hd.lease
		hd.last = ms
	}
	return nil
}

// thaw resumes a frozen holder. When its command runs before the warden
// (commandFirst), it mints once by its own rule before the warden's kill at
// the deadline lands, with the lease file as it was at the freeze (which
// still says the lease is held): a command that follows docs/run.md
// re-reads the file before each ID and stamps only at or below the
// ceiling it holds (horizon_ceiling_ms, never above the horizon the
// database recorded); one that keeps only NODEID_HORIZON_MS (the mutant)
// stamps after the previous holder's horizon and nothing else. Then the
// deadline timer, or the warden's kill, ends the lease if it has passed.
func (m *model) thaw(s *mstate, h int, commandFirst bool) *violation {
	hd := &s.hold[h]
	hd.frozen = false
	ms := s.t + hd.off
	if commandFirst && hd.has && ms > hd.prev && ms > hd.last && ms-stampLo < nStamps &&
		(ms <= hd.hloc || m.mut == "e3-command-trusts-warden") {
		if o := s.stamp[hd.node][ms-stampLo]; o != 0 && o != hd.lease {
			return &violation{"5", fmt.Sprintf("node %d: millisecond %d stamped by lease #%d and, thawed, by holder %d's lease #%d (epoch %s)",
				hd.node, ms, o, h, hd.lease, epochStr(hd.epoch))}
		}
		s.stamp[hd.node][ms-stampLo], hd.last = hd.lease, ms
	}
	if hd.has && s.t >= hd.dl {
		hd.has, hd.rel = false, true
	}
	return nil
}

func epochStr(e int32) string {
	if e>>8 == 0 {
		return fmt.Sprint(e)
	}
	return fmt.Sprintf("era %d+%d", e>>8, e&255)
}
