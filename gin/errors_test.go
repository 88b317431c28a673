package gin_test

import (
	"errors"
	"testing"

	"github.com/rdmactor/rdmactor/endpoint"
	"github.com/rdmactor/rdmactor/gin"
	"github.com/stretchr/testify/require"
)

// What the endpoint layer returns for a send queue that stayed full (its
// own test, TestBackpressureRingFull, makes one) matches gin's ErrRingFull
// and RingFullError, so layers above gin match it without importing
// endpoint; likewise the provider errors gin re-exports.
func TestErrorsMatchThroughGin(t *testing.T) {
	var err error = &endpoint.RingFullError{Peer: 1, Route: "data", Depth: 4}
	require.ErrorIs(t, err, gin.ErrRingFull)
	var rf *gin.RingFullError
	require.True(t, errors.As(err, &rf))
	require.Equal(t, 1, rf.Peer)

	err = &gin.UnsupportedError{Provider: "p", Feature: "f"}
	require.ErrorIs(t, err, gin.ErrNotSupported)
	err = &gin.PeerLostError{Rank: 3}
	require.ErrorIs(t, err, gin.ErrPeerLost)
}
