package admin

// The model checker: an explicit-state breadth-first search of the model of
// model_test.go, exhaustive for each family of environment actions at the
// bounds below, and a seeded random simulation of traces that combine
// every family. scripts/check-model runs it; TestModel and
// TestModelMutants run it in go test.

import (
	"cmp"
	"flag"
	"fmt"
	"hash/maphash"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"
)

var (
	modelMutant = flag.String("model.mutant", "", "run the model checker with this mutant (see -model.list-mutants); it must find a violation")
	modelLong   = flag.Bool("model.long", false, "run the model checker's longer bounds")
	modelList   = flag.Bool("model.list-mutants", false, "print the model's mutants, one a line, and exit")
	modelSeed   = flag.Uint64("model.seed", 0, "the random simulation's seed (0: from the clock, printed)")
	modelRun    = flag.String("model.run", "", "run only the runs whose name contains this")
	modelSkip   = flag.String("model.skip", "", "skip the runs whose name contains this (CI splits the check across cores)")
)

// A run is one exploration: its name, bounds and how it explores.
type run struct {
	name   string
	b      bounds
	random int // traces to simulate; 0: exhaustive
}

// runs are the explorations of a check: exhaustive runs, each of a family of
// environment actions at its bounds, and a random simulation that combines
// every family. docs/protocol.md states them with their figures.
func runs(long bool) []run {
	// Three holders on two node IDs, TTLs of 2 ticks: the general runs.
	three := bounds{
		holders: 3, nodes: 2, tmax: 12, maxStep: 1, depth: 8, ttl: [maxHold]tick{2, 2, 2}, maxTTL: 2, tol: 1,
		holdOffs: [][]tick{{0, -2, 1}}, srv0: 0, srvOffs: []tick{0},
		budget: budget{failovers: 1, evictions: 1, lost: 1, restores: 1, crashes: 1, late: 1},
	}
	// Two holders, deeper: the runs that reach the longer interleavings.
	two := three
	two.holders, two.depth, two.maxStep = 2, 9, 2
	raising := func(b bounds) bounds {
		b.ttl, b.raiseTo = [maxHold]tick{2, 4, 4}, 4
		return b
	}
	// A holder whose clock is behind, one whose clock is ahead.
	skewed := two
	skewed.holdOffs = [][]tick{{-2, 0}}
	ahead := two
	ahead.holdOffs = [][]tick{{0, 1}}
	// A long lease (4 ticks) whose holder's clock is behind, beside a short one.
	long4 := skewed
	long4.ttl, long4.maxTTL = [maxHold]tick{4, 2}, 4
	// The first server's clock ahead; a new one's as far behind as the
	// servers may be apart.
	clocks := two
	clocks.srv0, clocks.srvOffs = 1, []tick{0, 1}
	clocks.holdOffs = [][]tick{{-2, 0}, {2, 0}, {3, 0}}
	late := clocks
	late.holdOffs, late.depth, late.srvOffs = [][]tick{{0, 0}}, 10, []tick{0}
	late.budget.lost = 0
	// Statements that arrive out of order, and nothing else.
	reorder := two
	reorder.holdOffs, reorder.depth = [][]tick{{0, -2}}, 11
	reorder.budget.lost = 0
	// A raise pending from the start, which the standby has, and a second
	// one, to a TTL longer than the first one's quarantine covers.
	twice := two
	twice.ttl, twice.maxTTL, twice.raiseTo, twice.raiseTo2, twice.pending = [maxHold]tick{8, 2}, 2, 4, 8, 4
	twice.holdOffs, twice.maxStep = [][]tick{{0, 0}}, 3
	// A backup older than a raise (its maximum is a third of the table's),
	// restored in another cluster, declared, and failed over there.
	copyFailover := two
	copyFailover.ttl, copyFailover.maxTTL, copyFailover.backupMax = [maxHold]tick{6, 2}, 6, 2
	copyFailover.holdOffs, copyFailover.maxStep, copyFailover.depth = [][]tick{{0, 0}}, 4, 7
	// A raise pending from the start that the standby lacks, read by init
	// before a failover; the same raise made again on the new primary; a
	// second failover.
	raiseFailover := twice
	raiseFailover.nodes, raiseFailover.lacks, raiseFailover.depth, raiseFailover.maxTTL = 1, true, 12, 1
	raiseFailover.ttl, raiseFailover.pending, raiseFailover.raiseTo, raiseFailover.raiseTo2 = [maxHold]tick{8, 1}, 8, 8, 0
	raiseFailover.budget.failovers = 2
	// One node ID, a failover and a statement that commits late, deeper:
	// a survivor's statement on the new server after another's claim
	// started its generation.
	lateFailover := late
	lateFailover.nodes, lateFailover.depth = 1, 12
	// The DDL: a range of one node ID widened to two, the replication mode
	// switched to sync and back, a failover and a lost answer.
	ddl := two
	ddl.nodes, ddl.widenTo, ddl.budget.switches, ddl.budget.cancels, ddl.depth = 1, 2, 2, 1, 10
	// The same with the restores instead of the failover, shallower: a
	// move, a point-in-time recovery or a rollback that loses a widening.
	ddlRestore := ddl
	ddlRestore.depth = 8
	// A backup older than a raise, moved twice: the first move declared
	// with the longest lease of the old history, the second with what was
	// granted since (the copy's maximum).
	moveTwice := copyFailover
	moveTwice.nodes, moveTwice.depth, moveTwice.budget.restores, moveTwice.budget.failovers = 1, 8, 2, 0
	// No table anywhere at the start: the DDL creates it, a failover may
	// lose the creation, and the DDL creates it again on the new primary.
	create := two
	create.nodes, create.absent, create.depth, create.holdOffs = 1, true, 12, [][]tick{{0, -2}}
	create.budget.failovers = 2
	// A holder's whole process tree frozen past its deadline while the
	// other takes its node ID over, then thawed in either order.
	freeze := two
	freeze.nodes, freeze.depth, freeze.budget.freezes = 1, 10, 1
	freeze.holdOffs = [][]tick{{0, 0}, {-2, 0}}
	fam := func(name string, b bounds, f family) run {
		b.families = f
		if long {
			b.depth++
			if b.holders == 2 {
				b.holdOffs = append(b.holdOffs, []tick{-1, 2})
			}
		}
		return run{name: name, b: b}
	}
	out := []run{
		fam("3h:failover", three, famFailover),
		fam("3h:failover+evict", three, famFailover|famEvict),
		fam("3h:restore", raising(three), famRestore),
		fam("3h:raise", raising(three), famRaise),
		fam("3h:verify+evict", three, famVerify|famEvict),
		fam("2h:failover+evict", long4, famFailover|famEvict),
		fam("2h:clock", clocks, famFailover),
		fam("2h:clock+late", late, famFailover|famLate),
		fam("2h:late+failover", lateFailover, famFailover|famLate),
		fam("2h:raise", raising(ahead), famRaise),
		fam("2h:restore", raising(ahead), famRestore),
		fam("2h:crash", skewed, famCrash),
		fam("2h:late", reorder, famLate),
		fam("2h:raise-twice", twice, famRaise),
		fam("2h:raise+failover", raiseFailover, famRaise),
		fam("2h:restore+failover", copyFailover, famRestore|famFailover),
		fam("2h:move-twice", moveTwice, famRestore),
		fam("2h:ddl", ddl, famDDL|famFailover),
		fam("2h:ddl+restore", ddlRestore, famDDL|famRestore),
		fam("2h:create", create, famCreate|famFailover),
		fam("2h:freeze", freeze, famFreeze),
	}
	all := raising(three)
	all.families = famFailover | famEvict | famRestore | famRaise | famCrash | famVerify | famLate | famDDL | famFreeze
	all.depth, all.tmax, all.maxStep = 30, 20, 3
	all.srv0, all.srvOffs = 1, []tick{0, 1}
	all.holdOffs = [][]tick{{0, -2, 1}, {2, 0, -2}, {-1, 3, 0}, {0, 0, 0}}
	all.budget = budget{failovers: 2, evictions: 2, lost: 2, restores: 2, crashes: 2, late: 2, switches: 2, cancels: 1, freezes: 1}
	sim := run{name: "random", b: all, random: 100000}
	if long {
		sim.random = 5000000
	}
	return append(out, sim)
}

