// Command plot turns the records of cmd/rdmascale into the PNG plots of
// docs/scaling.md and prints the cost models fitted to them, extrapolated
// to 1,024 and 16,384 ranks, as a Markdown table.
//
//	go run . -in data.jsonl -out dir
//
// It is a module of its own so that gonum/plot is not a dependency of
// rdmactor. Each model has the form its algorithm gives (see modelSpecs);
// its coefficients are a least-squares fit to the measured points of one
// mode (ranks as processes, or as goroutines), so they describe the host
// that ran the measurement.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// record is one line of rdmascale's output.
type record struct {
	Mode   string  `json:"mode"`
	N      int     `json:"n"`
	Metric string  `json:"metric"`
	X      float64 `json:"x"`
	Value  float64 `json:"value"`
	Unit   string  `json:"unit"`
}

// extrapolateTo are the world sizes the models are carried to.
var extrapolateTo = []float64{1024, 16384}

// model is y = a + b*f(n), fitted by least squares with b >= 0.
type model struct {
	name string
	term string // f's formula, for the table
	f    func(n float64) float64
	a, b float64
	ok   bool
}

func (m model) at(n float64) float64 { return m.a + m.b*m.f(n) }

func fit(name, term string, f func(float64) float64, pts plotter.XYs) model {
	m := model{name: name, term: term, f: f}
	if len(pts) < 2 {
		return m
	}
	var sx, sy, sxx, sxy float64
	for _, p := range pts {
		x := f(p.X)
		sx += x
		sy += p.Y
		sxx += x * x
		sxy += x * p.Y
	}
	k := float64(len(pts))
	d := k*sxx - sx*sx
	if d == 0 {
		return m
	}
	m.b = (k*sxy - sx*sy) / d
	m.a = (sy - m.b*sx) / k
	if m.b < 0 {
		// No cost here falls as ranks are added: a falling fit is noise
		// (an oversubscribed host), so the model is the mean.
		m.a, m.b = sy/k, 0
	}
	m.ok = true
	return m
}

func log2ceil(n float64) float64 { return math.Ceil(math.Log2(n)) }

func main() {
	log.SetFlags(0)
	in := flag.String("in", "data.jsonl", "rdmascale records")
	out := flag.String("out", ".", "directory for the PNGs")
	flag.Parse()
	recs, err := read(*in)
	if err != nil {
		log.Fatal(err)
	}
	d := data(recs)
	var models []model
	models = append(models, memoryPlot(d, filepath.Join(*out, "memory.png"))...)
	models = append(models, putPlot(d, filepath.Join(*out, "put.png"))...)
	models = append(models, barrierPlot(d, filepath.Join(*out, "barrier.png"))...)
	models = append(models, actorPlot(d, filepath.Join(*out, "actor.png"))...)
	table(os.Stdout, models)
}

func read(path string) ([]record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []record
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		out = append(out, r)
	}
	return out, sc.Err()
}

// dataset indexes records by mode and metric: points (N or X, value).
type dataset map[string]map[string][]record

func data(recs []record) dataset {
	d := dataset{}
	for _, r := range recs {
		if d[r.Mode] == nil {
			d[r.Mode] = map[string][]record{}
		}
		d[r.Mode][r.Metric] = append(d[r.Mode][r.Metric], r)
	}
	return d
}

// byN is metric of mode against N, scaled by scale, sorted by N; a later
// record for the same N replaces an earlier one.
func (d dataset) byN(mode, metric string, scale float64) plotter.XYs {
	last := map[int]float64{}
	for _, r := range d[mode][metric] {
		last[r.N] = r.Value * scale
	}
	var pts plotter.XYs
	for n, v := range last {
		pts = append(pts, plotter.XY{X: float64(n), Y: v})
	}
	sort.Slice(pts, func(i, j int) bool { return pts[i].X < pts[j].X })
	return pts
}

var modes = []string{"process", "goroutine"}

func newPlot(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = x
	p.Y.Label.Text = y
	p.Legend.Top = true
	p.Legend.Left = true
	p.Add(plotter.NewGrid())
	return p
}

func logAxes(p *plot.Plot) {
	p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, rankTicks{}
	p.Y.Scale, p.Y.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
}

// rankTicks labels a log2 rank axis at powers of 2 (labelled 2..64, 1,024
// and 16,384, the sizes this page is about).
type rankTicks struct{}

