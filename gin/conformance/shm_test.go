package conformance_test

import (
	"context"
	"testing"

	"github.com/rdmactor/rdmactor/gin"
	"github.com/rdmactor/rdmactor/gin/conformance"
	"github.com/stretchr/testify/require"
)

func TestShm(t *testing.T) {
	conformance.Run(t, func(t *testing.T, n int, cfg gin.Config) []*gin.Comm {
		cfg.Transport = "shm"
		comms, err := gin.NewLocal(context.Background(), n, cfg)
		require.NoError(t, err)
		return comms
	})
}