// result is what a run found.
type result struct {
	states, transitions int
	depth               int
	traces              int
	v                   *violation
	trace               []act
	initial             mstate
	elapsed             time.Duration
}

// explore runs r under mutant mut.
func explore(r run, mut mutant, seed uint64) result {
	m := &model{b: r.b, mut: mut}
	start := time.Now()
	var res result
	if r.random > 0 {
		res = m.simulate(r.random, seed)
	} else {
		res = m.dfs()
	}
	res.elapsed = time.Since(start)
	return res
}

// dfs explores every trace of up to b.depth actions, depth first, visiting
// a state again only when it is reached with more actions left than
// before. A violation's trace is then made minimal (minimize).
func (m *model) dfs() result {
	seed := maphash.MakeSeed()
	var (
		res     result
		visited = newStateSet()
		stack   []act
		acts    = make([][]act, m.b.depth)
		next    = make([]mstate, m.b.depth) // each level's state after its action, reused
		found   bool
	)
	var rec func(s *mstate, d int)
	rec = func(s *mstate, d int) {
		res.depth = max(res.depth, d)
		if d == m.b.depth {
			return
		}
		acts[d] = m.enabled(s, acts[d][:0])
		t := &next[d]
		for _, a := range acts[d] {
			*t = *s
			changed, v := m.step(t, a)
			res.transitions++
			if !changed {
				continue
			}
			stack = append(stack, a)
			if v != nil {
				res.v, res.trace, found = v, append([]act(nil), stack...), true
				return
			}
			if visited.visit(hashState(seed, t), int8(m.b.depth-d-1)) {
				rec(t, d+1)
				if found {
					return
				}
			}
			stack = stack[:len(stack)-1]
		}
	}
	for _, s := range m.initial() {
		if !visited.visit(hashState(seed, &s), int8(m.b.depth)) {
			continue
		}
		res.initial = s
		if rec(&s, 0); found {
			break
		}
	}
	res.states = visited.n
	if found {
		res.trace = m.minimize(res.initial, res.trace)
	}
	return res
}

