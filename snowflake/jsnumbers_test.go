package snowflake

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"sync/atomic"
	"testing"
	"time"

	bw "github.com/bwmarrin/snowflake"
)

// IDs of JS53, minted now and at the end of the layout (up to its largest,
// 2^53-1), reach a real Node.js process as JSON numbers and come out
// unchanged: JSON.parse reads each as a safe integer whose text is the ID's.
// IDs of DefaultLayout, minted now, all fail the same check.
func TestJS53IDsSurviveJavaScript(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("no node on PATH: the JavaScript round trip needs Node.js")
	}
	js53 := mintForJS(t, JS53, 1023, time.Now().UnixMilli(), 2000)
	// The last IDs the layout can mint: the rest of its last millisecond.
	js53 = append(js53, mintForJS(t, JS53, 1023, JS53.End(), JS53.PerUnit())...)
	largest, err := JS53.Encode(Parts{Ms: JS53.End(), Node: JS53.MaxNode(), Seq: JS53.PerUnit() - 1})
	if err != nil || js53[len(js53)-1] != largest || largest != 1<<53-1 {
		t.Fatalf("the last ID minted is %d, the largest encoded %d (%v); want 2^53-1", js53[len(js53)-1], largest, err)
	}
	if checked, bad := readInJS(t, node, js53); checked != len(js53) || len(bad) != 0 {
		t.Fatalf("JavaScript checked %d of %d JS53 IDs and read %d wrongly, the first: %s", checked, len(js53), len(bad), bad[0])
	}

	def := mintForJS(t, DefaultLayout, 1023, time.Now().UnixMilli(), 2000)
	if checked, bad := readInJS(t, node, def); checked != len(def) || len(bad) != len(def) {
		t.Fatalf("JavaScript checked %d of %d IDs of the default layout and read %d wrongly; want all wrong", checked, len(def), len(bad))
	}
}

// mintForJS mints n IDs on node ID node with a generator of layout l whose
// clock starts at unix millisecond from and moves one millisecond every
// PerUnit readings, so that no ID waits.
func mintForJS(t *testing.T, l Layout, node, from, n int64) []bw.ID {
	t.Helper()
	var reads atomic.Int64
	clock := func() time.Time { return time.UnixMilli(from + (reads.Add(1)-1)/l.PerUnit()) }
	g := mustNew(t, newFake(node, 1, 0), WithLayout(l), WithClock(clock))
	ids := make([]bw.ID, n)
	for i := range ids {
		id, err := g.Generate()
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = id
	}
	return ids
}

// readInJS hands ids to testdata/jsnumbers.js as JSON numbers, beside their
// decimal text, and returns how many it checked and those it read wrongly.
func readInJS(t *testing.T, node string, ids []bw.ID) (checked int, bad []json.RawMessage) {
	t.Helper()
	in := struct {
		IDs  []int64  `json:"ids"`
		Text []string `json:"text"`
	}{}
	for _, id := range ids {
		in.IDs, in.Text = append(in.IDs, int64(id)), append(in.Text, id.String())
	}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), node, "testdata/jsnumbers.js")
	cmd.Stdin = bytes.NewReader(b)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node testdata/jsnumbers.js: %v", err)
	}
	var res struct {
		Checked int               `json:"checked"`
		Bad     []json.RawMessage `json:"bad"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("node wrote %q: %v", out, err)
	}
	return res.Checked, res.Bad
}
