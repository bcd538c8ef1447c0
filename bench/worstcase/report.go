package worstcase

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"time"
)

// Config says what to run and where.
type Config struct {
	// Addr of a server started with --clock manual; empty starts one
	// in-process.
	Addr string
	// Offsets of the sweep, in ms (nil: 0, 10, ..., 990).
	Offsets []int
	// RandomSeed and RandomCount shape the seeded bursty streams.
	RandomSeed  uint64
	RandomCount int
	// Progress, if set, is told what is being played.
	Progress func(string)
}

// Report is everything one run measured.
type Report struct {
	Spec     map[string]map[string]Row // algorithm -> stream (A..D) -> row (Reservers too)
	Families []Row                     // sweep and random, per algorithm
	Reserve  []Row                     // sweep and random, per reserver
	Poll     []Row                     // token bucket without flooring
	// Back-loaded stream D's admissions per algorithm, for the chart.
	D map[string][]int64
}

// Run plays every stream against every algorithm.
func Run(cfg Config) (*Report, error) {
	addr := cfg.Addr
	if addr == "" {
		a, stop, err := StartInProcess()
		if err != nil {
			return nil, err
		}
		defer stop()
		addr = a
	}
	r, err := NewRunner(addr)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	progress := cfg.Progress
	if progress == nil {
		progress = func(string) {}
	}
	if cfg.Offsets == nil {
		cfg.Offsets = AllOffsets()
	}
	if cfg.RandomCount == 0 {
		cfg.RandomCount = 20
	}
	rep := &Report{Spec: map[string]map[string]Row{}, D: map[string][]int64{}}
	for _, a := range append(slices.Clone(Algorithms), Reservers...) {
		rep.Spec[a.Name] = map[string]Row{}
		for _, f := range SpecStreams() {
			progress(a.Name + " " + f.Name)
			s := f.Streams[0]
			o, err := r.Play(a, s)
			if err != nil {
				return nil, err
			}
			rep.Spec[a.Name][s.Name] = Row{Algorithm: a.Name, Family: f.Name, Streams: 1, Requests: o.Requests, Admitted: len(o.Admitted), Peak: Peak(o.Admitted)}
			if s.Name == "D" {
				rep.D[a.Name] = o.Admitted
			}
		}
	}
	families := []Family{SweepStreams(cfg.Offsets), RandomStreams(cfg.RandomSeed, cfg.RandomCount)}
	for _, f := range families {
		for _, a := range Algorithms {
			progress(a.Name + " " + f.Name)
			row, err := r.RunFamily(a, f)
			if err != nil {
				return nil, err
			}
			rep.Families = append(rep.Families, row)
		}
		for _, a := range Reservers {
			progress(a.Name + " " + f.Name)
			row, err := r.RunFamily(a, f)
			if err != nil {
				return nil, err
			}
			rep.Reserve = append(rep.Reserve, row)
		}
	}
	poll := PollStream()
	for _, p := range []struct {
		name string
		args func(string) []string
	}{
		{"RL.BUCKET", func(k string) []string { return []string{"RL.BUCKET", k, "10", "5", "1s"} }},
		{"CL.THROTTLE", func(k string) []string { return []string{"CL.THROTTLE", k, "9", "5", "1"} }},
	} {
		progress(p.name + " poll")
		o, err := r.PlayArgs(p.args, poll)
		if err != nil {
			return nil, err
		}
		rep.Poll = append(rep.Poll, Row{Algorithm: p.name, Family: poll.Name, Streams: 1, Requests: o.Requests, Admitted: len(o.Admitted), Peak: Peak(o.Admitted)})
	}
	return rep, nil
}

func times(peak int) string { return fmt.Sprintf("%.1f×", float64(peak)/Limit) }

// Markdown renders the report's tables.
func (rep *Report) Markdown() string {
	var b strings.Builder
	b.WriteString("Limit 10 per 1000 ms (RL.BUCKET: capacity 10, 10 per 1 s; CL.THROTTLE: max_burst 9, 10 per 1 s). " +
		"\"peak\" is the most admissions in any half-open 1000 ms interval.\n\n")
	b.WriteString("Streams A-D: admitted / peak (peak as a multiple of the limit).\n\n")
	b.WriteString("| algorithm |")
	for _, f := range SpecStreams() {
		fmt.Fprintf(&b, " %s (%d requests) |", f.Name, len(f.Streams[0].Times))
	}
	b.WriteString("\n|---|---|---|---|---|\n")
	for _, a := range Algorithms {
		fmt.Fprintf(&b, "| %s |", a.Name)
		for _, s := range []string{"A", "B", "C", "D"} {
			r := rep.Spec[a.Name][s]
			fmt.Fprintf(&b, " %d / %d (%s) |", r.Admitted, r.Peak, times(r.Peak))
		}
		b.WriteString("\n")
	}
	b.WriteString("\n| algorithm | stream family | streams | requests | admitted | worst 1 s window | × limit |\n|---|---|---|---|---|---|---|\n")
	for _, r := range rep.Families {
		fmt.Fprintf(&b, "| %s | %s | %d | %d | %d | %d | %s |\n", r.Algorithm, r.Family, r.Streams, r.Requests, r.Admitted, r.Peak, times(r.Peak))
	}
	b.WriteString("\nReservations: each request waits up to 1 s for its turn (`RESERVE 1s`), so more are admitted; " +
		"\"peak\" counts units at the time they act. Streams A-D: admitted / peak.\n\n")
	b.WriteString("| algorithm | A | B | C | D |\n|---|---|---|---|---|\n")
	for _, a := range Reservers {
		fmt.Fprintf(&b, "| %s |", a.Name)
		for _, s := range []string{"A", "B", "C", "D"} {
			r := rep.Spec[a.Name][s]
			fmt.Fprintf(&b, " %d / %d (%s) |", r.Admitted, r.Peak, times(r.Peak))
		}
		b.WriteString("\n")
	}
	b.WriteString("\n| algorithm | stream family | streams | requests | admitted | worst 1 s window | × limit |\n|---|---|---|---|---|---|---|\n")
	for _, r := range rep.Reserve {
		fmt.Fprintf(&b, "| %s | %s | %d | %d | %d | %d | %s |\n", r.Algorithm, r.Family, r.Streams, r.Requests, r.Admitted, r.Peak, times(r.Peak))
	}
	b.WriteString("\nToken bucket without flooring: capacity 10, 5 per 1 s, one request every 20 ms for 10 s.\n\n")
	b.WriteString("| algorithm | requests | admitted | worst 1 s window |\n|---|---|---|---|\n")
	for _, r := range rep.Poll {
		fmt.Fprintf(&b, "| %s | %d | %d | %d |\n", r.Algorithm, r.Requests, r.Admitted, r.Peak)
	}
	return b.String()
}

