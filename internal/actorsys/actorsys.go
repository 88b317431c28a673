// Package actorsys makes the protoactor-go actor systems rdmactor runs its
// own actors on (endpoints, bootstrap), with protoactor's logging turned
// down to warnings unless RDMACTOR_DEBUG is set.
//
// It may hold only actor-system construction; actors belong to their layers.
package actorsys

import (
	"io"
	"log/slog"
	"os"

	"github.com/asynkron/protoactor-go/actor"
)

// Logger is the slog logger rdmactor gives protoactor-go: debug level when
// RDMACTOR_DEBUG is set, otherwise warnings and errors only, to stderr.
func Logger(*actor.ActorSystem) *slog.Logger {
	level := slog.LevelWarn
	var w io.Writer = os.Stderr
	if os.Getenv("RDMACTOR_DEBUG") != "" {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
}

// New returns an actor system with rdmactor's logger and opts (a later
// WithLoggerFactory replaces the logger), whose process registry is sized
// for the few actors a rank runs (compactRegistry).
func New(opts ...actor.ConfigOption) *actor.ActorSystem {
	sys := actor.NewActorSystem(append([]actor.ConfigOption{actor.WithLoggerFactory(Logger)}, opts...)...)
	compactRegistry(sys)
	return sys
}
