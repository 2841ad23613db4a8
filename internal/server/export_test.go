package server

// WithCommandNamespaces makes a server put each command in namespaces of
// its own through the set-up step, as a server that is not root does, even
// when it could give each case a namespace thread.
func WithCommandNamespaces(cfg Config) Config {
	cfg.commandNamespaces = true
	return cfg
}
