package moe

import (
	"archive/zip"
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// Trace is a recorded router output for every token of a job: TopkIdx and
// TopkWeights are [Tokens][TopK] (expert ids, -1 for dropped slots; their
// weights), rank 0's tokens first. Rank r of n replays tokens
// [r*Tokens/n, (r+1)*Tokens/n) (Rank).
//
// # File formats
//
// ReadTrace picks the format from the file name's extension:
//
//   - .npz: a NumPy archive, as np.savez("trace.npz", topk_idx=idx,
//     topk_weights=w) writes it (np.savez_compressed too), with idx of
//     shape (tokens, topk) and dtype int64 or int32 (DeepEP's topk_idx)
//     and w of the same shape and dtype float32 or float64. topk_weights
//     may be left out: each token's kept slots then weigh equally.
//   - .npy: one NumPy array, topk_idx alone (weights as above).
//   - .csv: one line per token, topk expert ids then topk weights,
//     comma-separated ("3,17,-1,40,0.5,0.25,0,0.25" for top-4). Empty
//     lines, lines starting with '#' and a header line (its first field
//     not a number, such as "topk_idx_0,...,topk_weights_3") are skipped.
//
// WriteCSV and WriteNPZ write the same formats.
type Trace struct {
	Tokens, TopK int
	TopkIdx      []int32
	TopkWeights  []float32
}

// Rank is the part of the trace that rank r of n replays: tokens
// [r*Tokens/n, (r+1)*Tokens/n), views of t's slices.
func (t *Trace) Rank(r, n int) (topkIdx []int32, topkWeights []float32) {
	lo, hi := r*t.Tokens/n, (r+1)*t.Tokens/n
	return t.TopkIdx[lo*t.TopK : hi*t.TopK], t.TopkWeights[lo*t.TopK : hi*t.TopK]
}

// MaxRankTokens is the most tokens any rank of n replays.
func (t *Trace) MaxRankTokens(n int) int { return (t.Tokens + n - 1) / n }

// ReadTrace reads a routing trace (see Trace for the formats).
// Malformed files are ErrBadArgument.
func ReadTrace(path string) (*Trace, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read trace: %w", err)
	}
	defer f.Close()
	var t *Trace
	switch ext := strings.ToLower(filepath.Ext(path)); ext {
	case ".npz":
		st, err := f.Stat()
		if err != nil {
			return nil, fmt.Errorf("read trace: %w", err)
		}
		t, err = readNPZ(f, st.Size())
		if err != nil {
			return nil, fmt.Errorf("read trace %s: %w", path, err)
		}
	case ".npy":
		a, err := readNPY(bufio.NewReader(f))
		if err != nil {
			return nil, fmt.Errorf("read trace %s: %w", path, err)
		}
		if t, err = fromArrays(a, nil); err != nil {
			return nil, fmt.Errorf("read trace %s: %w", path, err)
		}
	case ".csv":
		if t, err = readCSV(f); err != nil {
			return nil, fmt.Errorf("read trace %s: %w", path, err)
		}
	default:
		return nil, fmt.Errorf("read trace %s: extension %q: want .npz, .npy or .csv: %w", path, ext, ErrBadArgument)
	}
	return t, nil
}

// Check checks the trace's shape and that every id is -1 or in
// [0, numExperts).
func (t *Trace) Check(numExperts int) error {
	if t.TopK <= 0 || len(t.TopkIdx) != t.Tokens*t.TopK || len(t.TopkWeights) != len(t.TopkIdx) {
		return fmt.Errorf("trace: %d ids, %d weights for %d tokens x top-%d: %w", len(t.TopkIdx), len(t.TopkWeights), t.Tokens, t.TopK, ErrBadArgument)
	}
	return CheckRouting(t.TopkIdx, t.Tokens, t.TopK, numExperts)
}

