package ids

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	bw "github.com/bwmarrin/snowflake"

	"github.com/nodeid/nodeid/cmd/nodeid/internal/cli"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/clitest"
	"github.com/nodeid/nodeid/snowflake"
)

// Known IDs: in the default layout, and in a layout with epoch bits.
var (
	defaultID = mustEncode(snowflake.DefaultLayout, snowflake.Parts{Ms: 1719379422144, Node: 250, Seq: 7})
	epochL    = snowflake.Layout{Origin: 1577836800000, NodeBits: 12, StepBits: 10, EpochBits: 2}
	epochID   = mustEncode(epochL, snowflake.Parts{Ms: 1719379422144, Node: 4000, Epoch: 7, Seq: 5})
)

func mustEncode(l snowflake.Layout, p snowflake.Parts) bw.ID {
	id, err := l.Encode(p)
	if err != nil {
		panic(err)
	}
	return id
}

func TestDecodeGolden(t *testing.T) {
	t.Parallel()
	clitest.Golden(t, "decode", harness.Must(t, "decode", defaultID.String(), "b58:"+defaultID.Base58(), defaultID.Base64(), "0"))
	if out := harness.Must(t, "decode", "--format", "b58", defaultID.Base58(), "b64:"+defaultID.Base64()); !strings.Contains(out,
		defaultID.String()+" (read as Base58 from "+defaultID.Base58()+"; ") || !strings.Contains(out, "(read as Base64 from b64:") {
		t.Errorf("decode --format b58:\n%s", out)
	}
	args := []string{"decode", "--layout-origin", "2020-01-01T00:00:00Z", "--node-bits", "12", "--step-bits", "10", "--epoch-bits", "2", epochID.String()}
	out := harness.Must(t, args...)
	clitest.Golden(t, "decode_epoch_bits", out)
	// The former name of --layout-origin reads the same, and says it is
	// deprecated.
	args[1] = "--layout-epoch"
	r := harness.Run(t, args...)
	if r.Code != 0 || r.Stdout != out || !strings.Contains(r.Stderr, "--layout-epoch is deprecated") {
		t.Errorf("decode --layout-epoch: %+v", r)
	}
}

