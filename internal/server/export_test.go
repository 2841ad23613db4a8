package server

// OnLossSaid has f called right after each connection's TransportLost event
// left, with whether the connection counted as lost by then; the returned
// func stops it.
func OnLossSaid(f func(lost bool)) (stop func()) {
	testHookLossSaid.Store(&f)
	return func() { testHookLossSaid.Store(nil) }
}

// WithCommandNamespaces makes a server put each command in namespaces of
// its own through the set-up step, as a server that is not root does, even
// when it could give each case a namespace thread.
func WithCommandNamespaces(cfg Config) Config {
	cfg.commandNamespaces = true
	return cfg
}
