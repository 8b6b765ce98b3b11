package gateway

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
)

// drainTimeout bounds the wait for the picker to end the stream once the
// gateway has half-closed it.
const drainTimeout = 5 * time.Second

var errClosed = errors.New("response body closed")

// respond runs the response phase: the upstream's status and headers go to
// the picker, its answer's mutation is applied, and the returned response's
// body streams the upstream body through the picker. It reports whether
// the picker replaced the response with an immediate_response.
func (x *exchange) respond(ctx context.Context, cancel context.CancelFunc, req *http.Request, up *http.Response) (*http.Response, bool, error) {
	header := cleanHeader(up.Header)
	// Like Envoy, mark the headers end_of_stream when no body follows.
	noBody := up.ContentLength == 0
	err := x.send(&extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseHeaders{
		ResponseHeaders: &extprocv3.HttpHeaders{Headers: responseHeaderMap(up.StatusCode, header), EndOfStream: noBody},
	}})
	if err != nil && err != io.EOF {
		up.Body.Close()
		return nil, false, fail(StagePicker, "sending the response headers: %w", err)
	}
	msg, err := x.recv("the response headers")
	if err != nil {
		up.Body.Close()
		return nil, false, err
	}
	if imm := msg.GetImmediateResponse(); imm != nil {
		// A local reply replaces the upstream's response.
		up.Body.Close()
		cancel()
		return immediateResponse(req, imm), true, nil
	}
	rh := msg.GetResponseHeaders()
	if rh == nil {
		up.Body.Close()
		return nil, false, fail(StagePicker, "got %T, want the response headers' answer", msg.GetResponse())
	}
	// The picker echoes the headers and adds its own (response.go:76-135).
	applyMutation(header, rh.GetResponse().GetHeaderMutation())

	b := &bodyRelay{x: x, ctx: ctx, cancel: cancel, sendDone: make(chan struct{})}
	if noBody {
		up.Body.Close()
		close(b.sendDone)
		b.done = true
	} else {
		go b.pump(up.Body)
	}
	return &http.Response{
		Status:        fmt.Sprintf("%d %s", up.StatusCode, http.StatusText(up.StatusCode)),
		StatusCode:    up.StatusCode,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        header,
		Body:          b,
		ContentLength: -1, // the picker may rewrite the body (server.go:354-368)
		Request:       req,
	}, false, nil
}

// bodyRelay is the client's response body. A goroutine (pump) streams the
// upstream body to the picker while Read hands out the picker's answers.
type bodyRelay struct {
	x      *exchange
	ctx    context.Context
	cancel context.CancelFunc

	sendDone chan struct{} // closed when pump has returned

	pending []byte // the picker's chunk not yet read
	done    bool   // the picker sent the body's end_of_stream
	err     error  // what Read returns once pending is empty

	mu        sync.Mutex
	cause     error // why the exchange was aborted, first reason wins
	closeOnce sync.Once
}

// pump sends the upstream body as response_body messages, each chunk as it
// arrives, end_of_stream on the last. It runs beside Read because the
// picker answers an event stream's chunks as they come (server.go:278-287):
// sending everything before reading could stall the stream's flow control.
func (b *bodyRelay) pump(body io.ReadCloser) {
	defer close(b.sendDone)
	defer body.Close()
	buf := make([]byte, chunkSize)
	for {
		n, err := body.Read(buf)
		eof := err == io.EOF
		if err != nil && !eof {
			b.abort(fail(StageUpstream, "reading the response body: %w", err))
			return
		}
		if n > 0 || eof {
			err := b.x.send(&extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseBody{
				ResponseBody: &extprocv3.HttpBody{Body: bytes.Clone(buf[:n]), EndOfStream: eof},
			}})
			if err == io.EOF {
				return // the picker ended the stream; Read's recv says why
			}
			if err != nil {
				b.abort(fail(StagePicker, "sending the response body: %w", err))
				return
			}
		}
		if eof {
			return
		}
	}
}

// Read returns the picker's body chunks: a non-streamed body comes after
// the upstream's end (server.go:288-292), an event stream chunk by chunk.
func (b *bodyRelay) Read(p []byte) (int, error) {
	for len(b.pending) == 0 {
		if b.err != nil {
			return 0, b.err
		}
		if b.done {
			b.finish()
			b.err = io.EOF
			continue
		}
		b.next()
	}
	n := copy(p, b.pending)
	b.pending = b.pending[n:]
	return n, nil
}

// next takes the picker's next answer.
func (b *bodyRelay) next() {
	msg, err := b.x.recv("the response body")
	switch {
	case err != nil:
	case msg.GetImmediateResponse() != nil:
		err = fail(StagePicker, "immediate_response (status %d) after the response headers were sent",
			msg.GetImmediateResponse().GetStatus().GetCode())
	default:
		sr := msg.GetResponseBody().GetResponse().GetBodyMutation().GetStreamedResponse()
		if sr == nil {
			err = fail(StagePicker, "got %T without a streamed_response, want the response body's answer", msg.GetResponse())
			break
		}
		b.pending = sr.GetBody()
		b.done = sr.GetEndOfStream()
		return
	}
	// If the upstream failed first, that is the cause; the picker's stream
	// only ended because of it.
	b.err = b.abort(err)
}

// abort ends the exchange and returns its first cause.
func (b *bodyRelay) abort(err error) error {
	b.mu.Lock()
	if b.cause == nil {
		b.cause = err
	}
	cause := b.cause
	b.mu.Unlock()
	b.cancel()
	return cause
}

// finish ends the stream once the picker has sent the body's end: Envoy
// half-closes it, and the picker takes that EOF as normal completion and
// runs its completion hooks (server.go:202-205).
func (b *bodyRelay) finish() {
	select {
	case <-b.sendDone:
	case <-b.ctx.Done():
	}
	if b.ctx.Err() == nil { // CloseSend must not run beside pump's Send
		b.x.stream.CloseSend()
	}
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		for {
			if _, err := b.x.stream.Recv(); err != nil {
				return
			}
		}
	}()
	select {
	case <-drained:
	case <-time.After(drainTimeout):
	}
	b.cancel()
}

// Close ends the exchange, read to the end or not.
func (b *bodyRelay) Close() error {
	b.closeOnce.Do(func() {
		b.abort(errClosed)
		<-b.sendDone
	})
	return nil
}
