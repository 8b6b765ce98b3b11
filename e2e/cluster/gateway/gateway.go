// Package gateway stands in for the Envoy proxy that sits in front of the
// Gateway API Inference Extension's endpoint picker (EPP). For each HTTP
// request it does what Envoy does in the extension's reference
// configuration (test/testdata/envoy.yaml:96-112 at v1.5.0): it opens one
// envoy.service.ext_proc.v3.ExternalProcessor/Process stream to the picker,
// streams the request through it in FULL_DUPLEX_STREAMED mode, forwards the
// request to the endpoint the picker chose, and streams the response back
// through the picker to the client.
//
// The protocol facts, with their upstream file:line, are in gie.md §2
// (the research notes behind this package). Files in this package:
// request.go is the request phase, response.go the response phase, and
// headers.go turns HTTP headers into ext_proc header maps and applies the
// picker's header mutations.
package gateway

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
)

// DefaultTimeout bounds one request, picker and upstream included, when
// Gateway.Timeout is zero.
const DefaultTimeout = 2 * time.Minute

// Gateway is an http.Handler that routes each request through the picker.
// Set its fields before the first request and do not copy it.
type Gateway struct {
	// Picker is the picker's ext_proc address, host:port (the EPP's
	// --grpc-port, 9002 by default: options.go:31,95,126).
	Picker string
	// Plaintext dials the picker without TLS, for a picker run with
	// --secure-serving=false. By default the picker serves TLS with a
	// self-signed certificate (options.go:115,188; runserver.go:145-179),
	// so the gateway dials TLS (ALPN h2) without verifying it.
	Plaintext bool
	// Client forwards requests to the chosen endpoint. Nil means a client
	// that, like Envoy, neither follows redirects nor asks for compression
	// nor uses an HTTP proxy.
	Client *http.Client
	// Timeout bounds each request end to end; zero means DefaultTimeout.
	Timeout time.Duration
	// Metadata, if set, is sent as metadata_context on every message, as
	// Envoy does: the picker re-reads it from each message (server.go:210),
	// e.g. the envoy.lb.subset_hint namespace (gie.md §2).
	Metadata *corev3.Metadata
	// OnTrace, if set, is called by ServeHTTP once per request, after the
	// response has been written, with what happened to it.
	OnTrace func(Trace)

	mu   sync.Mutex
	conn *grpc.ClientConn
}

// Trace is what happened to one request.
type Trace struct {
	// Endpoint is where the request was forwarded: the first entry of the
	// picker's destination list. Empty if it went nowhere.
	Endpoint string
	// Endpoints is the picker's destination value as sent: host:port
	// entries joined by commas (director.go:324-335).
	Endpoints string
	// Status is the status the client got: the upstream's, the picker's
	// immediate response's, or 502 for a gateway error.
	Status int
	// Immediate tells that the picker answered with an immediate_response
	// (an error such as 503 or 429: error.go:62-98) instead of a route.
	Immediate bool
	// Stage is where the request failed, empty if it did not.
	Stage Stage
	// Err is the failure, nil if none. For ServeHTTP it also covers the
	// body's relay after the status was sent.
	Err error
}

// Stage names the step at which a request failed.
type Stage string

// The stages a gateway error names.
const (
	StageRequest  Stage = "reading the request failed"
	StagePicker   Stage = "picker failed"
	StageEndpoint Stage = "no endpoint"
	StageUpstream Stage = "upstream failed"
)

// Error is a gateway failure; ServeHTTP answers it with 502 and its text.
type Error struct {
	Stage Stage
	Err   error
}

func (e *Error) Error() string { return fmt.Sprintf("gateway: %s: %v", e.Stage, e.Err) }

func (e *Error) Unwrap() error { return e.Err }

func fail(stage Stage, format string, args ...any) *Error {
	return &Error{Stage: stage, Err: fmt.Errorf(format, args...)}
}

// ServeHTTP routes r through the picker and writes the response, flushing
// each chunk of an event stream as the picker hands it over.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	resp, tr, err := g.Do(r.Context(), r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		g.trace(tr)
		return
	}
	defer resp.Body.Close()
	for k, vs := range resp.Header {
		w.Header()[k] = vs
	}
	w.WriteHeader(resp.StatusCode)
	stream := strings.Contains(resp.Header.Get("Content-Type"), "text/event-stream")
	if err := copyBody(w, resp.Body, stream); err != nil {
		tr.Err = err
		var ge *Error
		if errors.As(err, &ge) {
			tr.Stage = ge.Stage
		}
		g.trace(tr)
		// The status is out: abort the connection so that the client sees
		// a broken body rather than a short one that looks complete.
		panic(http.ErrAbortHandler)
	}
	g.trace(tr)
}