func (rankTicks) Ticks(lo, hi float64) []plot.Tick {
	var ts []plot.Tick
	for n := 1.0; n <= hi*1.0001; n *= 2 {
		if n < lo*0.9999 {
			continue
		}
		t := plot.Tick{Value: n}
		if n <= 64 || n == 1024 || n == 16384 {
			t.Label = strconv.Itoa(int(n))
		}
		ts = append(ts, t)
	}
	return ts
}

// series adds measured points (solid, with marks) and, when m fits, the
// model from the first point to 16,384 ranks (dashed).
func series(p *plot.Plot, i int, label string, pts plotter.XYs, m *model) {
	if len(pts) == 0 {
		return
	}
	l, s, err := plotter.NewLinePoints(pts)
	if err != nil {
		log.Fatal(err)
	}
	l.Color, s.Color, s.Shape = plotutil.Color(i), plotutil.Color(i), plotutil.Shape(i)
	p.Add(l, s)
	p.Legend.Add(label, l, s)
	if m == nil || !m.ok {
		return
	}
	var xs plotter.XYs
	for n := pts[0].X; n <= 16384; n *= 2 {
		if v := m.at(n); v > 0 {
			xs = append(xs, plotter.XY{X: n, Y: v})
		}
	}
	if len(xs) < 2 {
		return
	}
	ml, err := plotter.NewLine(xs)
	if err != nil {
		log.Fatal(err)
	}
	ml.Color, ml.Dashes = plotutil.Color(i), []vg.Length{vg.Points(4), vg.Points(3)}
	p.Add(ml)
}

func save(p *plot.Plot, path string) {
	if err := p.Save(7*vg.Inch, 4.5*vg.Inch, path); err != nil {
		log.Fatal(err)
	}
}

func linear(n float64) float64    { return n }
func quadratic(n float64) float64 { return n * n }

// both is metric against N from the processes where they ran and from the
// goroutine runs above that: for per-rank figures that do not depend on
// how ranks are hosted (shm pages and mappings).
func (d dataset) both(metric string, scale float64) plotter.XYs {
	pts := d.byN("process", metric, scale)
	top := 0.0
	for _, p := range pts {
		top = max(top, p.X)
	}
	for _, p := range d.byN("goroutine", metric, scale) {
		if p.X > top {
			pts = append(pts, p)
		}
	}
	return pts
}

// memoryPlot: MiB per rank against N.
func memoryPlot(d dataset, path string) []model {
	p := newPlot("Memory per rank (each rank exchanges messages with 2 peers)", "ranks N", "MiB per rank")
	logAxes(p)
	const mib = 1.0 / (1 << 20)
	var ms []model
	for i, s := range []struct {
		label, term string
		pts         plotter.XYs
		f           func(float64) float64
	}{
		{"shm committed, after setup", "N", d.both("mem_shm_committed_start", mib), linear},
		{"shm committed, after traffic", "N", d.both("mem_shm_committed_traffic", mib), linear},
		{"Go heap, rank 0 (process)", "N", d.byN("process", "mem_heap_max_traffic", mib), linear},
		{"shm mapped (address space)", "N²", d.both("mem_mapped_traffic", mib), quadratic},
		{"mailbox window (nominal)", "N", d.both("mem_mailbox_window_traffic", mib), linear},
		{"Go heap, mean (process)", "N", d.byN("process", "mem_heap_traffic", mib), linear},
		{"Go heap / N (goroutine)", "N", d.byN("goroutine", "mem_heap_traffic", mib), linear},
	} {
		fitted := s.pts
		if strings.HasPrefix(s.label, "shm committed") {
			// A rank of 2 has one neighbour, the others two: fit from 3 on.
			fitted = nil
			for _, q := range s.pts {
				if q.X >= 3 {
					fitted = append(fitted, q)
				}
			}
		}
		m := fit(s.label+" (MiB/rank)", s.term, s.f, fitted)
		series(p, i, s.label, s.pts, &m)
		ms = append(ms, m)
	}
	save(p, path)
	return ms
}