// WriteCSV writes t as CSV with a header line.
func (t *Trace) WriteCSV(w io.Writer) error {
	bw := bufio.NewWriter(w)
	for k := range t.TopK {
		fmt.Fprintf(bw, "topk_idx_%d,", k)
	}
	for k := range t.TopK {
		sep := ","
		if k == t.TopK-1 {
			sep = "\n"
		}
		fmt.Fprintf(bw, "topk_weights_%d%s", k, sep)
	}
	var line []byte
	for i := range t.Tokens {
		line = line[:0]
		for _, e := range t.TopkIdx[i*t.TopK : (i+1)*t.TopK] {
			line = strconv.AppendInt(line, int64(e), 10)
			line = append(line, ',')
		}
		for k, v := range t.TopkWeights[i*t.TopK : (i+1)*t.TopK] {
			line = strconv.AppendFloat(line, float64(v), 'g', -1, 32)
			if k < t.TopK-1 {
				line = append(line, ',')
			}
		}
		line = append(line, '\n')
		bw.Write(line)
	}
	return bw.Flush()
}

// WriteNPZ writes t as np.savez would: topk_idx.npy (int64) and
// topk_weights.npy (float32), stored uncompressed.
func (t *Trace) WriteNPZ(w io.Writer) error {
	z := zip.NewWriter(w)
	idx := make([]byte, 8*len(t.TopkIdx))
	for i, e := range t.TopkIdx {
		binary.LittleEndian.PutUint64(idx[8*i:], uint64(int64(e)))
	}
	wts := make([]byte, 4*len(t.TopkWeights))
	for i, v := range t.TopkWeights {
		binary.LittleEndian.PutUint32(wts[4*i:], math.Float32bits(v))
	}
	for _, a := range []struct {
		name, descr string
		data        []byte
	}{{"topk_idx.npy", "<i8", idx}, {"topk_weights.npy", "<f4", wts}} {
		f, err := z.CreateHeader(&zip.FileHeader{Name: a.name, Method: zip.Store})
		if err != nil {
			return err
		}
		if _, err := f.Write(npyHeader(a.descr, t.Tokens, t.TopK)); err != nil {
			return err
		}
		if _, err := f.Write(a.data); err != nil {
			return err
		}
	}
	return z.Close()
}

// npyHeader is a version 1.0 .npy header for a C-order 2-D array.
func npyHeader(descr string, rows, cols int) []byte {
	dict := fmt.Sprintf("{'descr': '%s', 'fortran_order': False, 'shape': (%d, %d), }", descr, rows, cols)
	// magic (6) + version (2) + length (2) + dict + padding + '\n', a
	// multiple of 64.
	total := (10 + len(dict) + 1 + 63) &^ 63
	pad := total - 10 - len(dict) - 1
	var b bytes.Buffer
	b.WriteString("\x93NUMPY\x01\x00")
	binary.Write(&b, binary.LittleEndian, uint16(len(dict)+pad+1))
	b.WriteString(dict)
	b.WriteString(strings.Repeat(" ", pad))
	b.WriteByte('\n')
	return b.Bytes()
}

// array is a 2-D numeric array read from .npy, as float64 (exact for the
// int32 ids and float32 weights it carries; int64 ids beyond 2^53 are not
// expert ids anyway).
type array struct {
	rows, cols int
	v          []float64
}

var (
	reDescr   = regexp.MustCompile(`'descr':\s*'([<>|=]?)([a-z])(\d+)'`)
	reFortran = regexp.MustCompile(`'fortran_order':\s*(True|False)`)
	reShape   = regexp.MustCompile(`'shape':\s*\(\s*(\d+)\s*,\s*(\d+)\s*,?\s*\)`)
)

