package main

import (
	"errors"
	"fmt"
	"image/color"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	bench "github.com/nodeid/nodeid/cmd/nodeid/internal/bench/report"
)

var palette = []color.Color{
	color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
	color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
	color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
	color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff},
	color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff},
}

// scalePlot draws Acquire's p50 and p99 against the fraction of node IDs
// held, one colour per range size, in the held (vacuumed) state: the median
// over repetitions.
func scalePlot(sc *bench.ScaleResult, path string) error {
	p := plot.New()
	p.Title.Text = "Acquire latency against the node IDs held by live leases"
	p.X.Label.Text = "node IDs held (%)"
	p.Y.Label.Text = "Acquire latency (ms), median of repetitions"
	p.Y.Min = 0
	p.Legend.Top = true
	p.Legend.Left = true
	p.Add(plotter.NewGrid())
	sums := sc.Summary()
	top := 0.0 // the highest point, to leave the legend room above it
	for i, ids := range sc.Sizes() {
		var p50, p99 plotter.XYs
		for _, s := range sums {
			if s.IDs != ids || s.State != bench.StateHeld {
				continue
			}
			p50 = append(p50, plotter.XY{X: 100 * s.Fraction, Y: s.P50.Median})
			p99 = append(p99, plotter.XY{X: 100 * s.Fraction, Y: s.P99.Median})
			top = max(top, s.P50.Median, s.P99.Median)
		}
		for j, series := range []struct {
			xy   plotter.XYs
			name string
		}{{p50, "p50"}, {p99, "p99"}} {
			l, pts, err := plotter.NewLinePoints(series.xy)
			if err != nil {
				return err
			}
			c := palette[i%len(palette)]
			l.Color, pts.Color = c, c
			l.Width = vg.Points(1.5)
			pts.Shape = draw.CircleGlyph{}
			if j == 1 {
				l.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
				pts.Shape = draw.TriangleGlyph{}
			}
			p.Add(l, pts)
			p.Legend.Add(fmt.Sprintf("%d node IDs, %s", ids, series.name), l, pts)
		}
	}
	p.Y.Max = 1.5 * top
	p.X.Min, p.X.Max = 0, 100
	p.X.Tick.Marker = plot.ConstantTicks([]plot.Tick{
		{Value: 0, Label: "0"}, {Value: 25, Label: "25"}, {Value: 50, Label: "50"},
		{Value: 75, Label: "75"}, {Value: 90, Label: "90"}, {Value: 100, Label: "100"},
	})
	return p.Save(8*vg.Inch, 4.5*vg.Inch, path)
}

// herdPlot draws, for each variant of the herd's first repetition, the
// fraction of claimers done against the time since all started, on a
// logarithmic time axis.
func herdPlot(h *bench.HerdResult, path string) error {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Herd start: %d concurrent claims of %d node IDs, each on its own connection", h.Claimers, h.IDs)
	p.X.Label.Text = "claim latency (ms, log scale)"
	p.Y.Label.Text = "fraction of claimers done"
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Y.Min, p.Y.Max = 0, 1
	p.Legend.Top = true
	p.Legend.Left = true
	p.Add(plotter.NewGrid())
	lines := 0
	for i, v := range bench.HerdVariants {
		for _, r := range h.Runs {
			if r.Variant != v || r.Rep != 1 || len(r.Millis) == 0 {
				continue
			}
			xy := make(plotter.XYs, len(r.Millis))
			for k, m := range r.Millis {
				xy[k] = plotter.XY{X: max(m, 0.01), Y: float64(k+1) / float64(h.Claimers)}
			}
			l, err := plotter.NewLine(xy)
			if err != nil {
				return err
			}
			l.Color = palette[i%len(palette)]
			l.Width = vg.Points(1.5)
			p.Add(l)
			p.Legend.Add(v, l)
			lines++
		}
	}
	if lines == 0 {
		return errors.New("no herd latencies to plot")
	}
	return p.Save(8*vg.Inch, 4.5*vg.Inch, path)
}