// minimize drops actions from a violating trace while the rest still
// breaks an invariant, until no single action can go.
func (m *model) minimize(init mstate, tr []act) []act {
	violates := func(tr []act) bool {
		s := init
		for _, a := range tr {
			if !m.isEnabled(&s, a) {
				return false
			}
			changed, v := m.step(&s, a)
			if v != nil {
				return true
			}
			if !changed {
				return false
			}
		}
		return false
	}
	for again := true; again; {
		again = false
		for i := range tr {
			shorter := append(append([]act(nil), tr[:i]...), tr[i+1:]...)
			if violates(shorter) {
				tr, again = shorter, true
				break
			}
		}
	}
	return tr
}

// isEnabled reports whether a is enabled in s.
func (m *model) isEnabled(s *mstate, a act) bool {
	for _, b := range m.enabled(s, nil) {
		if b == a {
			return true
		}
	}
	return false
}

// simulate walks n random traces of up to b.depth actions from seed.
func (m *model) simulate(n int, seed uint64) result {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	inits := m.initial()
	var (
		res  result
		acts []act
	)
	for i := 0; i < n; i++ {
		s := inits[rng.IntN(len(inits))]
		init := s
		var tr []act
		for d := 0; d < m.b.depth; d++ {
			acts = m.enabled(&s, acts[:0])
			if len(acts) == 0 {
				break
			}
			a := acts[rng.IntN(len(acts))]
			changed, v := m.step(&s, a)
			res.transitions++
			if !changed {
				continue
			}
			tr = append(tr, a)
			if v != nil {
				res.v, res.trace, res.initial, res.traces = v, tr, init, i+1
				return res
			}
		}
		res.traces++
	}
	return res
}

// report writes the trace of a violation: every action with the rule it
// stands for, and the state it led to.
func (m *model) report(w io.Writer, res result) {
	s := res.initial
	fmt.Fprintf(w, "VIOLATION: rule %s: %s\n", res.v.rule, res.v.what)
	fmt.Fprintf(w, "  initial: %s\n", m.describe(&s))
	for i, a := range res.trace {
		m.step(&s, a)
		fmt.Fprintf(w, "  %2d. %-22s %s\n      -> %s\n", i+1, a, rules[a.kind], m.describe(&s))
	}
}

