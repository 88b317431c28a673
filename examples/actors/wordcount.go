package main

import (
	"hash/fnv"
	"sort"
	"strings"
	"unicode"

	"github.com/rdmactor/rdmactor/actor"
)

// Messages of the job. They cross ranks, so they are registered (init).
type (
	// Chunk is a piece of the text for a worker to count.
	Chunk struct {
		Seq  int
		Text string
	}
	// Partial is what one worker counted in one chunk, for the words that
	// the receiving reducer owns (word hash mod ranks). Every worker sends
	// one to every reducer per chunk, empty or not, so a reducer knows when
	// it has seen every chunk.
	Partial struct {
		Chunk  int
		Counts map[string]int
	}
	// Collect asks a reducer for its result once it has seen Chunks
	// partials; answered with Result.
	Collect struct {
		Chunks int
		Top    int
	}
	// Result is a reducer's share of the count: totals over its words and
	// its Top most frequent words. Words are partitioned, so the global top
	// list is the merge of the reducers' top lists.
	Result struct {
		Words, Distinct int
		Top             []WordCount
	}
	// WordCount is a word and its count.
	WordCount struct {
		Word  string
		Count int
	}
)

func init() {
	actor.RegisterMessage[Chunk]()
	actor.RegisterMessage[Partial]()
	actor.RegisterMessage[Collect]()
	actor.RegisterMessage[Result]()
}

// words splits text into lower-case words: runs of letters, with inner
// apostrophes ("don't").
func words(text string) []string {
	f := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && r != '\'' })
	out := f[:0]
	for _, w := range f {
		if w = strings.Trim(w, "'"); w != "" {
			out = append(out, w)
		}
	}
	return out
}

// owner is the rank whose reducer counts word.
func owner(word string, ranks int) int {
	h := fnv.New32a()
	h.Write([]byte(word))
	return int(h.Sum32() % uint32(ranks))
}

// worker counts the words of each chunk and sends every reducer its part.
func worker(node *actor.Node) actor.ReceiveFunc {
	return func(c actor.Context) {
		ch, ok := c.Message().(*Chunk)
		if !ok {
			return
		}
		parts := make([]map[string]int, node.Size())
		for r := range parts {
			parts[r] = map[string]int{}
		}
		for _, w := range words(ch.Text) {
			parts[owner(w, node.Size())][w]++
		}
		for r, counts := range parts {
			c.Send(node.PID(r, "reducer"), &Partial{Chunk: ch.Seq, Counts: counts})
		}
	}
}

// reducer sums the partials of the words it owns and answers Collect once
// it has seen every chunk.
type reducer struct {
	counts  map[string]int
	seen    int
	collect *Collect
	asker   *actor.PID
}

func (r *reducer) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case *actor.Started:
		r.counts = map[string]int{}
	case *Partial:
		for w, n := range m.Counts {
			r.counts[w] += n
		}
		r.seen++
	case *Collect:
		r.collect, r.asker = m, c.Sender()
	}
	if r.collect != nil && r.seen == r.collect.Chunks {
		c.Send(r.asker, r.result(r.collect.Top))
		r.collect = nil
	}
}

func (r *reducer) result(top int) *Result {
	res := &Result{Distinct: len(r.counts)}
	for w, n := range r.counts {
		res.Words += n
		res.Top = append(res.Top, WordCount{w, n})
	}
	sortCounts(res.Top)
	if len(res.Top) > top {
		res.Top = res.Top[:top]
	}
	return res
}

// sortCounts orders by count, then word.
func sortCounts(s []WordCount) {
	sort.Slice(s, func(i, j int) bool {
		if s[i].Count != s[j].Count {
			return s[i].Count > s[j].Count
		}
		return s[i].Word < s[j].Word
	})
}
