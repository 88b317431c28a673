package remote

import (
	"log/slog"
	"os"

	"github.com/asynkron/protoactor-go/actor"
)

// newLogger is protoactor-go's logger: discarded, or debug level on stderr
// when RDMACTOR_DEBUG is set.
func newLogger(*actor.ActorSystem) *slog.Logger {
	if os.Getenv("RDMACTOR_DEBUG") == "" {
		return slog.New(slog.DiscardHandler)
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
}