// describe is a one-line account of s.
func (m *model) describe(s *mstate) string {
	var b strings.Builder
	if s.db.cfg.gen == 0 {
		fmt.Fprintf(&b, "t=%d db(now %d, server %d/tl %d, no table)", s.t, s.now(), s.srvSID, s.srvTL)
		return b.String() + m.describeHolders(s)
	}
	fmt.Fprintf(&b, "t=%d db(now %d, server %d/tl %d, gen %d, quarantine until %s, max %d", s.t, s.now(), s.srvSID, s.srvTL,
		s.db.cfg.gen, quarantineStr(s.db.cfg.quarantineUntil), s.db.cfg.maxTTL)
	if s.db.cfg.creating {
		b.WriteString(" creating")
	}
	if s.db.cfg.sync {
		b.WriteString(" sync")
	}
	if m.b.widenTo > m.b.nodes {
		fmt.Fprintf(&b, " nodes 0-%d", s.db.cfg.nodes-1)
	}
	if s.db.cfg.raise != 0 {
		fmt.Fprintf(&b, " raise %d", s.db.cfg.raise)
	}
	if s.mark != 0 {
		fmt.Fprintf(&b, " marked %d", s.mark)
	}
	if s.markCreate {
		b.WriteString(" marked creation")
	}
	b.WriteString(")")
	for n := 0; n < max(m.b.nodes, m.b.widenTo); n++ {
		if n >= int(s.db.cfg.nodes) {
			fmt.Fprintf(&b, " [n%d absent]", n)
			continue
		}
		r := s.db.rows[n]
		owner := "-"
		if r.owner != 0 {
			owner = fmt.Sprintf("h%d", r.owner-1)
		}
		fmt.Fprintf(&b, " [n%d %s e%s exp %s hz %d g%d]", n, owner, epochStr(r.epoch), expStr(r.expires), r.horizon, r.gen)
	}
	return b.String() + m.describeHolders(s)
}

// describeHolders is the holders' part of describe.
func (m *model) describeHolders(s *mstate) string {
	var b strings.Builder
	for h := 0; h < m.b.holders; h++ {
		hd := &s.hold[h]
		fmt.Fprintf(&b, " h%d(clock %+d", h, hd.off)
		if hd.has {
			fmt.Fprintf(&b, " holds n%d e%s after %d to %d, until %d", hd.node, epochStr(hd.epoch), hd.prev, hd.hloc, hd.dl)
		}
		if hd.tx != 0 {
			fmt.Fprintf(&b, " tx on n%d", hd.tx-1)
		}
		b.WriteString(")")
	}
	return b.String()
}

func quarantineStr(f tick) string {
	if f == noQuarantine {
		return "pending"
	}
	return fmt.Sprint(f)
}

func expStr(e tick) string {
	if e == never {
		return "-inf"
	}
	return fmt.Sprint(e)
}