// TestDecodeLayouts: the presets, a field order, and a node field whose
// halves a 5+5 generator was given the other way round.
func TestDecodeLayouts(t *testing.T) {
	t.Parallel()
	type doc struct {
		ID        string `json:"id"`
		UnixMs    int64  `json:"unix_ms"`
		Node      int64  `json:"node"`
		NodeField *int64 `json:"node_field"`
		Step      int64  `json:"step"`
	}
	decode := func(args ...string) doc {
		t.Helper()
		var got []doc
		out := harness.Must(t, append([]string{"decode", "-o", "json"}, args...)...)
		if err := json.Unmarshal([]byte(out), &got); err != nil || len(got) != 1 {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		return got[0]
	}
	js := mustEncode(snowflake.JS53, snowflake.Parts{Ms: 1767225600123, Node: 1000, Seq: 3})
	if d := decode("--layout", "js53", js.String()); d.UnixMs != 1767225600123 || d.Node != 1000 || d.Step != 3 || d.NodeField != nil {
		t.Errorf("js53: %+v", d)
	}
	clitest.WantExit(t, harness.Run(t, "decode", "--layout", "js53", defaultID.String()), cli.ExitUsage,
		"ID "+defaultID.String()+" (read as decimal from "+defaultID.String()+") does not fit the layout: its IDs are 53 bits wide")
	// sonyflake: 10 ms units since 2014-09-01, sequence above machine.
	sony := int64(35000000000)<<24 | int64(9)<<16 | 4242
	if d := decode("--layout", "sonyflake", strconv.FormatInt(sony, 10)); d.UnixMs != 1409529600000+350000000000 || d.Node != 4242 || d.Step != 9 {
		t.Errorf("sonyflake: %+v", d)
	}
	// Node ID 40 given the other way round: datacenter (upper) 8, worker
	// (lower) 1; the node field reads 257.
	swapped := int64(1719379422144-snowflake.TwitterOrigin)<<22 | 8<<17 | 1<<12 | 7
	if d := decode(strconv.FormatInt(swapped, 10)); d.Node != 257 || d.NodeField != nil {
		t.Errorf("swapped, read straight: %+v", d)
	}
	if d := decode("--swap-node-halves", strconv.FormatInt(swapped, 10)); d.Node != 40 || d.NodeField == nil || *d.NodeField != 257 || d.Step != 7 {
		t.Errorf("swapped, read with --swap-node-halves: %+v", d)
	}
	out := harness.Must(t, "decode", "--swap-node-halves", strconv.FormatInt(swapped, 10))
	for _, want := range []string{"node halves swapped", "node        40 (the node field reads 257: upper half 8, lower half 1, swapped by --swap-node-halves)"} {
		if !strings.Contains(out, want) {
			t.Errorf("decode --swap-node-halves does not say %q:\n%s", want, out)
		}
	}
	clitest.WantExit(t, harness.Run(t, "decode", "--layout", "twitter", "1"), cli.ExitUsage, `--layout "twitter": the layouts are bwmarrin, js53 and sonyflake`)
	clitest.WantExit(t, harness.Run(t, "decode", "--swap-node-halves", "--node-bits", "9", "1"), cli.ExitUsage, "even number of node bits")
}

func TestDecodeJSON(t *testing.T) {
	t.Parallel()
	out := harness.Must(t, "decode", "-o", "json", "--layout-origin", "1577836800000",
		"--node-bits", "12", "--step-bits", "10", "--epoch-bits", "2", "--format", "b58", epochID.Base58())
	var got []struct {
		Input     string    `json:"input"`
		Form      string    `json:"form"`
		ID        string    `json:"id"`
		Base58    string    `json:"base58"`
		Base64    string    `json:"base64"`
		Time      time.Time `json:"time"`
		UnixMs    int64     `json:"unix_ms"`
		Node      int64     `json:"node"`
		Step      int64     `json:"step"`
		EpochBits *int64    `json:"epoch_bits"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(got) != 1 {
		t.Fatalf("%d IDs decoded, want 1", len(got))
	}
	d := got[0]
	if d.Input != epochID.Base58() || d.Form != "base58" || d.ID != epochID.String() || d.Base64 != epochID.Base64() ||
		d.UnixMs != 1719379422144 || !d.Time.Equal(time.UnixMilli(1719379422144)) ||
		d.Node != 4000 || d.Step != 5 || d.EpochBits == nil || *d.EpochBits != 3 {
		t.Errorf("decoded %+v (epoch bits %v)", d, d.EpochBits)
	}
	out = harness.Must(t, "decode", "-o", "json", defaultID.String())
	if err := json.Unmarshal([]byte(out), &got); err != nil || got[0].EpochBits != nil || got[0].Step != 7 || got[0].Node != 250 {
		t.Errorf("default layout: %+v, %v", got, err)
	}
}

func TestDecodeBadInput(t *testing.T) {
	t.Parallel()
	clitest.WantExit(t, harness.Run(t, "decode"), cli.ExitUsage, "one or more IDs")
	clitest.WantExit(t, harness.Run(t, "decode", "12x!"), cli.ExitUsage, `ID "12x!" is not a Snowflake ID`)
	clitest.WantExit(t, harness.Run(t, "decode", "-5"), cli.ExitUsage) // a flag to cobra
	clitest.WantExit(t, harness.Run(t, "decode", "--", "-5"), cli.ExitUsage, "negative")
	clitest.WantExit(t, harness.Run(t, "decode", "99999999999999999999"), cli.ExitUsage, "out of range")
	clitest.WantExit(t, harness.Run(t, "decode", "MTEx"), cli.ExitUsage, "ambiguous", "b58:MTEx", "b64:MTEx")
	clitest.WantExit(t, harness.Run(t, "decode", "--node-bits", "40", "1"), cli.ExitUsage, "time bits")
	clitest.WantExit(t, harness.Run(t, "decode", "--node-bits", "300", "1"), cli.ExitUsage, "--node-bits")
	clitest.WantExit(t, harness.Run(t, "decode", "--epoch-bits", "12", "1"), cli.ExitUsage, "epoch bits")
	clitest.WantExit(t, harness.Run(t, "decode", "--layout-epoch", "yesterday", "1"), cli.ExitUsage, "--layout-epoch")
	clitest.WantExit(t, harness.Run(t, "decode", "--layout-origin", "yesterday", "1"), cli.ExitUsage, `--layout-origin "yesterday"`)
	clitest.WantExit(t, harness.Run(t, "decode", "--layout-epoch", "4000000000000000", "1"), cli.ExitUsage, "in the future")
	clitest.WantExit(t, harness.Run(t, "decode", "-o", "csv", "1"), cli.ExitUsage, `-o "csv"`, "table, json, yaml")
	// A word is not read as Base58 unless asked for.
	clitest.WantExit(t, harness.Run(t, "decode", "notanumber"), cli.ExitUsage, `ID "notanumber" is neither decimal nor Base64`,
		"write b58:notanumber or pass --format b58")
	clitest.WantExit(t, harness.Run(t, "decode", "--format", "hex", "1"), cli.ExitUsage, `"hex" is not a form: write auto, dec, b58 or b64`)
	clitest.WantExit(t, harness.Run(t, "decode", "--format", "dec", "5WoiFjbTMNG"), cli.ExitUsage, `ID "5WoiFjbTMNG" as decimal`)
}