// readNPY reads a 2-D .npy array of little-endian (or byte-sized) int or
// float elements (the NumPy format, versions 1.0 to 3.0).
func readNPY(r io.Reader) (array, error) {
	var a array
	var pre [8]byte
	if _, err := io.ReadFull(r, pre[:]); err != nil || string(pre[:6]) != "\x93NUMPY" {
		return a, fmt.Errorf("not a .npy array: %w", ErrBadArgument)
	}
	var hl int
	switch pre[6] {
	case 1:
		var b [2]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return a, fmt.Errorf("npy header: %w", err)
		}
		hl = int(binary.LittleEndian.Uint16(b[:]))
	case 2, 3:
		var b [4]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return a, fmt.Errorf("npy header: %w", err)
		}
		hl = int(binary.LittleEndian.Uint32(b[:]))
	default:
		return a, fmt.Errorf("npy version %d: %w", pre[6], ErrBadArgument)
	}
	if hl > 1<<20 {
		return a, fmt.Errorf("npy header of %d bytes: %w", hl, ErrBadArgument)
	}
	hdr := make([]byte, hl)
	if _, err := io.ReadFull(r, hdr); err != nil {
		return a, fmt.Errorf("npy header: %w", err)
	}
	d, fo, sh := reDescr.FindSubmatch(hdr), reFortran.FindSubmatch(hdr), reShape.FindSubmatch(hdr)
	if d == nil || fo == nil || sh == nil {
		return a, fmt.Errorf("npy header %q: want a 2-D array of ints or floats: %w", hdr, ErrBadArgument)
	}
	order, kind := string(d[1]), string(d[2])
	size, _ := strconv.Atoi(string(d[3]))
	a.rows, _ = strconv.Atoi(string(sh[1]))
	a.cols, _ = strconv.Atoi(string(sh[2]))
	if order == ">" && size > 1 {
		return a, fmt.Errorf("npy big-endian %s%d: %w", kind, size, ErrBadArgument)
	}
	if a.rows < 0 || a.cols <= 0 || a.rows > 1<<28/a.cols {
		return a, fmt.Errorf("npy shape (%d, %d): %w", a.rows, a.cols, ErrBadArgument)
	}
	get, err := npyDecoder(kind, size)
	if err != nil {
		return a, err
	}
	n := a.rows * a.cols
	raw := make([]byte, n*size)
	if _, err := io.ReadFull(r, raw); err != nil {
		return a, fmt.Errorf("npy data (%d bytes): %w", len(raw), err)
	}
	a.v = make([]float64, n)
	for i := range n {
		v := get(raw[i*size:])
		if string(fo[1]) == "True" { // column-major: element i is (i%rows, i/rows)
			a.v[(i%a.rows)*a.cols+i/a.rows] = v
		} else {
			a.v[i] = v
		}
	}
	return a, nil
}

// npyDecoder returns the decoder of one little-endian element of a kind
// ('i', 'u', 'f') and size.
func npyDecoder(kind string, size int) (func([]byte) float64, error) {
	le := binary.LittleEndian
	switch kind + strconv.Itoa(size) {
	case "i1":
		return func(b []byte) float64 { return float64(int8(b[0])) }, nil
	case "i2":
		return func(b []byte) float64 { return float64(int16(le.Uint16(b))) }, nil
	case "i4":
		return func(b []byte) float64 { return float64(int32(le.Uint32(b))) }, nil
	case "i8":
		return func(b []byte) float64 { return float64(int64(le.Uint64(b))) }, nil
	case "u1":
		return func(b []byte) float64 { return float64(b[0]) }, nil
	case "u2":
		return func(b []byte) float64 { return float64(le.Uint16(b)) }, nil
	case "u4":
		return func(b []byte) float64 { return float64(le.Uint32(b)) }, nil
	case "f4":
		return func(b []byte) float64 { return float64(math.Float32frombits(le.Uint32(b))) }, nil
	case "f8":
		return func(b []byte) float64 { return math.Float64frombits(le.Uint64(b)) }, nil
	}
	return nil, fmt.Errorf("npy element type %s%d: want int, uint or float: %w", kind, size, ErrBadArgument)
}