// putPlot: ns per 8 B put+signal against the signals in use, per N (top),
// the same over the one-signal anchor of the same run (middle), and
// against N at 1 and 128 signals in use (bottom).
func putPlot(d dataset, path string) []model {
	top := newPlot("Put + signal, 8 B, rank 0 to rank 1", "signal indices in use towards the peer", "ns per put")
	top.X.Scale, top.X.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
	top.Y.Min = 0
	ratio := newPlot("Same run: cost over the cost with one signal in use (interleaved anchor)", "signal indices in use towards the peer", "ratio")
	ratio.X.Scale, ratio.X.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
	ratio.Y.Min, ratio.Y.Max = 0, 2
	bottom := newPlot("Put + signal against ranks", "ranks N", "ns per put")
	bottom.X.Scale, bottom.X.Tick.Marker = plot.LogScale{}, rankTicks{}
	bottom.Y.Min = 0
	i := 0
	var ms []model
	for mi, mode := range modes {
		byN := map[int]plotter.XYs{}
		ratios := map[int]plotter.XYs{}
		at := map[float64]plotter.XYs{}
		for _, r := range d[mode]["put_ns"] {
			byN[r.N] = append(byN[r.N], plotter.XY{X: r.X, Y: r.Value})
			at[r.X] = append(at[r.X], plotter.XY{X: float64(r.N), Y: r.Value})
		}
		for _, r := range d[mode]["put_ratio"] {
			ratios[r.N] = append(ratios[r.N], plotter.XY{X: r.X, Y: r.Value})
		}
		var ns []int
		for n := range byN {
			ns = append(ns, n)
		}
		sort.Ints(ns)
		var all plotter.XYs
		for _, n := range ns {
			pts := byN[n]
			sort.Slice(pts, func(a, b int) bool { return pts[a].X < pts[b].X })
			if n <= 8 {
				series(top, i, fmt.Sprintf("N=%d (%s)", n, mode), pts, nil)
				rs := ratios[n]
				sort.Slice(rs, func(a, b int) bool { return rs[a].X < rs[b].X })
				series(ratio, i, fmt.Sprintf("N=%d (%s)", n, mode), rs, nil)
				i++
			}
			all = append(all, pts...)
		}
		for j, k := range []float64{1, 128} {
			pts := at[k]
			sort.Slice(pts, func(a, b int) bool { return pts[a].X < pts[b].X })
			series(bottom, 2*mi+j, fmt.Sprintf("%g signal(s) in use (%s)", k, mode), pts, nil)
		}
		ms = append(ms, fit("put+signal, "+mode+" (ns)", "k", linear, all))
	}
	top.Legend.Top, top.Legend.Left = false, false
	ratio.Legend.Top, ratio.Legend.Left = false, false
	stack(path, top, ratio, bottom)
	return ms
}

// stack draws plots one above the other into one PNG.
func stack(path string, ps ...*plot.Plot) {
	c := vgimgCanvas(7*vg.Inch, vg.Length(len(ps))*4.5*vg.Inch)
	rows := make([][]*plot.Plot, len(ps))
	for i, p := range ps {
		rows[i] = []*plot.Plot{p}
	}
	tiles := draw.Tiles{Rows: len(ps), Cols: 1, PadY: vg.Points(8)}
	canvases := plot.Align(rows, tiles, draw.New(c))
	for i, p := range ps {
		p.Draw(canvases[i][0])
	}
	writePNG(c, path)
}

