package gateway

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/protobuf/types/known/structpb"
)

const (
	// chunkSize splits bodies into ext_proc body messages. Envoy streams at
	// most 64 KiB per chunk; the picker stays under it with 62000-byte
	// answers for that reason (pkg/common/envoy/chunking.go:24-26).
	chunkSize = 64 << 10
	// destinationKey names the picked endpoint, as a request header and as
	// a key of the envoy.lb dynamic metadata (request.go:102-111, 151-168;
	// metadata/consts.go:26-28). Envoy's ORIGINAL_DST cluster routes on the
	// header (test/testdata/envoy.yaml:151-162).
	destinationKey = "x-gateway-destination-endpoint"
	lbNamespace    = "envoy.lb"
)

// exchange is one request's ext_proc stream.
type exchange struct {
	stream extprocv3.ExternalProcessor_ProcessClient
	meta   *corev3.Metadata
}

func (x *exchange) send(r *extprocv3.ProcessingRequest) error {
	r.MetadataContext = x.meta
	return x.stream.Send(r)
}

// recv reads the picker's next answer; what says what the gateway waits
// for, so that a stream the picker ends early is reported, not waited on.
func (x *exchange) recv(what string) (*extprocv3.ProcessingResponse, error) {
	msg, err := x.stream.Recv()
	if err == io.EOF {
		return nil, fail(StagePicker, "the picker closed the stream before answering %s", what)
	}
	if err != nil {
		return nil, fail(StagePicker, "waiting for the answer to %s: %w", what, err)
	}
	return msg, nil
}

// requestAnswer is the picker's verdict on a request: either an immediate
// response, or a header mutation with the destination and the body to
// forward.
type requestAnswer struct {
	immediate *extprocv3.ImmediateResponse
	mutation  *extprocv3.HeaderMutation
	metadata  *structpb.Struct
	body      []byte
}

// request runs the request phase.
func (x *exchange) request(req *http.Request, header http.Header, body []byte) (*requestAnswer, error) {
	// A send fails with io.EOF once the picker has ended the stream, which
	// it does after an immediate_response; the next recv says why.
	if err := x.sendRequest(req, header, body); err != nil && err != io.EOF {
		return nil, fail(StagePicker, "sending the request: %w", err)
	}

	// The picker answers the headers only once it has the whole body: it
	// schedules on the body's end_of_stream (server.go:228-256). A request
	// without a body is answered at once, with a random endpoint
	// (request.go:41-53).
	msg, err := x.recv("the request headers")
	if err != nil {
		return nil, err
	}
	ans := &requestAnswer{}
	if imm := msg.GetImmediateResponse(); imm != nil {
		ans.immediate = imm
		return ans, nil
	}
	rh := msg.GetRequestHeaders()
	if rh == nil {
		return nil, fail(StagePicker, "got %T, want the request headers' answer", msg.GetResponse())
	}
	ans.mutation = rh.GetResponse().GetHeaderMutation()
	ans.metadata = msg.GetDynamicMetadata()
	if len(body) == 0 {
		return ans, nil
	}

	// Then the body to forward, possibly rewritten (director.go:257-267),
	// in streamed_response chunks until end_of_stream (server.go:372-397;
	// chunking.go:31-74). FULL_DUPLEX_STREAMED allows no other body answer.
	for {
		msg, err := x.recv("the request body")
		if err != nil {
			return nil, err
		}
		if imm := msg.GetImmediateResponse(); imm != nil {
			ans.immediate = imm
			return ans, nil
		}
		sr := msg.GetRequestBody().GetResponse().GetBodyMutation().GetStreamedResponse()
		if sr == nil {
			return nil, fail(StagePicker, "got %T without a streamed_response, want the request body's answer", msg.GetResponse())
		}
		ans.body = append(ans.body, sr.GetBody()...)
		if sr.GetEndOfStream() {
			return ans, nil
		}
	}
}

// sendRequest sends the request as Envoy does: request_headers, with
// end_of_stream only when there is no body, then the body in request_body
// messages, end_of_stream on the last.
func (x *exchange) sendRequest(req *http.Request, header http.Header, body []byte) error {
	hm := requestHeaderMap(req, header, len(body))
	err := x.send(&extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestHeaders{
		RequestHeaders: &extprocv3.HttpHeaders{Headers: hm, EndOfStream: len(body) == 0},
	}})
	if err != nil {
		return err
	}
	for off := 0; off < len(body); off += chunkSize {
		end := min(off+chunkSize, len(body))
		err := x.send(&extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestBody{
			RequestBody: &extprocv3.HttpBody{Body: body[off:end], EndOfStream: end == len(body)},
		}})
		if err != nil {
			return err
		}
	}
	return nil
}

// destination is the picker's endpoint list: the header Envoy routes on,
// else the envoy.lb metadata, which carries the same string
// (request.go:75-99, 151-168).
func (a *requestAnswer) destination() string {
	for _, o := range a.mutation.GetSetHeaders() {
		if strings.EqualFold(o.GetHeader().GetKey(), destinationKey) {
			return headerValue(o.GetHeader())
		}
	}
	lb := a.metadata.GetFields()[lbNamespace].GetStructValue()
	return lb.GetFields()[destinationKey].GetStringValue()
}

// firstEndpoint picks the first of a comma-separated list: the protocol
// says the proxy uses the first valid one and goes down the list only on
// retries (docs/proposals/004-endpoint-picker-protocol/README.md:71).
func firstEndpoint(list string) string {
	first, _, _ := strings.Cut(list, ",")
	return strings.TrimSpace(first)
}

// forward sends the request to the endpoint over plain HTTP, as Envoy's
// ORIGINAL_DST cluster does, keeping the client's Host (:authority).
func (g *Gateway) forward(ctx context.Context, req *http.Request, header http.Header, body []byte, endpoint string) (*http.Response, error) {
	up, err := http.NewRequestWithContext(ctx, req.Method, "http://"+endpoint+requestURI(req), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	up.Header = header
	up.Host = authority(req)
	client := g.Client
	if client == nil {
		client = defaultClient
	}
	return client.Do(up)
}

var defaultClient = &http.Client{
	Transport: &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second}).DialContext,
		DisableCompression:  true, // pass bodies through as they are
		MaxIdleConnsPerHost: 16,
	},
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

func requestURI(req *http.Request) string { return req.URL.RequestURI() }

func authority(req *http.Request) string {
	if req.Host != "" {
		return req.Host
	}
	return req.URL.Host
}

// immediateResponse is the client's response to the picker's
// immediate_response. Like Envoy's ext_proc filter (sendImmediateResponse)
// it answers 200 for a missing or invalid (< 200) status, and like any
// Envoy local reply it labels a non-empty body text/plain.
func immediateResponse(req *http.Request, imm *extprocv3.ImmediateResponse) *http.Response {
	code := int(imm.GetStatus().GetCode())
	if code < 200 {
		code = http.StatusOK
	}
	header := http.Header{}
	applyMutation(header, imm.GetHeaders())
	body := imm.GetBody()
	if len(body) > 0 && header.Get("Content-Type") == "" {
		header.Set("Content-Type", "text/plain")
	}
	return &http.Response{
		Status:        fmt.Sprintf("%d %s", code, http.StatusText(code)),
		StatusCode:    code,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        header,
		Body:          io.NopCloser(bytes.NewReader(body)),
		ContentLength: int64(len(body)),
		Request:       req,
	}
}