func copyBody(w http.ResponseWriter, body io.Reader, flush bool) error {
	rc := http.NewResponseController(w)
	buf := make([]byte, chunkSize)
	for {
		n, err := body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return werr
			}
			if flush {
				if ferr := rc.Flush(); ferr != nil {
					return ferr
				}
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

func (g *Gateway) trace(tr Trace) {
	if g.OnTrace != nil {
		g.OnTrace(tr)
	}
}

// Do routes req through the picker and returns the response, whose body
// streams from the picker as the caller reads it; the caller must close
// it. Do consumes req.Body. A gateway failure is an *Error, and the Trace
// then tells how far the request got.
func (g *Gateway) Do(ctx context.Context, req *http.Request) (*http.Response, Trace, error) {
	timeout := g.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	resp, tr, err := g.do(ctx, cancel, req)
	if err != nil {
		cancel()
		tr.Status = http.StatusBadGateway
		tr.Err = err
		var ge *Error
		if errors.As(err, &ge) {
			tr.Stage = ge.Stage
		}
		return nil, tr, err
	}
	tr.Status = resp.StatusCode
	return resp, tr, nil
}

// do runs one request's exchange. The response body owns cancel.
func (g *Gateway) do(ctx context.Context, cancel context.CancelFunc, req *http.Request) (*http.Response, Trace, error) {
	var tr Trace
	body, err := readBody(req)
	if err != nil {
		return nil, tr, &Error{Stage: StageRequest, Err: err}
	}
	pc, err := g.picker()
	if err != nil {
		return nil, tr, &Error{Stage: StagePicker, Err: err}
	}
	stream, err := pc.Process(ctx)
	if err != nil {
		return nil, tr, fail(StagePicker, "opening the ext_proc stream: %w", err)
	}
	x := &exchange{stream: stream, meta: g.Metadata}

	header := cleanHeader(req.Header)
	ans, err := x.request(req, header, body)
	if err != nil {
		return nil, tr, err
	}
	if ans.immediate != nil {
		// The picker ends the stream after an immediate_response
		// (server.go:306-321); nothing goes upstream.
		tr.Immediate = true
		cancel()
		return immediateResponse(req, ans.immediate), tr, nil
	}
	tr.Endpoints = ans.destination()
	tr.Endpoint = firstEndpoint(tr.Endpoints)
	if tr.Endpoint == "" {
		return nil, tr, fail(StageEndpoint, "the picker's answer names no %s (header or %s metadata)", destinationKey, lbNamespace)
	}
	applyMutation(header, ans.mutation)
	up, err := g.forward(ctx, req, header, ans.body, tr.Endpoint)
	if err != nil {
		return nil, tr, &Error{Stage: StageUpstream, Err: err}
	}
	resp, immediate, err := x.respond(ctx, cancel, req, up)
	if err != nil {
		return nil, tr, err
	}
	tr.Immediate = immediate
	return resp, tr, nil
}

func readBody(req *http.Request) ([]byte, error) {
	if req.Body == nil {
		return nil, nil
	}
	defer req.Body.Close()
	return io.ReadAll(req.Body)
}

// picker returns a client on the gateway's one connection to the picker.
func (g *Gateway) picker() (extprocv3.ExternalProcessorClient, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.conn == nil {
		creds := insecure.NewCredentials()
		if !g.Plaintext {
			creds = credentials.NewTLS(&tls.Config{
				InsecureSkipVerify: true, // the picker's certificate is self-signed
				NextProtos:         []string{"h2"},
			})
		}
		conn, err := grpc.NewClient(g.Picker, grpc.WithTransportCredentials(creds))
		if err != nil {
			return nil, fmt.Errorf("dialing %s: %w", g.Picker, err)
		}
		g.conn = conn
	}
	return extprocv3.NewExternalProcessorClient(g.conn), nil
}

// Close closes the connection to the picker.
func (g *Gateway) Close() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.conn == nil {
		return nil
	}
	err := g.conn.Close()
	g.conn = nil
	return err
}
