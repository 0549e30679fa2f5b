package ids

import (
	"encoding/json"
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
	epochL    = snowflake.Layout{Epoch: 1577836800000, NodeBits: 12, StepBits: 10, EpochBits: 2}
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
	clitest.Golden(t, "decode_epoch_bits", harness.Must(t, "decode", "--layout-epoch", "2020-01-01T00:00:00Z",
		"--node-bits", "12", "--step-bits", "10", "--epoch-bits", "2", epochID.String()))
}

func TestDecodeJSON(t *testing.T) {
	t.Parallel()
	out := harness.Must(t, "decode", "-o", "json", "--layout-epoch", "1577836800000",
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
	clitest.WantExit(t, harness.Run(t, "decode", "--layout-epoch", "4000000000000000", "1"), cli.ExitUsage, "in the future")
	clitest.WantExit(t, harness.Run(t, "decode", "-o", "csv", "1"), cli.ExitUsage, `-o "csv"`, "table, json, yaml")
	// A word is not read as Base58 unless asked for.
	clitest.WantExit(t, harness.Run(t, "decode", "notanumber"), cli.ExitUsage, `ID "notanumber" is neither decimal nor Base64`,
		"write b58:notanumber or pass --format b58")
	clitest.WantExit(t, harness.Run(t, "decode", "--format", "hex", "1"), cli.ExitUsage, `"hex" is not a form: write auto, dec, b58 or b64`)
	clitest.WantExit(t, harness.Run(t, "decode", "--format", "dec", "5WoiFjbTMNG"), cli.ExitUsage, `ID "5WoiFjbTMNG" as decimal`)
}