// SVG charts, for back-loaded stream D, each algorithm's admissions in the
// trailing 1000 ms window over time, against the limit.
func (rep *Report) SVG() string {
	const (
		w, h             = 960, 360
		left, right      = 50, 250
		top, bottom      = 30, 40
		t0, t1           = int64(500), int64(4000) // ms
		yMax             = 25
		step             = int64(5)
		plotW, plotH     = w - left - right, h - top - bottom
		titleY, axisStep = 18, 500
	)
	x := func(ms int64) float64 { return left + float64(ms-t0)/float64(t1-t0)*plotW }
	y := func(v int) float64 { return top + plotH - float64(v)/yMax*plotH }
	colors := map[string]string{"RL.FIXED": "#d62728", "RL.LOG": "#2ca02c", "RL.SLIDE": "#ff7f0e", "RL.BUCKET": "#1f77b4", "CL.THROTTLE": "#9467bd"}
	// Curves that coincide stay visible: each is dashed differently.
	dashes := map[string]string{"RL.FIXED": "", "RL.LOG": "", "RL.SLIDE": "", "RL.BUCKET": "8,4", "CL.THROTTLE": "2,4"}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", w, h, w, h)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", w, h)
	fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="14">Stream D (one request every 2 ms from 900 to 2898 ms): admissions in the trailing 1000 ms</text>`+"\n", left, titleY)
	for v := 0; v <= yMax; v += 5 {
		fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#ddd"/><text x="%d" y="%.1f" text-anchor="end">%d</text>`+"\n", left, left+plotW, y(v), y(v), left-6, y(v)+4, v)
	}
	for ms := t0; ms <= t1; ms += axisStep {
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%d ms</text>`+"\n", x(ms), top+plotH+18, ms)
	}
	fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="black" stroke-dasharray="6,4"/><text x="%d" y="%.1f">limit 10</text>`+"\n", left, left+plotW, y(Limit), y(Limit), left+plotW+6, y(Limit)+4)
	for i, a := range Algorithms {
		adm := rep.D[a.Name]
		var pts []string
		for t := t0; t <= t1; t += step {
			n := 0
			for _, at := range adm {
				if at/int64(time.Millisecond) > t-1000 && at/int64(time.Millisecond) <= t {
					n++
				}
			}
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(t), y(n)))
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" stroke-dasharray="%s" points="%s"/>`+"\n", colors[a.Name], dashes[a.Name], strings.Join(pts, " "))
		ly := top + 20 + 18*i
		fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="%s" stroke-width="3" stroke-dasharray="%s"/><text x="%d" y="%d">%s (peak %d)</text>`+"\n",
			left+plotW+60, left+plotW+84, ly, ly, colors[a.Name], dashes[a.Name], left+plotW+88, ly+4, a.Name, Peak(adm))
	}
	b.WriteString("</svg>\n")
	return b.String()
}

// Markers delimit the README section the tool maintains.
const (
	BeginMarker = "<!-- worstcase:begin (generated by go run ./bench/cmd/worstcase --readme README.md; do not edit) -->"
	EndMarker   = "<!-- worstcase:end -->"
)

// ReadmeSection is what goes between the markers.
func (rep *Report) ReadmeSection(svgPath string) string {
	return BeginMarker + "\n" + rep.Markdown() + "\n![Admissions in the trailing second for stream D](" + svgPath + ")\n" + EndMarker
}

// UpdateReadme replaces the marked section of the file at path.
func (rep *Report) UpdateReadme(path, svgPath string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	s := string(data)
	i, j := strings.Index(s, BeginMarker), strings.Index(s, EndMarker)
	if i < 0 || j < i {
		return fmt.Errorf("%s: no worstcase markers", path)
	}
	s = s[:i] + rep.ReadmeSection(svgPath) + s[j+len(EndMarker):]
	return os.WriteFile(path, []byte(s), 0o644)
}