// barrierPlot: µs per barrier against N, flat and dissemination.
func barrierPlot(d dataset, path string) []model {
	p := newPlot("Barrier latency (world team, FenceNone)", "ranks N", "µs per barrier")
	logAxes(p)
	var ms []model
	i := 0
	for _, mode := range modes {
		flat := d.byN(mode, "barrier_flat_ns", 1e-3)
		mf := fit("barrier flat, "+mode+" (µs)", "N-1", func(n float64) float64 { return n - 1 }, flat)
		series(p, i, "flat ("+mode+")", flat, &mf)
		diss := d.byN(mode, "barrier_dissemination_ns", 1e-3)
		md := fit("barrier dissemination, "+mode+" (µs)", "⌈log2 N⌉", log2ceil, diss)
		series(p, i+1, "dissemination ("+mode+")", diss, &md)
		ms = append(ms, mf, md)
		i += 2
	}
	// The same forms with coefficients from 2 processes, where each rank
	// has a core: a flat barrier is one signal latency plus N-1 posts, a
	// dissemination barrier ⌈log2 N⌉ rounds of a post and a latency. The
	// latency is the 2-rank barrier less its one post.
	post := 0.0
	for _, r := range d["process"]["put_ns"] {
		if r.N == 2 && r.X == 1 {
			post = r.Value * 1e-3
		}
	}
	if two := d.byN("process", "barrier_flat_ns", 1e-3); post > 0 && len(two) > 0 && two[0].X == 2 {
		lat := max(two[0].Y-post, 0)
		mf := model{name: "barrier flat, from 2 processes (µs)", term: "N-1", f: func(n float64) float64 { return n - 1 }, a: lat, b: post, ok: true}
		md := model{name: "barrier dissemination, from 2 processes (µs)", term: "⌈log2 N⌉", f: log2ceil, b: lat + post, ok: true}
		for j, m := range []model{mf, md} {
			var xs plotter.XYs
			for n := 2.0; n <= 16384; n *= 2 {
				xs = append(xs, plotter.XY{X: n, Y: m.at(n)})
			}
			l, err := plotter.NewLine(xs)
			if err != nil {
				log.Fatal(err)
			}
			l.Color, l.Dashes = plotutil.Color(4+j), []vg.Length{vg.Points(1), vg.Points(2)}
			p.Add(l)
			p.Legend.Add(m.name[:len(m.name)-5], l)
			ms = append(ms, m)
		}
	}
	save(p, path)
	return ms
}

// actorPlot: round trip (µs) and messages per second per rank against N,
// on two panels.
func actorPlot(d dataset, path string) []model {
	rtt := newPlot("Actor request/response round trip, rank 0 to rank N-1", "ranks N", "µs")
	logAxes(rtt)
	tput := newPlot("Actor throughput, every rank to its 2 neighbours", "ranks N", "messages/s received per rank")
	logAxes(tput)
	var ms []model
	for i, mode := range modes {
		pts := d.byN(mode, "actor_rtt_ns", 1e-3)
		m := fit("actor round trip, "+mode+" (µs)", "N", linear, pts)
		series(rtt, i, mode, pts, &m)
		tp := d.byN(mode, "actor_msgs_per_s", 1)
		// Time per message grows with N (the receive loop's wait covers
		// every sender's signal): model 1/throughput = a + b*N.
		var inv plotter.XYs
		for _, q := range tp {
			inv = append(inv, plotter.XY{X: q.X, Y: 1e6 / q.Y})
		}
		mi := fit("actor µs per message received, "+mode, "N", linear, inv)
		series(tput, i, mode, tp, nil)
		if mi.ok && len(tp) > 0 {
			var xs plotter.XYs
			for n := tp[0].X; n <= 16384; n *= 2 {
				if v := mi.at(n); v > 0 {
					xs = append(xs, plotter.XY{X: n, Y: 1e6 / v})
				}
			}
			if len(xs) > 1 {
				l, err := plotter.NewLine(xs)
				if err != nil {
					log.Fatal(err)
				}
				l.Color, l.Dashes = plotutil.Color(i), []vg.Length{vg.Points(4), vg.Points(3)}
				tput.Add(l)
			}
		}
		ms = append(ms, m, mi)
	}
	stack(path, rtt, tput)
	return ms
}

// table prints the models: formula, fitted coefficients, and the values
// at 1,024 and 16,384 ranks.
func table(w *os.File, ms []model) {
	fmt.Fprintln(w, "| figure | model | a | b | at 1,024 | at 16,384 |")
	fmt.Fprintln(w, "|---|---|---:|---:|---:|---:|")
	for _, m := range ms {
		if !m.ok {
			continue
		}
		fmt.Fprintf(w, "| %s | a + b·%s | %.3g | %.3g | %.3g | %.3g |\n",
			m.name, m.term, m.a, m.b, m.at(extrapolateTo[0]), m.at(extrapolateTo[1]))
	}
}

func vgimgCanvas(w, h vg.Length) *vgimg.Canvas { return vgimg.New(w, h) }

func writePNG(c *vgimg.Canvas, path string) {
	f, err := os.Create(path)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := (vgimg.PngCanvas{Canvas: c}).WriteTo(f); err != nil {
		log.Fatal(err)
	}
	if err := f.Close(); err != nil {
		log.Fatal(err)
	}
}
