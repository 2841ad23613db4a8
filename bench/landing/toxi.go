package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	toxiclient "github.com/Shopify/toxiproxy/v2/client"
	"github.com/gorilla/mux"
	"github.com/rs/zerolog"
)

// toxiAPI is a Toxiproxy API server in this process on 127.0.0.1:0 and a
// client of it (Toxiproxy's own Go client package), driven over HTTP as
// Toxiproxy's users drive it.
type toxiAPI struct {
	api    *toxiproxy.ApiServer
	srv    *http.Server
	served chan error
	client *toxiclient.Client
	http   *http.Transport // the client package's transport (http.DefaultTransport)
}

// startToxiproxy starts the API server. Toxiproxy's own ApiServer.Listen
// takes a fixed port and cannot be stopped, so the same handlers are routed
// here on a listener of our own, which Close shuts down.
func startToxiproxy() (*toxiAPI, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("toxiproxy: %w", err)
	}
	t := &toxiAPI{
		api:    toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop()),
		served: make(chan error, 1),
	}
	s := t.api
	r := mux.NewRouter()
	r.HandleFunc("/reset", s.ResetState).Methods("POST")
	r.HandleFunc("/proxies", s.ProxyIndex).Methods("GET")
	r.HandleFunc("/proxies", s.ProxyCreate).Methods("POST")
	r.HandleFunc("/populate", s.Populate).Methods("POST")
	r.HandleFunc("/proxies/{proxy}", s.ProxyShow).Methods("GET")
	r.HandleFunc("/proxies/{proxy}", s.ProxyUpdate).Methods("POST")
	r.HandleFunc("/proxies/{proxy}", s.ProxyDelete).Methods("DELETE")
	r.HandleFunc("/proxies/{proxy}/toxics", s.ToxicIndex).Methods("GET")
	r.HandleFunc("/proxies/{proxy}/toxics", s.ToxicCreate).Methods("POST")
	r.HandleFunc("/proxies/{proxy}/toxics/{toxic}", s.ToxicShow).Methods("GET")
	r.HandleFunc("/proxies/{proxy}/toxics/{toxic}", s.ToxicUpdate).Methods("POST")
	r.HandleFunc("/proxies/{proxy}/toxics/{toxic}", s.ToxicDelete).Methods("DELETE")
	r.HandleFunc("/version", s.Version).Methods("GET")
	t.srv = &http.Server{Handler: r, ReadHeaderTimeout: 10 * time.Second}
	go func() { t.served <- t.srv.Serve(ln) }()
	t.client = toxiclient.NewClient(ln.Addr().String())
	t.http, _ = http.DefaultTransport.(*http.Transport)
	return t, nil
}

// proxy creates a proxy to upstream on 127.0.0.1:0.
func (t *toxiAPI) proxy(name, upstream string) (*toxiclient.Proxy, error) {
	p, err := t.client.CreateProxy(name, "127.0.0.1:0", upstream)
	if err != nil {
		return nil, fmt.Errorf("toxiproxy: create proxy: %w", err)
	}
	return p, nil
}

// Close deletes every proxy (closing their connections) and stops the API
// server.
func (t *toxiAPI) Close() error {
	var errs []error
	if err := t.api.Collection.Clear(); err != nil {
		errs = append(errs, fmt.Errorf("toxiproxy: %w", err))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := t.srv.Shutdown(ctx); err != nil {
		errs = append(errs, fmt.Errorf("toxiproxy: %w", err))
	}
	if err := <-t.served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		errs = append(errs, fmt.Errorf("toxiproxy: %w", err))
	}
	if t.http != nil {
		t.http.CloseIdleConnections()
	}
	return errors.Join(errs...)
}