// checkModel runs every run under mut (the mutant's witness run first),
// writing what it explored to w; it stops at the first violation and
// returns it with its run's model.
func checkModel(w io.Writer, mut mutant, long bool, seed uint64, only func(run) bool) (*model, *result) {
	all := runs(long)
	for _, mu := range mutants {
		if mu.name == mut {
			slices.SortStableFunc(all, func(a, b run) int {
				return cmp.Compare(b2i(a.name != mu.witness), b2i(b.name != mu.witness))
			})
		}
	}
	for _, r := range all {
		if !only(r) {
			continue
		}
		res := explore(r, mut, seed)
		if res.v != nil && r.random > 0 {
			fmt.Fprintf(w, "run %s (%s): violation in random trace %d (seed %d: -model.seed replays it), %v\n",
				r.name, r.b.families, res.traces, seed, res.elapsed.Round(time.Millisecond))
			return &model{b: r.b, mut: mut}, &res
		}
		if res.v != nil {
			fmt.Fprintf(w, "run %s (%s): violation after %d states, %v\n", r.name, r.b.families, res.states, res.elapsed.Round(time.Millisecond))
			return &model{b: r.b, mut: mut}, &res
		}
		if r.random > 0 {
			fmt.Fprintf(w, "run %-18s %d random traces of up to %d actions (%d transitions, seed %d): no violation, %v\n",
				r.name, res.traces, r.b.depth, res.transitions, seed, res.elapsed.Round(time.Millisecond))
		} else {
			fmt.Fprintf(w, "run %-18s %9d states, %10d transitions, depth %2d, time 0..%d: no violation, %v\n",
				r.name, res.states, res.transitions, res.depth, r.b.tmax, res.elapsed.Round(time.Millisecond))
		}
	}
	return nil, nil
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func seedOf() uint64 {
	if *modelSeed != 0 {
		return *modelSeed
	}
	return uint64(time.Now().UnixNano())
}

// TestModel checks the protocol's model at the short bounds (or
// -model.long). With -model.mutant it runs that mutant, which must break an
// invariant: the test then fails with the violation's trace. With -short it
// runs the three-holder runs only. The race detector would make it take
// many times as long: under it the test skips, and CI runs the model
// without it (scripts/check-model).
func TestModel(t *testing.T) {
	if *modelList {
		for _, m := range mutants {
			fmt.Println(m.name)
		}
		return
	}
	if *modelMutant != "" && !knownMutant(*modelMutant) {
		fmt.Fprintf(os.Stderr, "unknown mutant %q: -model.list-mutants lists them\n", *modelMutant)
		os.Exit(2)
	}
	if raceEnabled {
		t.Skip("the model checker runs without the race detector: scripts/check-model")
	}
	only := func(r run) bool {
		return strings.Contains(r.name, *modelRun) && (*modelSkip == "" || !strings.Contains(r.name, *modelSkip)) &&
			(!testing.Short() || strings.HasPrefix(r.name, "3h:"))
	}
	m, res := checkModel(os.Stdout, mutant(*modelMutant), *modelLong, seedOf(), only)
	if res != nil {
		m.report(os.Stdout, *res)
		t.Fail()
	}
}

// TestModelMutants runs each mutant on the run that catches it: each must
// break an invariant, so that the checker is known to find what each rule
// prevents.
func TestModelMutants(t *testing.T) {
	if *modelMutant != "" || *modelList {
		t.Skip("TestModel runs the mutant given")
	}
	if raceEnabled || testing.Short() {
		t.Skip("the model checker runs without the race detector and -short: scripts/check-model")
	}
	for _, mu := range mutants {
		t.Run(string(mu.name), func(t *testing.T) {
			m, res := checkModel(io.Discard, mu.name, false, seedOf(), func(r run) bool { return r.name == mu.witness })
			if res == nil {
				t.Fatalf("mutant %s (%s) broke no invariant in run %s", mu.name, mu.rule, mu.witness)
			}
			var b strings.Builder
			m.report(&b, *res)
			t.Logf("%s", b.String())
		})
	}
}

// hashState hashes the memory of s: a state holds no pointers, and its
// padding is never written, so equal states have equal bytes.
func hashState(seed maphash.Seed, s *mstate) uint64 {
	return maphash.Bytes(seed, unsafe.Slice((*byte)(unsafe.Pointer(s)), unsafe.Sizeof(*s)))
}

// stateSet is a set of state hashes, each with the most actions a trace
// had left when it reached the state: open addressing, half full at most.
type stateSet struct {
	keys []uint64
	left []int8
	n    int
}

func newStateSet() *stateSet {
	return &stateSet{keys: make([]uint64, 1<<16), left: make([]int8, 1<<16)}
}

// visit records that k was reached with left actions to go, and reports
// whether it is to be explored: it is new, or was reached before with
// fewer actions left.
func (t *stateSet) visit(k uint64, left int8) bool {
	if k == 0 {
		k = 1
	}
	if 2*(t.n+1) > len(t.keys) {
		keys, lefts := t.keys, t.left
		t.keys, t.left, t.n = make([]uint64, 2*len(keys)), make([]int8, 2*len(keys)), 0
		for i, o := range keys {
			if o != 0 {
				t.visit(o, lefts[i])
			}
		}
	}
	mask := uint64(len(t.keys) - 1)
	for i := k & mask; ; i = (i + 1) & mask {
		switch t.keys[i] {
		case 0:
			t.keys[i], t.left[i] = k, left
			t.n++
			return true
		case k:
			if t.left[i] >= left {
				return false
			}
			t.left[i] = left
			return true
		}
	}
}
