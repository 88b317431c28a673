package main

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rdmactor/rdmactor/actor"
)

// The word count with ranks as goroutines: run returns an error when the
// distributed count differs from rank 0's own.
func TestWordCountLocal(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	nodes, err := actor.StartLocal(ctx, 3, actor.Config{})
	require.NoError(t, err)
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for r, n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[r] = run(ctx, n, options{workers: 2, top: 5, chunk: 1 << 10, repeat: 20})
		}()
	}
	wg.Wait()
	for r, err := range errs {
		assert.NoError(t, err, "rank %d", r)
	}
}

func TestCutAndWords(t *testing.T) {
	text := "one two\nthree four five\nsix\n"
	assert.Equal(t, []string{"one two\n", "three four five\n", "six\n"}, cut(text, 16))
	assert.Equal(t, []string{"one ", "two\n", "thre", "e ", "four", " ", "five", "\n", "six\n"}, cut(text, 4))
	assert.Equal(t, text, join(cut(text, 64)))
	assert.Equal(t, []string{"don't", "stop", "it's", "here"}, words("Don't STOP--it's 'here'!"))
}

func join(s []string) string {
	var out string
	for _, x := range s {
		out += x
	}
	return out
}
