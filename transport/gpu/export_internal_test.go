package gpu

// SetVASignalsOnly makes New take the proxy path's VA-signal fallback
// (device signals on a window of their own) whatever gin's signal words
// are, for the external tests and benchmarks that compare the two. Set it
// before New, not concurrently with it.
func SetVASignalsOnly(on bool) { vaSignalsOnly = on }