// readNPZ reads topk_idx (and topk_weights if present) from a .npz archive.
func readNPZ(r io.ReaderAt, size int64) (*Trace, error) {
	z, err := zip.NewReader(r, size)
	if err != nil {
		return nil, fmt.Errorf("npz: %w: %w", err, ErrBadArgument)
	}
	read := func(name string) (*array, error) {
		f, err := z.Open(name + ".npy")
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		defer f.Close()
		a, err := readNPY(bufio.NewReader(f))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		return &a, nil
	}
	idx, err := read("topk_idx")
	if err != nil {
		return nil, err
	}
	if idx == nil {
		return nil, fmt.Errorf("npz without topk_idx: %w", ErrBadArgument)
	}
	w, err := read("topk_weights")
	if err != nil {
		return nil, err
	}
	return fromArrays(*idx, w)
}

// fromArrays makes a Trace of ids and weights (nil: equal weights over
// each token's kept slots).
func fromArrays(idx array, w *array) (*Trace, error) {
	t := &Trace{Tokens: idx.rows, TopK: idx.cols, TopkIdx: make([]int32, len(idx.v)), TopkWeights: make([]float32, len(idx.v))}
	for i, v := range idx.v {
		if v != math.Trunc(v) || v < -1 || v > math.MaxInt32 {
			return nil, fmt.Errorf("topk_idx[%d][%d] = %g: want an expert id or -1: %w", i/t.TopK, i%t.TopK, v, ErrBadArgument)
		}
		t.TopkIdx[i] = int32(v)
	}
	if w == nil {
		equalWeights(t)
		return t, nil
	}
	if w.rows != idx.rows || w.cols != idx.cols {
		return nil, fmt.Errorf("topk_weights of shape (%d, %d), topk_idx (%d, %d): %w", w.rows, w.cols, idx.rows, idx.cols, ErrBadArgument)
	}
	for i, v := range w.v {
		t.TopkWeights[i] = float32(v)
	}
	return t, nil
}

// equalWeights gives each token's kept slots equal weights summing to 1.
func equalWeights(t *Trace) {
	for i := range t.Tokens {
		kept := 0
		for _, e := range t.TopkIdx[i*t.TopK : (i+1)*t.TopK] {
			if e >= 0 {
				kept++
			}
		}
		for k := range t.TopK {
			if t.TopkIdx[i*t.TopK+k] >= 0 {
				t.TopkWeights[i*t.TopK+k] = 1 / float32(kept)
			}
		}
	}
}

// readCSV reads the CSV format of Trace.
func readCSV(r io.Reader) (*Trace, error) {
	t := &Trace{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for line := 1; sc.Scan(); line++ {
		s := strings.TrimSpace(sc.Text())
		if s == "" || s[0] == '#' {
			continue
		}
		fields := strings.Split(s, ",")
		if _, err := strconv.ParseFloat(strings.TrimSpace(fields[0]), 64); err != nil && t.Tokens == 0 && t.TopK == 0 {
			continue // header
		}
		if len(fields)%2 != 0 || (t.TopK != 0 && len(fields) != 2*t.TopK) {
			return nil, fmt.Errorf("line %d: %d fields: want topk ids then topk weights (%d each so far): %w", line, len(fields), t.TopK, ErrBadArgument)
		}
		k := len(fields) / 2
		t.TopK = k
		for i, f := range fields {
			f = strings.TrimSpace(f)
			if i < k {
				v, err := strconv.ParseInt(f, 10, 32)
				if err != nil || v < -1 {
					return nil, fmt.Errorf("line %d: expert id %q: %w", line, f, ErrBadArgument)
				}
				t.TopkIdx = append(t.TopkIdx, int32(v))
			} else {
				v, err := strconv.ParseFloat(f, 32)
				if err != nil {
					return nil, fmt.Errorf("line %d: weight %q: %w", line, f, ErrBadArgument)
				}
				t.TopkWeights = append(t.TopkWeights, float32(v))
			}
		}
		t.Tokens++
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if t.TopK == 0 {
		return nil, fmt.Errorf("no tokens: %w", ErrBadArgument)
	}
	return t, nil
}
